"""The package itself: public names, stubs that match them, docstrings, the build-tree layout."""
import ast
import os

import numpy as np

import minifloat as mf

PKG = os.path.dirname(mf.__file__)


def stub_names():
    with open(os.path.join(PKG, "__init__.pyi")) as f:
        tree = ast.parse(f.read())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_every_public_name_has_a_stub():
    missing = [n for n in mf.__all__ if n not in stub_names()]
    assert not missing, missing
    for n in mf.__all__:
        assert hasattr(mf, n), n


def test_public_callables_have_docstrings():
    for n in mf.__all__:
        obj = getattr(mf, n)
        if callable(obj) and not isinstance(obj, type(np.float16)):
            assert obj.__doc__ and len(obj.__doc__) > 20, n


def test_package_layout():
    files = set(os.listdir(PKG))
    assert {"__init__.py", "__init__.pyi", "_finfo.py", "py.typed"} <= files
    assert any(f.startswith("_minifloat.") and f.endswith(".so") for f in files)
    assert mf.__version__.count(".") == 2
    assert set(mf.formats) == {"hifloat8", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float6_e3m2fn",
                               "float6_e2m3fn", "float4_e2m1fn", "bfloat16", "float16", "float8_e4m3fnuz",
                               "float8_e5m2fnuz", "float8_e4m3b11fnuz", "float8_e3m4", "float8_e4m3"}
    assert mf.simd_isa() in mf.available_isas()
    mf.set_num_threads(1)
    assert mf.get_num_threads() == 1
    mf.set_num_threads(0)
    assert mf.get_num_threads() >= 1


def test_readme_example():
    """The five lines of the README's Python section."""
    x = np.random.default_rng(0).standard_normal((128, 256)).astype(np.float32)
    y = x.astype(mf.float8_e4m3fn)                                   # numpy dtype, ml_dtypes-compatible
    s = mf.cast(x, "hifloat8", round="stochastic", overflow="saturate", seed=1)
    q = mf.quantize(x, "mxfp8_e4m3")                                 # codes, E8M0 scales
    c = mf.gemm(q, mf.quantize(x, "mxfp8_e4m3"), order="exact")      # x @ x.T on the quantized values
    assert y.dtype == np.dtype("float8_e4m3fn") and s.dtype == mf.hifloat8
    assert c.shape == (128, 128) and mf.sqnr(x, q) > 30


def test_install_rule(tmp_path):
    """`cmake --install` of the minifloat_python component gives an importable package."""
    import subprocess
    import sys

    build = os.environ.get("MINIFLOAT_BUILD_DIR")
    if not build:
        import pytest

        pytest.skip("MINIFLOAT_BUILD_DIR not given; ctest sets it")
    subprocess.run(["cmake", "--install", build, "--prefix", str(tmp_path), "--component", "minifloat_python"],
                   check=True, stdout=subprocess.DEVNULL)
    init = list(tmp_path.rglob("minifloat/__init__.py"))
    assert len(init) == 1
    site = str(init[0].parent.parent)
    env = dict(os.environ, PYTHONPATH=site)
    out = subprocess.run([sys.executable, "-c", "import minifloat, numpy as np; print(minifloat.__file__);"
                          "print(np.float32(1).astype(minifloat.hifloat8).view(np.uint8))"],
                         check=True, capture_output=True, text=True, env=env).stdout.split()
    assert out[0].startswith(site) and out[1] == "8"

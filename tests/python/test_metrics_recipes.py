"""sqnr / zero_rate / error_metrics / measure / analyze (the CLI's metrics) and the scaling recipes."""
import math

import numpy as np
import pytest

import minifloat as mf


def test_sqnr_and_zero_rate_definitions():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1000).astype(np.float32)
    x[:10] = 1e-6
    y = mf.cast(x, "float8_e4m3fn").astype(np.float32)
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    want = 10 * math.log10(np.sum(xd * xd) / np.sum((xd - yd) ** 2))
    assert mf.sqnr(x, y) == pytest.approx(want, rel=1e-12)
    assert mf.zero_rate(x, y) == pytest.approx(np.mean(y[x != 0] == 0))
    assert mf.sqnr(x, x) == math.inf
    q = mf.quantize(x, "hifloat8/tensor")
    assert mf.sqnr(x, q) == pytest.approx(mf.sqnr(x, q.dequantize()))
    m = mf.error_metrics(x, y)
    assert m["count"] == 1000 and m["finite_count"] == 1000
    assert m["mse"] == pytest.approx(np.mean((xd - yd) ** 2))
    assert m["max_abs_error"] == pytest.approx(np.max(np.abs(xd - yd)))


def test_nonfinite_inputs_are_skipped():
    x = np.array([1.0, np.nan, np.inf, 2.0], np.float32)
    m = mf.error_metrics(x, x)
    assert m["nonfinite_inputs"] == 2 and m["finite_count"] == 2 and m["sqnr_db"] == math.inf


def test_measure_and_analyze():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 128)).astype(np.float32)
    res = mf.analyze(x)
    assert list(res) == [mf.parse_scheme(s)["name"] for s in mf.default_schemes()]
    for name, d in res.items():
        q = mf.quantize(x, name)
        assert d["sqnr_db"] == pytest.approx(mf.sqnr(x, q))
        assert d["zero_rate"] == pytest.approx(mf.zero_rate(x, q))
        assert d == mf.measure(x, q) or d["sqnr_db"] == mf.measure(x, q)["sqnr_db"]
        assert sum(c["count"] for c in d["classes"].values()) == d["nonzero_count"]
        assert d["scheme"] == name
    only = mf.analyze(x, ["mxfp4", "hifloat8/channel"])
    assert list(only) == ["mxfp4", "hifloat8/channel"]
    assert res["mxfp8_e4m3"]["sqnr_db"] > res["mxfp4"]["sqnr_db"]
    hif = res["hifloat8/tensor"]["classes"]
    assert set(hif) >= {"3-bit", "2-bit", "1-bit", "denormal"}


def test_metric_errors():
    with pytest.raises(ValueError, match="elements"):
        mf.sqnr(np.ones(3, np.float32), np.ones(4, np.float32))
    with pytest.raises(ValueError, match="scheme"):
        mf.analyze(np.ones((2, 2), np.float32), ["nope"])
    q = mf.quantize(np.ones((2, 32), np.float32), "mxfp8_e4m3")
    with pytest.raises(ValueError, match="quantized tensor"):
        mf.measure(np.ones((3, 32), np.float32), q)


def test_amax_scaling_rules():
    g = mf.amax_scaling.hif8_guard(11)
    assert g.format == "hifloat8" and g.rule == "pow2" and g.target == 4
    assert g.scale(100.0) == 2.0 ** (6 - 4)  # floor(log2 100) = 6; amax / s in [16, 32)
    assert g.scale(0.0) == 1.0
    assert mf.amax_scaling.hif8_role("activation").n_guard == 10
    f = mf.amax_scaling.fp8_max("float8_e4m3fn")
    assert f.scale(448.0 * 3) == pytest.approx(3.0)
    assert mf.amax_scaling.fp8_hybrid("gradient").format == "float8_e5m2"
    assert mf.amax_scaling.mindspeed_hif8("weight").dst_max == 15.0
    assert "hifloat8" in g.scheme and "N_guard=11" in g.describe()
    with pytest.raises(ValueError, match="N_guard"):
        mf.amax_scaling.hif8_guard(0)
    with pytest.raises(ValueError, match="role"):
        mf.amax_scaling.hif8_role("bias")


def test_current_scaling():
    cs = mf.current_scaling(mf.amax_scaling.hif8_role("activation"))
    x = np.random.default_rng(2).standard_normal((8, 64)).astype(np.float32) * 10
    r = cs.step(x)
    amax = float(np.max(np.abs(x)))
    assert r.amax == pytest.approx(amax) and r.current and not r.skip
    assert r.scale == mf.amax_scaling.hif8_role("activation").scale(amax)
    q = cs.quantize(x, r)
    assert q.shape == x.shape and float(q.scales[0, 0]) == r.scale
    np.testing.assert_array_equal(cs.fake_quantize(x, r), q.dequantize())
    bad = x.copy()
    bad[0, 0] = np.nan
    assert cs.step(bad).skip
    assert cs.counters == {"steps": 2, "skips": 1, "overflow_total": 0}
    r2 = cs.step(amax=3.0)
    assert r2.scale == mf.amax_scaling.hif8_role("activation").scale(3.0)
    assert r.as_dict()["scale"] == r.scale


def test_delayed_scaling_protocol():
    ds = mf.delayed_scaling(history_len=64, interval=5, reduction="max", scaling=mf.amax_scaling.hif8_guard(11))
    rule = mf.amax_scaling.hif8_guard(11)
    r = ds.step(amax=10.0)
    assert r.current and r.scale == rule.scale(10.0)
    for a in (20.0, 30.0, 40.0):
        r = ds.step(amax=a)
        assert not r.current and r.scale == rule.scale(10.0)
    r = ds.step(amax=50.0)  # closes the interval of 5: the update uses max(history) = 50
    assert r.updated and ds.scale == rule.scale(50.0)
    assert ds.history == [10.0, 20.0, 30.0, 40.0, 50.0]
    ds.step(amax=1000.0)
    ds.skip_step()  # undone
    assert ds.history == [10.0, 20.0, 30.0, 40.0, 50.0] and ds.next_is_current
    assert ds.counters["skips"] == 1 and ds.counters["updates"] == 1
    x = np.full((2, 32), 3.0, np.float32)
    r = ds.step(x)
    q = ds.quantize(x, r)
    assert float(q.scales[0, 0]) == r.scale
    np.testing.assert_array_equal(ds.quantize(x, r.scale).codes, q.codes)
    ds.reset()
    assert ds.history == [] and ds.next_is_current
    assert "L=64" in ds.describe()
    assert mf.delayed_scaling.fp8("gradient").scheme.startswith("float8_e5m2")
    assert mf.delayed_scaling.hif8("weight").scheme.startswith("hifloat8")
    with pytest.raises(ValueError, match="history length"):
        mf.delayed_scaling(history_len=5000)
    with pytest.raises(ValueError, match="interval"):
        mf.delayed_scaling(interval=0)
    with pytest.raises(ValueError, match="reduction"):
        mf.delayed_scaling(reduction="mean")
    with pytest.raises(ValueError, match="not both"):
        ds.step(x, amax=1.0)


def test_analyze_matches_the_cli_json(tmp_path):
    """mf.analyze on a shipped PP-OCRv4 tensor gives the numbers `minifloat analyze --json` prints."""
    import json
    import os
    import subprocess

    cli = os.environ.get("MINIFLOAT_CLI")
    if not cli or not os.path.exists(cli):
        pytest.skip("MINIFLOAT_CLI (the minifloat binary) not given; ctest sets it")
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    path = os.path.join(root, "data", "ppocrv4", "weights", "rec.conv2d_106.w_0.npy")
    out = tmp_path / "a.json"
    subprocess.run([cli, "analyze", path, "--json", str(out)], check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        doc = json.load(f)
    results = doc["tensors"][0]["results"]
    x = np.load(path)
    assert x.ndim == 4  # a conv weight: the CLI reads it as (out channels, rest)
    mine = mf.analyze(x)
    assert doc["tensors"][0]["matrix"] == [x.shape[0], x.size // x.shape[0]]
    assert mine == mf.analyze(x, flatten="first") and mine != mf.analyze(x, flatten="last")
    assert list(results) == list(mine)
    for name, r in results.items():
        m = mine[name]
        for k in ("count", "finite_count", "nonzero_count", "zero_count", "overflow_count", "underflow_count",
                  "nan_count", "nonfinite_inputs"):
            assert r[k] == m[k], (name, k)
        for k in ("sqnr_db", "mse", "max_abs_error", "max_rel_error", "zero_rate"):
            assert float(r[k]) == pytest.approx(m[k], rel=1e-9, abs=1e-300), (name, k)
        assert {c: v["count"] for c, v in r["classes"].items()} == {c: v["count"] for c, v in m["classes"].items()}

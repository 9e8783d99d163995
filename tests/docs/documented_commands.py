#!/usr/bin/env python3
"""Runs the commands the documentation shows and checks that they still do what it says.

Usage: documented_commands.py MINIFLOAT_CLI REPO_ROOT [--example NAME=BINARY ...] [--list]

Every `minifloat ...` command line of README.md, docs/**/*.md, examples/*/README.md and
bench/README.md (code lines and inline code spans), and every command line of an example program
in a code block, is extracted. Each one must be either run here (RUN: concrete invocations on small
generated fixtures or the shipped data/, checking exit 0 and the outputs the docs promise) or
excused with a reason (EXCUSED). A new documented command that is neither fails the test, and so
does a table entry that no document shows any more: the table and the docs move together.
Help commands (`minifloat help CMD`, `minifloat CMD --help`, `-h`) need no entry: they are run for
every subcommand.

Examples are run only when their binary is passed with --example (ctest passes every example
target the build has); a passed binary that does not exist is a failure.
Needs numpy (Debian's /usr/bin/python3). Exits 1 listing every failure."""
import json, os, re, shlex, struct, subprocess, sys, tempfile

import numpy as np

SUBCOMMANDS = ['formats', 'table', 'encode', 'decode', 'quantize', 'analyze', 'attention', 'gemm']
EXAMPLES = ['kv_study', 'lm_training', 'training', 'training_dp', 'moe_all_to_all']
TIMEOUT = 120  # seconds per invocation: generous for a sanitizer build on a loaded machine

# --------------------------------------------------------------------------------------------
# Extraction


def doc_files(root):
    out = ['README.md', 'bench/README.md']
    for d, dirs, files in os.walk(os.path.join(root, 'docs')):
        dirs.sort()
        out += [os.path.relpath(os.path.join(d, f), root) for f in sorted(files) if f.endswith('.md')]
    ex = os.path.join(root, 'examples')
    out += [f'examples/{n}/README.md' for n in sorted(os.listdir(ex))
            if os.path.isfile(os.path.join(ex, n, 'README.md'))]
    return [p for p in out if os.path.isfile(os.path.join(root, p))]


def program_of(tokens):
    """(name, index of argv0) when the tokens start a command of ours, else None. Leading
    VAR=value assignments and `mpirun -n P` are skipped."""
    i = 0
    while i < len(tokens) and re.fullmatch(r'[A-Z_][A-Z0-9_]*=\S*', tokens[i]):
        i += 1
    if i < len(tokens) and tokens[i] == 'mpirun':
        i += 1
        while i < len(tokens) and tokens[i].startswith('-'):
            i += 2 if tokens[i] in ('-n', '-np') else 1
    if i >= len(tokens):
        return None
    name = tokens[i].rsplit('/', 1)[-1]
    if name == 'minifloat':
        rest = tokens[i + 1:]
        # "minifloat uses the same order": prose, not a command
        if rest and (rest[0] in SUBCOMMANDS + ['help', 'version'] or rest[0].startswith('-')):
            return name, i
        return None
    if name in EXAMPLES:
        return name, i
    return None


def strip_comment(line):
    return re.sub(r'\s+#(\s.*)?$', '', line)


def extract(root):
    """[(text, file, line)]: every documented command, whitespace collapsed."""
    found = []
    for rel in doc_files(root):
        lines = open(os.path.join(root, rel), encoding='utf-8').read().split('\n')
        fenced, prose = False, []  # prose: (line number, text) outside fences, for inline spans
        i = 0
        while i < len(lines):
            raw = lines[i]
            if re.sub(r'^(\s*>)+', '', raw).lstrip().startswith('```'):
                fenced = not fenced
                i += 1
                continue
            body = re.sub(r'^(\s*>)+', '', raw)  # blockquotes quote commands too
            is_code = fenced or body.startswith('    ')
            if not fenced:
                prose.append((i + 1, raw))
            text = strip_comment(body.strip())
            text = re.sub(r'^\$\s+', '', text)
            tokens = text.split()
            hit = program_of(tokens) if is_code else None
            if hit:
                start, indent = i, len(body) - len(body.lstrip())
                # continuation: a trailing backslash, or deeper-indented option lines of a synopsis
                while i + 1 < len(lines):
                    nxt = re.sub(r'^(\s*>)+', '', lines[i + 1])
                    deeper = len(nxt) - len(nxt.lstrip()) > indent and nxt.strip()[:1] in ('[', '-')
                    if text.endswith('\\') or deeper:
                        text = text.rstrip('\\').rstrip() + ' ' + strip_comment(nxt.strip())
                        i += 1
                        if not fenced:
                            prose.append((i + 1, lines[i]))
                    else:
                        break
                found.append((' '.join(text.split()), rel, start + 1))
            i += 1
        # inline code spans, which may run over a line break within a paragraph
        para = []  # (offset in the joined paragraph, line number)
        joined = ''
        for n, raw in prose + [(None, '')]:
            if raw.strip():
                para.append((len(joined), n))
                joined += raw.strip() + ' '
                continue
            for m in re.finditer(r'`([^`]+)`', joined):
                tokens = m.group(1).split()
                hit = program_of(tokens)
                # `minifloat analyze` alone names the command; with arguments it shows one
                if hit and hit[0] == 'minifloat' and len(tokens) - hit[1] >= 2 and \
                        (len(tokens) - hit[1] >= 3 or tokens[hit[1] + 1].startswith('-')):
                    line = max(ln for off, ln in para if off <= m.start())
                    found.append((' '.join(tokens), rel, line))
            para, joined = [], ''
    return found


# --------------------------------------------------------------------------------------------
# Running


class Checker:
    def __init__(self, cli, root, examples, work):
        self.cli, self.root, self.examples, self.work = cli, root, examples, work
        self.failures, self.invocations = [], 0
        self.context = ''

    def fail(self, msg):
        self.failures.append(f'{self.context}: {msg}')

    def run(self, argv, expect=0, cwd=None):
        """Runs argv (argv[0] 'minifloat' or an example name); returns (rc, stdout, stderr)."""
        prog = argv[0]
        exe = self.cli if prog == 'minifloat' else self.examples.get(prog)
        full = [exe] + list(argv[1:])
        self.invocations += 1
        shown = ' '.join(shlex.quote(a) for a in [prog] + list(argv[1:]))
        try:
            p = subprocess.run(full, cwd=cwd or self.work, capture_output=True, text=True,
                               timeout=TIMEOUT, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            self.fail(f'`{shown}` still running after {TIMEOUT} s')
            return None, '', ''
        if expect is not None and p.returncode != expect:
            err = (p.stderr.strip().splitlines() or [''])[-1]
            self.fail(f'`{shown}` exited {p.returncode}, expected {expect}: {err[:300]}')
        return p.returncode, p.stdout, p.stderr

    def ok(self, argv, cwd=None):
        rc, out, err = self.run(argv, 0, cwd)
        return rc == 0, out

    def npy(self, path, shape=None, dtype=None):
        """Loads an output .npy and checks its shape and dtype where the docs state them."""
        if not os.path.isfile(path):
            self.fail(f'{os.path.basename(path)} was not written')
            return None
        a = np.load(path)
        if shape is not None and tuple(a.shape) != tuple(shape):
            self.fail(f'{os.path.basename(path)}: shape {a.shape}, expected {tuple(shape)}')
        if dtype is not None and a.dtype != np.dtype(dtype):
            self.fail(f'{os.path.basename(path)}: dtype {a.dtype}, expected {np.dtype(dtype)}')
        return a

    def expect(self, cond, msg):
        if not cond:
            self.fail(msg)

    def path(self, name):
        return os.path.join(self.work, name)


def write_safetensors(path, tensors):
    """tensors: {name: (dtype string, numpy array of the raw storage)}."""
    header, blobs, off = {}, [], 0
    for name, (dt, arr) in tensors.items():
        b = np.ascontiguousarray(arr).tobytes()
        header[name] = {'dtype': dt, 'shape': list(arr.shape), 'data_offsets': [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b' ' * (-len(h) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)) + h + b''.join(blobs))


def make_fixtures(w):
    rng = np.random.default_rng(35)
    x = (rng.standard_normal((6, 70)) * np.exp2(rng.uniform(-8, 4, (6, 70)))).astype(np.float32)
    np.save(f'{w}/x.npy', x)
    np.save(f'{w}/x64.npy', x.astype(np.float64))
    np.save(f'{w}/x16.npy', x.astype(np.float16))
    np.save(f'{w}/bf16.npy', (x.view(np.uint32) >> 16).astype(np.uint16))  # bfloat16 bit patterns
    np.save(f'{w}/x1d.npy', x[0])
    np.save(f'{w}/x3d.npy', x.reshape(2, 3, 70))
    np.save(f'{w}/tile.npy', rng.standard_normal((40, 70)).astype(np.float32))
    np.save(f'{w}/conv.npy', rng.standard_normal((8, 4, 3, 3)).astype(np.float32))
    os.mkdir(f'{w}/DIR')
    np.save(f'{w}/DIR/a_conv.npy', rng.standard_normal((8, 4, 3, 3)).astype(np.float32))
    np.save(f'{w}/DIR/b_dense.npy', x)
    y = rng.standard_normal((16, 48)).astype(np.float32)
    write_safetensors(f'{w}/DIR/c_model.safetensors', {
        'f32': ('F32', y),
        'bf16': ('BF16', (y.view(np.uint32) >> 16).astype(np.uint16)),
        'f16': ('F16', y.astype(np.float16)),
    })
    # attention: Q (Hq, Tq, d), K (Hkv, Tk, d), V (Hkv, Tk, dv); d a power of two for --hadamard
    np.save(f'{w}/Q.npy', rng.standard_normal((4, 8, 16)).astype(np.float32))
    np.save(f'{w}/K.npy', rng.standard_normal((2, 12, 16)).astype(np.float32))
    np.save(f'{w}/V.npy', rng.standard_normal((2, 12, 24)).astype(np.float32))
    np.save(f'{w}/Qb.npy', rng.standard_normal((2, 4, 8, 16)).astype(np.float32))
    np.save(f'{w}/Kb.npy', rng.standard_normal((2, 2, 12, 16)).astype(np.float32))
    np.save(f'{w}/Vb.npy', rng.standard_normal((2, 2, 12, 24)).astype(np.float32))
    # gemm: A (M, K), B (N, K) or (K, N)
    a = rng.standard_normal((8, 64)).astype(np.float32)
    b = rng.standard_normal((6, 64)).astype(np.float32)
    np.save(f'{w}/A.npy', a)
    np.save(f'{w}/B.npy', b)
    np.save(f'{w}/Bkn.npy', np.ascontiguousarray(b.T))


def format_bits(name):
    if name in ('bfloat16', 'float16'):
        return 16
    m = re.match(r'float(\d)_', name)
    return int(m.group(1)) if m else 8


def readme_formats(root):
    """The format names of README.md's format table (first column)."""
    text = open(os.path.join(root, 'README.md'), encoding='utf-8').read()
    sec = text.split('## Formats', 1)[1].split('\n## ', 1)[0]
    return re.findall(r'^\| `([a-z0-9_]+)` \|', sec, re.M)


def synopsis_options(text):
    return sorted(set(re.findall(r'(--[a-z][a-z0-9-]*)', text)))


# --- handlers: each gets the Checker (and the documented text) ----------------------------


def check_formats(c, text):
    ok, out = c.ok(['minifloat', 'formats'])
    names = out.split()
    c.expect(ok and all(re.fullmatch(r'[a-z0-9_]+', n) for n in names) and len(names) == len(out.splitlines()),
             f'`minifloat formats`: expected one format name per line, got {out[:200]!r}')
    for f in readme_formats(c.root):
        c.expect(f in names, f'README format `{f}` missing from `minifloat formats`')
    c.formats = names


def check_table(c, text):
    for f in getattr(c, 'formats', None) or readme_formats(c.root):
        ok, out = c.ok(['minifloat', 'table', f])
        if not ok:
            continue
        rows = out.strip().split('\n')
        c.expect(rows[0] == 'code,hex,value,class', f'table {f}: header {rows[0]!r}, expected code,hex,value,class')
        c.expect(len(rows) - 1 == 2 ** format_bits(f), f'table {f}: {len(rows) - 1} rows, expected {2 ** format_bits(f)}')


def check_encode_decode(c, text):
    """Every format: encode writes its codes (uint8, uint16 for 16-bit formats, IN's shape);
    decode turns them back into float32 of the same shape."""
    decoding = text.split()[1] == 'decode'
    for f in getattr(c, 'formats', None) or readme_formats(c.root):
        code_t = np.uint16 if format_bits(f) == 16 else np.uint8
        if not os.path.isfile(c.path(f'c_{f}.npy')):  # `decode` takes the codes `encode` wrote
            if c.ok(['minifloat', 'encode', f, 'x.npy', f'c_{f}.npy'])[0]:
                c.npy(c.path(f'c_{f}.npy'), (6, 70), code_t)
        if decoding and os.path.isfile(c.path(f'c_{f}.npy')):
            if c.ok(['minifloat', 'decode', f, f'c_{f}.npy', f'd_{f}.npy'])[0]:
                c.npy(c.path(f'd_{f}.npy'), (6, 70), np.float32)
    if decoding:
        return
    for src in ('x64.npy', 'x16.npy', 'x1d.npy', 'x3d.npy'):
        if c.ok(['minifloat', 'encode', 'hifloat8', src, 'e.npy'])[0]:
            c.npy(c.path('e.npy'), np.load(c.path(src)).shape, np.uint8)
    for mode in ('nearest', 'nearest_even', 'nearest_away', 'toward_zero', 'upward', 'downward'):
        if c.ok(['minifloat', 'encode', 'float8_e4m3fn', 'x.npy', 'e.npy', '--round', mode])[0]:
            c.npy(c.path('e.npy'), (6, 70), np.uint8)
    for args in (['--round', 'stochastic', '--seed', '7'], ['--saturate'], ['--input', 'bfloat16']):
        src = 'bf16.npy' if 'bfloat16' in args else 'x.npy'
        if c.ok(['minifloat', 'encode', 'float8_e5m2', src, 'e.npy'] + args)[0]:
            c.npy(c.path('e.npy'), (6, 70), np.uint8)


def check_quantize(c, text):
    q = ['minifloat', 'quantize']
    cases = [  # (args, {output: (shape, dtype)})
        (['x.npy', 'o.npy', '--format', 'hifloat8', '--granularity', 'tensor', '--codes', 'c.npy', '--scales', 's.npy'],
         {'o.npy': ((6, 70), np.float32), 'c.npy': ((6, 70), np.uint8), 's.npy': ((1, 1), np.float32)}),
        (['x.npy', 'o.npy', '--format', 'float8_e4m3fn', '--granularity', 'channel', '--scales', 's.npy'],
         {'o.npy': ((6, 70), np.float32), 's.npy': ((6, 1), np.float32)}),
        (['x3d.npy', 'o.npy', '--format', 'hifloat8', '--granularity', 'token', '--n-guard', '12', '--scales', 's.npy'],
         {'o.npy': ((2, 3, 70), np.float32), 's.npy': ((6, 1), np.float32)}),
        (['x.npy', 'o.npy', '--format', 'float8_e4m3fn', '--granularity', 'block', '--block', '2x32', '--scales', 's.npy'],
         {'o.npy': ((6, 70), np.float32), 's.npy': ((3, 3), np.float32)}),
        (['x.npy', 'o.npy', '--format', 'float4_e2m1fn', '--granularity', 'mx', '--codes', 'c.npy', '--scales', 's.npy'],
         {'o.npy': ((6, 70), np.float32), 'c.npy': ((6, 35), np.uint8), 's.npy': ((6, 3), np.uint8)}),
        (['x.npy', 'o.npy', '--format', 'float8_e4m3fn', '--granularity', 'mx', '--axis', '0', '--scale-rule', 'rceil',
          '--scales', 's.npy'], {'o.npy': ((6, 70), np.float32), 's.npy': ((1, 70), np.uint8)}),
        # issue 15: one E8M0 scale per 32x32 tile, --codes/--scales as for 1-D MX
        (['tile.npy', 'o.npy', '--format', 'float8_e4m3fn', '--granularity', 'mx', '--block', '32x32',
          '--codes', 'c.npy', '--scales', 's.npy'],
         {'o.npy': ((40, 70), np.float32), 'c.npy': ((40, 70), np.uint8), 's.npy': ((2, 3), np.uint8)}),
        (['x1d.npy', 'o.npy', '--format', 'float8_e5m2', '--granularity', 'tensor', '--scale-rule', 'none'],
         {'o.npy': ((70,), np.float32)}),
        (['x.npy', 'o.npy', '--format', 'hifloat8', '--granularity', 'tensor', '--scale-rule', 'pow2', '--target', '3'],
         {'o.npy': ((6, 70), np.float32)}),
        (['x.npy', 'o.npy', '--format', 'float8_e4m3fn', '--granularity', 'tensor', '--scale-rule', 'max',
          '--round', 'toward_zero'], {'o.npy': ((6, 70), np.float32)}),
        (['conv.npy', 'o.npy', '--format', 'float4_e2m1fn', '--granularity', 'channel', '--flatten', 'first',
          '--codes', 'c.npy', '--scales', 's.npy'],
         {'o.npy': ((8, 4, 3, 3), np.float32), 'c.npy': ((8, 18), np.uint8), 's.npy': ((8, 1), np.float32)}),
        (['conv.npy', 'o.npy', '--format', 'hifloat8', '--granularity', 'channel', '--flatten', 'last'],
         {'o.npy': ((8, 4, 3, 3), np.float32)}),
    ]
    for rule in ('floor', 'ceil', 'even'):
        cases.append((['x.npy', 'o.npy', '--format', 'float6_e2m3fn', '--granularity', 'mx', '--scale-rule', rule],
                      {'o.npy': ((6, 70), np.float32)}))
    for args, outs in cases:
        for o in outs:
            if os.path.exists(c.path(o)):
                os.remove(c.path(o))
        if c.ok(q + args + ['--quiet'])[0]:
            for o, (shape, dt) in outs.items():
                c.npy(c.path(o), shape, dt)


def check_analyze_paths(c, text):
    """The synopsis: files of every kind, each output option."""
    for o in ('r.json', 'r.csv'):
        if os.path.exists(c.path(o)):
            os.remove(c.path(o))
    args = ['minifloat', 'analyze', 'DIR/b_dense.npy', 'DIR/c_model.safetensors', 'conv.npy',
            '--schemes', 'hifloat8/tensor,mxfp4,float8_e4m3fn/block/block=1x128',
            '--json', 'r.json', '--csv', 'r.csv', '--svg', 'plots_synopsis']
    if c.ok(args)[0]:
        check_analyze_outputs(c, 'r.json', 'plots_synopsis', 3, 5)
        rows = open(c.path('r.csv')).read().strip().split('\n') if os.path.isfile(c.path('r.csv')) else []
        c.expect(len(rows) == 1 + 5 * 3, f'r.csv: {len(rows)} lines, expected a header and one row per tensor and scheme (16)')
    # default scheme set (docs/analysis.md): seven schemes
    if c.ok(['minifloat', 'analyze', 'x.npy', '--json', 'd.json', '--quiet'])[0]:
        j = load_json(c, 'd.json')
        if j is not None:
            names = [s.get('name') for s in j.get('schemes', [])]
            c.expect(names == ['hifloat8/tensor', 'hifloat8/channel', 'float8_e4m3fn/tensor', 'mxfp8_e4m3',
                               'mxfp8_e5m2', 'mxfp4', 'float8_e4m3fn/block128'],
                     f'default schemes {names}, expected the seven of docs/analysis.md')


def load_json(c, name):
    try:
        return json.load(open(c.path(name)))
    except (OSError, ValueError) as e:
        c.fail(f'{name}: not readable JSON ({e})')
        return None


def check_analyze_outputs(c, json_name, svg_dir, n_schemes, n_tensors):
    j = load_json(c, json_name)
    if j is not None:
        for key in ('schemes', 'tensors', 'summary', 'skipped'):
            c.expect(key in j, f'{json_name}: no `{key}` (docs/analysis.md --json layout)')
        c.expect(len(j.get('schemes', [])) == n_schemes, f'{json_name}: {len(j.get("schemes", []))} schemes, expected {n_schemes}')
        c.expect(len(j.get('tensors', [])) == n_tensors, f'{json_name}: {len(j.get("tensors", []))} tensors, expected {n_tensors}')
        for t in j.get('tensors', []):
            if list(t.get('shape', [])) == [8, 4, 3, 3]:  # README: 4-D analysed as (O, I*kh*kw)
                c.expect(list(t.get('matrix', [])) == [8, 36], f'{json_name}: 4-D tensor viewed as {t.get("matrix")}, expected [8, 36]')
    d = c.path(svg_dir)
    svgs = sorted(os.listdir(d)) if os.path.isdir(d) else []
    for f in ('sqnr.svg', 'zero_rate.svg', 'significand_bits.svg'):
        c.expect(f in svgs, f'{svg_dir}/: no {f} (has {svgs})')
    prec = [f for f in svgs if f.startswith('precision_') and f.endswith('.svg')]
    c.expect(len(prec) == n_schemes, f'{svg_dir}/: {len(prec)} precision_<scheme>.svg, expected {n_schemes}')
    for f in svgs:
        head = open(os.path.join(d, f), encoding='utf-8', errors='replace').read(400)
        c.expect('<svg' in head, f'{svg_dir}/{f}: not an SVG file')


def check_analyze_readme(c, text):
    """README: `minifloat analyze DIR --schemes ... --json r.json --svg plots/` on a folder."""
    argv = ['minifloat'] + text.split()[1:]
    if c.ok(argv)[0]:
        # DIR holds a .npy conv weight, a dense .npy and a .safetensors with F32, BF16, F16 tensors
        check_analyze_outputs(c, 'r.json', 'plots', 2, 5)
        j = load_json(c, 'r.json')
        if j is not None:
            names = [s.get('name') for s in j.get('schemes', [])]
            c.expect(names == ['hifloat8/tensor/n-guard=9', 'mxfp8_e4m3/scale-rule=rceil'],
                     f'r.json schemes {names}, expected the two given')


def check_analyze_demo(c, text):
    """docs/analysis.md: the shipped PP-OCRv4 tensors, with the header line it shows."""
    argv = ['minifloat'] + [os.path.join(c.root, a) if a.startswith('data/') else a for a in text.split()[1:]]
    ok, out = c.ok(argv)
    if ok:
        c.expect(re.search(r'^minifloat analyze: 24 tensors \(924496 values\) x 7 schemes', out, re.M) is not None,
                 f'expected the documented header "24 tensors (924496 values) x 7 schemes", got {out[:120]!r}')
        c.expect(re.search(r'^rec\.conv2d_106\.w_0\s+60x240x1x1\s', out, re.M) is not None,
                 'expected the documented row of rec.conv2d_106.w_0 (60x240x1x1)')


def check_attention(c, text):
    runs = [
        ([], (4, 8, 24)),
        (['--q-scheme', 'hifloat8/tensor', '--k-scheme', 'float8_e4m3fn/tensor', '--v-scheme', 'mxfp8_e4m3/axis=0',
          '--p-format', 'float8_e4m3fn', '--p-scale', '0.00390625', '--causal', '--softmax-scale', '0.25'], (4, 8, 24)),
        (['--q-scheme', 'bf16', '--k-scheme', 'fp32', '--path', 'fast'], (4, 8, 24)),
        (['--path', 'reference'], (4, 8, 24)),
    ]
    if '--stats' in text:  # docs/attention.md's longer synopsis
        runs += [
            (['--path', 'fast', '--threads', '2', '--isa', 'scalar', '--kernel', 'scalar', '--stats', 'ml.npy'], (4, 8, 24)),
            (['--path', 'fast', '--kernel', 'automatic', '--hadamard', '--rotation-seed', '3'], (4, 8, 24)),
        ]
    for extra, shape in runs:
        if c.ok(['minifloat', 'attention', 'Q.npy', 'K.npy', 'V.npy', 'att.npy'] + extra)[0]:
            c.npy(c.path('att.npy'), shape, np.float32)
            if '--stats' in extra:
                c.npy(c.path('ml.npy'), (4, 8, 2), np.float32)
    # the optional leading batch dimension
    if c.ok(['minifloat', 'attention', 'Qb.npy', 'Kb.npy', 'Vb.npy', 'attb.npy', '--q-scheme', 'mxfp8_e4m3'])[0]:
        c.npy(c.path('attb.npy'), (2, 4, 8, 24), np.float32)


def check_gemm(c, text):
    outs = {}
    for order in ('exact', 'fp32_blocks', 'fast'):
        # B (K, N) takes tensor, block or MX schemes: a channel scheme there would scale rows of the
        # reduction axis and is refused (gemm/operand.hpp; per output channel is block Kx1)
        for b, layout, bs in (('B.npy', 'nk', 'hifloat8/channel'), ('Bkn.npy', 'kn', 'mxfp8_e4m3')):
            argv = ['minifloat', 'gemm', 'A.npy', b, f'g_{order}_{layout}.npy', '--a-scheme', 'mxfp8_e4m3',
                    '--b-scheme', bs, '--b-layout', layout, '--order', order]
            if '--threads' in text:
                argv += ['--threads', '2']
            if c.ok(argv)[0]:
                outs[order, layout] = c.npy(c.path(f'g_{order}_{layout}.npy'), (8, 6), np.float32)
    if c.ok(['minifloat', 'gemm', 'A.npy', 'B.npy', 'g.npy', '--a-scheme', 'float8_e4m3fn/tensor',
             '--b-scheme', 'float8_e4m3fn/tensor'])[0]:
        c.npy(c.path('g.npy'), (8, 6), np.float32)
    f, b = outs.get(('fast', 'nk')), outs.get(('fp32_blocks', 'nk'))
    if f is not None and b is not None:  # documented: fast is bit-identical to fp32_blocks
        c.expect(f.tobytes() == b.tobytes(), 'gemm --order fast differs from --order fp32_blocks')


def documented_options(root):
    """{subcommand: the --options its documented synopses name} (README and docs/attention.md)."""
    opts = {}
    for text, _, _ in extract(root):
        t = text.split()
        hit = program_of(t)
        if hit and hit[0] == 'minifloat' and len(t) > hit[1] + 1 and t[hit[1] + 1] in SUBCOMMANDS \
                and '[' in text:
            opts.setdefault(t[hit[1] + 1], set()).update(synopsis_options(text))
    return opts


def check_help(c, text=None):
    """Issue 35 item 12: every subcommand answers --help, -h and `minifloat help CMD` with its
    usage on stdout, exit 0; the top level answers --help, -h and help; no command: help, exit 2
    (docs/errors.md). README: `minifloat --help` documents every option."""
    if getattr(c, 'help_done', False):
        return
    c.help_done = True
    for argv in (['--help'], ['-h'], ['help']):
        rc, out, _ = c.run(['minifloat'] + argv)
        for cmd in SUBCOMMANDS:
            c.expect(rc != 0 or re.search(rf'\b{cmd}\b', out), f'`minifloat {argv[0]}` does not list `{cmd}`')
    rc, out, err = c.run(['minifloat'], expect=2)
    c.expect('usage' in (out + err).lower(), '`minifloat` without a command: expected the help')
    opts = documented_options(c.root)
    for cmd in SUBCOMMANDS:
        for argv in ([cmd, '--help'], [cmd, '-h'], ['help', cmd]):
            rc, out, err = c.run(['minifloat'] + argv)
            if rc != 0:
                continue
            c.expect('usage' in out.lower() and cmd in out,
                     f'`minifloat {" ".join(argv)}`: expected its usage on stdout, got {out[:120]!r}')
            if argv[1:] == ['--help']:
                missing = [o for o in sorted(opts.get(cmd, ())) if o not in out]
                c.expect(not missing, f'`minifloat {cmd} --help` does not document {missing}')


def check_generic_help(c, text):
    check_help(c)


def check_training(c, text):
    """examples/training: `training [--steps N] [--seed S] [--out DIR] [--quiet]` (N >= 20)."""
    out_dir = c.path('training_out')
    if c.ok(['training', '--steps', '20', '--seed', '1', '--out', out_dir, '--quiet'])[0]:
        for f in ('curves.csv', 'curves.svg'):
            c.expect(os.path.isfile(os.path.join(out_dir, f)), f'training --out: no {f}')


def check_kv_study(c, text):
    """examples/kv_study: the quick run's options (README: --data, --queries, --lengths, --dim,
    --seed) at small sizes; the default quick run is ctest `example: kv_study`."""
    c.ok(['kv_study', '--data', os.path.join(c.root, 'data/ppocrv4'), '--queries', '2', '--lengths', '256,512',
          '--dim', '32', '--seed', '3'])


def check_lm_training(c, text):
    """examples/lm_training: every option of the documented runs, on the shipped KJV slice and a
    few steps (the documented runs take minutes to hours)."""
    out_dir = c.path('lm_out')
    argv = ['lm_training', '--text', os.path.join(c.root, 'data/kjv/genesis_1-25.txt'), '--recipes', 'all',
            '--steps', '4', '--batch', '2', '--warmup', '1', '--lr', '2e-3', '--seeds', '1', '--infer',
            '--val-windows', '2', '--inject-inf', '2', '--inject-nan', '3', '--threads', '2', '--out', out_dir]
    if c.ok(argv)[0]:
        for f in ('table.md', 'results.csv', 'curves.csv', 'curves.svg'):
            c.expect(os.path.isfile(os.path.join(out_dir, f)), f'lm_training --out: no {f}')


# --------------------------------------------------------------------------------------------
# The table: every documented command, run or excused.

README_QUANTIZE = ('minifloat quantize IN.npy OUT.npy --format F --granularity tensor|channel|token|block|mx '
                   '[--block RxC] [--axis 0|1] [--scale-rule max|pow2|none|floor|rceil|ceil|even] [--target T] '
                   '[--round MODE] [--codes CODES.npy] [--scales SCALES.npy] [--n-guard N] [--flatten last|first]')
LM_FULL = ('build/release/examples/lm_training/lm_training --text kjv.txt --recipes all --steps 1500 --batch 16 '
           '--warmup 100 --lr 2e-3 --seeds 3 --infer --inject-inf 500 --inject-nan 1000 --out DIR')
LM_500 = ('build/release/examples/lm_training/lm_training --text kjv.txt --recipes all --steps 500 --batch 16 '
          '--warmup 50 --lr 2e-3 --seeds 3 --infer --val-windows 512 --inject-inf 150 --inject-nan 300 --out DIR')
LM_WHY = ('needs the whole KJV (`bible`, scripts/install-deps.sh --kjv) and runs for minutes to hours; '
          'its options are run by the lm_training entry on the shipped slice')

RUN = {
    'minifloat formats': check_formats,
    'minifloat table FORMAT': check_table,
    'minifloat encode FORMAT IN.npy OUT.npy [--round MODE] [--saturate] [--seed N] [--input bfloat16]': check_encode_decode,
    'minifloat decode FORMAT IN.npy OUT.npy': check_encode_decode,
    README_QUANTIZE: check_quantize,
    # docs/formats/mx.md, 2-D MX tiles: check_quantize runs it on a 40x70 tensor (grid 2x3)
    'minifloat quantize IN OUT --format F --granularity mx --block 32x32': check_quantize,
    'minifloat analyze PATH... [--schemes LIST] [--json FILE] [--csv FILE] [--svg DIR]': check_analyze_paths,
    'minifloat analyze DIR --schemes hifloat8/tensor/n-guard=9,mxfp8_e4m3/scale-rule=rceil --json r.json --svg plots/':
        check_analyze_readme,
    'build/release/tools/minifloat analyze data/ppocrv4/weights data/ppocrv4/activations': check_analyze_demo,
    'minifloat attention Q.npy K.npy V.npy OUT.npy [--q-scheme S] [--k-scheme S] [--v-scheme S] [--p-format F] '
    '[--p-scale X] [--causal] [--softmax-scale X] [--path reference|fast]': check_attention,
    'minifloat attention Q.npy K.npy V.npy OUT.npy [--q-scheme S] [--k-scheme S] [--v-scheme S] [--p-format F] '
    '[--p-scale X] [--causal] [--softmax-scale X] [--path reference|fast] [--threads N] [--isa LEVEL] [--kernel K] '
    '[--stats M_L.npy] [--hadamard [--rotation-seed N]]': check_attention,
    'minifloat gemm A.npy B.npy OUT.npy --a-scheme S --b-scheme S [--b-layout nk|kn] [--order exact|fp32_blocks|fast]':
        check_gemm,
    'minifloat gemm A.npy B.npy OUT.npy --a-scheme S --b-scheme S [--b-layout nk|kn] [--order exact|fp32_blocks|fast] '
    '[--threads N]': check_gemm,
    'minifloat --help': check_help,
    'training [--steps N] [--seed S] [--out DIR] [--quiet]': check_training,
    'build/release/examples/kv_study': check_kv_study,
    LM_FULL: check_lm_training,
}

EXCUSED = {
    'minifloat analyze --json':
        'prose naming the option (docs/python.md); run by the analyze entries',
    'minifloat quantize --granularity block':
        'prose naming the option (docs/formats/scaling.md); run by the quantize synopsis entry',
    'minifloat attention --path reference':
        'prose naming the reference path; run by the attention synopsis entries',
    'build/release/examples/kv_study --full':
        'about 30 s on 2 cores (too slow for this test); the quick run and its options are run',
    LM_500: LM_WHY,
    'lm_training --text kjv.txt --recipes all --steps 500 --batch 16 --warmup 50 --lr 2e-3 --seeds 3 --infer '
    '--val-windows 512 --inject-inf 150 --inject-nan 300 --out results/main': LM_WHY,
    'lm_training --text kjv.txt --recipes all --steps 1500 --batch 16 --warmup 100 --lr 2e-3 --seeds 3 --infer '
    '--inject-inf 500 --inject-nan 1000 --threads 2': LM_WHY,
    'mpirun -n P moe_all_to_all [--tokens T] [--act mxfp8_e4m3|hif8|all] P in {1, 2, 4, 8}':
        'an MPI program; the mpi-labelled ctests run it under mpirun',
    'mpirun -n P training_dp [--steps N] [--seed S] [--chunk C] [--wire fp32,bf16,hif8,e4m3,mxfp8_e4m3,hif8+bf16]':
        'an MPI program; the mpi-labelled ctests run it under mpirun with 2 and 4 ranks',
}
# The examples each RUN entry needs; without the binary the entry is reported as not run.
NEEDS = {check_training: 'training', check_kv_study: 'kv_study', check_lm_training: 'lm_training'}


def is_help(text):
    t = text.split()
    hit = program_of(t)
    if not hit or hit[0] != 'minifloat':
        return False
    rest = t[hit[1] + 1:]
    return rest[:1] == ['help'] or (len(rest) == 2 and rest[0] in SUBCOMMANDS + ['CMD'] and rest[1] in ('--help', '-h'))


def main():
    args = sys.argv[1:]
    listing = '--list' in args
    args = [a for a in args if a != '--list']
    examples = {}
    while '--example' in args:
        i = args.index('--example')
        name, _, path = args[i + 1].partition('=')
        if path:
            examples[name] = path
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    cli, root = os.path.abspath(args[0]), os.path.abspath(args[1])
    found = extract(root)
    by_text = {}
    for text, rel, line in found:
        by_text.setdefault(text, []).append(f'{rel}:{line}')

    problems = []
    for text, where in by_text.items():
        if text not in RUN and text not in EXCUSED and not is_help(text):
            problems.append(f'{where[0]}: documented command neither run nor excused (add it to RUN or '
                            f'EXCUSED in tests/docs/documented_commands.py): {text}')
    for text in list(RUN) + list(EXCUSED):
        if text not in by_text:
            problems.append(f'table entry no document shows any more (remove or update it): {text}')

    if listing:
        for text, where in by_text.items():
            status = 'excused: ' + EXCUSED[text] if text in EXCUSED else 'run' if text in RUN or is_help(text) else 'UNLISTED'
            print(f'{", ".join(where)}\n    {text}\n    -> {status}')
        return 0

    for name, path in examples.items():
        if not os.path.isfile(path):
            problems.append(f'example {name}: {path} does not exist (build target example_{name})')
    if not os.path.isfile(cli):
        sys.exit(f'documented_commands.py: {cli} does not exist; build target minifloat_cli')

    with tempfile.TemporaryDirectory(prefix='mf-doc-commands-') as work:
        make_fixtures(work)
        c = Checker(cli, root, {k: os.path.abspath(v) for k, v in examples.items() if os.path.isfile(v)}, work)
        ran, skipped = 0, []
        for text, where in by_text.items():
            fn = RUN.get(text) or (check_generic_help if is_help(text) else None)
            if fn is None:
                continue
            if fn in NEEDS and NEEDS[fn] not in c.examples:
                skipped.append(f'{text} (example {NEEDS[fn]} not built)')
                continue
            c.context = f'{where[0]}: `{text[:50]}{"..." if len(text) > 50 else ""}`'
            before = len(c.failures)
            fn(c, text)
            ran += 1
            print(f'{"ok  " if len(c.failures) == before else "FAIL"} {where[0]}: {text}')
        problems += c.failures
    for s in skipped:
        print(f'not run: {s}')
    print(f'documented_commands: {len(by_text)} documented commands, {ran} run ({c.invocations} invocations), '
          f'{len([t for t in by_text if t in EXCUSED])} excused, {len(skipped)} not run, {len(problems)} failures')
    if c.invocations == 0:
        problems.append('nothing was run')
    for p in problems:
        print('FAIL:', p)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())

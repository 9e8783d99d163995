#!/usr/bin/python3
"""The bad-input catalogue of the example programs (examples/*): they are programs users run, so
they keep the CLI's contract (docs/errors.md). Every case is one command line with its expected
exit code and a fragment of its message, run against the real binaries:
  exit 2   a bad argument: one line naming the option and what was expected, nothing written
  exit 1   a bad file (missing, a FIFO, too short) or a failed write: nothing left behind
  exit 0   --help/-h (usage on stdout) and the valid edge values
and every case is checked for what must never happen, counted in the summary (all must be 0):
  crash    a signal, an abort (an uncaught exception), MPI_ABORT, or a sanitizer report
  hang     still running after the time limit (a FIFO as --text is refused, not waited on)
  litter   a failed run that leaves a file or folder behind (an --out folder it created, a
           temporary file), or changes or removes a file that existed before it
  garbage  a message of more than one line, or a passing case whose output check fails

Usage: bad_inputs_examples.py --bin NAME=PATH [--bin NAME=PATH ...] [--mpirun PATH] [--text FILE] [--list]
  NAME is kv_study, training, lm_training (single process) or moe_all_to_all, lm_training_dp,
  training_dp (run under mpirun). Cases of a program that was not given are skipped (and
  counted as skipped); examples/CMakeLists.txt registers the ctest "examples: bad inputs".
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

from catalogue import TIME_LIMIT, crashed, snapshot

MPI_PROGRAMS = {"moe_all_to_all", "lm_training_dp", "training_dp"}


class Case:
    """One command line: program, arguments (may use {text}, the shipped text slice), expected
    exit code, a fragment of stderr (or of stdout for exit 0); ranks for MPI programs; `setup`
    prepares the work folder; `check(work)` returns an error text or None for exit-0 cases;
    `created` lists paths (relative to the work folder) the case is allowed to create."""

    def __init__(self, cls, program, args, code, fragment, ranks=1, setup=None, check=None, created=()):
        self.cls, self.program, self.args, self.code, self.fragment = cls, program, args, code, fragment
        self.ranks, self.setup, self.check, self.created = ranks, setup, check, set(created)

    def id(self):
        r = " -n %d" % self.ranks if self.program in MPI_PROGRAMS else ""
        return "%s%s %s" % (self.program, r, " ".join(self.args))


# --- the work folder: fixtures every case can name -------------------------------------------------

def base_fixtures(work):
    os.mkfifo(os.path.join(work, "fifo"))
    with open(os.path.join(work, "file"), "w") as f:
        f.write("a regular file, not a folder\n")
    with open(os.path.join(work, "tiny.txt"), "w") as f:
        f.write("too short\n")
    os.mkdir(os.path.join(work, "emptydir"))
    os.mkdir(os.path.join(work, "tmp"))  # TMPDIR: the default output folders land here


def out_with_blocked_target(work):
    """An existing --out folder whose curves.svg is a folder: the last write fails."""
    os.makedirs(os.path.join(work, "out", "curves.svg"))


def replot_fixture(csv_text):
    def setup(work):
        os.mkdir(os.path.join(work, "runs"))
        with open(os.path.join(work, "runs", "curves.csv"), "w") as f:
            f.write(csv_text)
    return setup


def replot_fifo(work):
    os.mkdir(os.path.join(work, "runs"))
    os.mkfifo(os.path.join(work, "runs", "curves.csv"))


def files_in(*names):
    def check(work):
        missing = [n for n in names if not os.path.isfile(os.path.join(work, n))]
        return "missing outputs: %s" % ", ".join(missing) if missing else None
    return check


# --- the catalogue ---------------------------------------------------------------------------------

def catalogue():
    C = []
    # every example answers --help and -h with its usage on stdout, exit 0
    for prog, ranks in [("kv_study", 1), ("training", 1), ("lm_training", 1), ("moe_all_to_all", 1),
                        ("lm_training_dp", 1), ("training_dp", 1)]:
        for h in ("--help", "-h"):
            C.append(Case("help", prog, [h], 0, "usage:", ranks))
    C.append(Case("help", "lm_training", ["--steps", "abc", "--help"], 0, "usage:"))

    # kv_study: numbers are whole, in range, lists have no empty item; --data must exist
    for args, frag in [
        (["--queries", "abc"], "--queries expects an integer in [1, 4096], got 'abc'"),
        (["--queries", "0"], "--queries expects an integer in [1, 4096]"),
        (["--queries", "-1"], "--queries expects an integer"),
        (["--queries", "8x"], "(not an integer)"),
        (["--dim", "99999999999999999999"], "--dim expects an integer in [1, 4096], got '99999999999999999999' (out of range)"),
        (["--dim", "0"], "--dim expects an integer in [1, 4096], got '0'"),
        (["--dim", "4097"], "--dim expects an integer in [1, 4096]"),
        (["--dim", ""], "--dim expects an integer"),
        (["--dim"], "--dim needs a value"),
        (["--lengths", ","], "--lengths expects a comma list of integers in [1, 262144] with no empty item, got ','"),
        (["--lengths", "1e3"], "--lengths expects a comma list of integers in [1, 262144], got '1e3'"),
        (["--lengths", "64,,128"], "no empty item"),
        (["--lengths", "64,"], "no empty item"),
        (["--lengths", "0"], "(item '0')"),
        (["--lengths", "18446744073709551617"], "--lengths expects a comma list of integers"),
        (["--lengths", "262144", "--dim", "4096"], "expected at most 2^28"),
        (["--lengths", "262144", "--queries", "4096", "--dim", "1"], "expected at most 2^27"),
        (["--seed", "-1"], "--seed expects an integer"),
        (["--seed", "18446744073709551616"], "(out of range)"),
        (["--bogus"], "unknown option '--bogus'"),
        (["full"], "unknown option 'full'"),
        (["--queries", "\x1b[31mred"], "got '\\x1b[31mred'"),
    ]:
        C.append(Case("usage", "kv_study", args, 2, frag))
    C.append(Case("bad file", "kv_study", ["--data", "nowhere"], 1, "--data 'nowhere': no such folder"))
    C.append(Case("bad file", "kv_study", ["--data", "file"], 1, "no such folder"))
    # valid edges: the smallest cache and head dimension (no PP-OCRv4 data in an empty folder)
    C.append(Case("valid edge", "kv_study", ["--data", "emptydir", "--lengths", "1", "--dim", "1", "--queries", "1"], 0,
                  "synthetic long cache"))
    C.append(Case("valid edge", "kv_study", ["--data", "emptydir", "--lengths", "33,64", "--dim", "3", "--queries", "2",
                                             "--seed", "18446744073709551615"], 0, "T = 33, d = 3"))

    # training (single process): --steps, --seed, --out
    for args, frag in [
        (["--steps", "19"], "--steps expects an integer in [20, 1000000], got '19'"),
        (["--steps", "abc"], "--steps expects an integer"),
        (["--steps", "1e3"], "(not an integer)"),
        (["--steps", "99999999999999999999999"], "(out of range)"),
        (["--steps", "1000001"], "--steps expects an integer in [20, 1000000]"),
        (["--steps"], "--steps needs a value"),
        (["--seed", "x"], "--seed expects an integer"),
        (["--out"], "--out needs a value"),
        (["--out", "file"], "exists and is not a folder"),
        (["--out", "file/sub"], "exists and is not a folder"),
        (["--quiet", "--frobnicate"], "unknown option '--frobnicate'"),
    ]:
        C.append(Case("usage", "training", args, 2, frag))
    C.append(Case("bad output", "training", ["--steps", "20", "--quiet", "--out", "out"], 1, "curves.svg",
                  setup=out_with_blocked_target))
    C.append(Case("valid edge", "training", ["--steps", "20", "--quiet", "--out", "new/dir"], 0, "| recipe |",
                  check=files_in("new/dir/curves.csv", "new/dir/curves.svg"),
                  created=["new", "new/dir", "new/dir/curves.csv", "new/dir/curves.svg"]))

    # lm_training: every numeric option checked, lists, the text file, the output folder
    tiny_model = ["--layers", "1", "--d-model", "8", "--heads", "1", "--d-ff", "8", "--context", "8", "--batch", "1"]
    for args, frag in [
        (["--lr", "nan"], "--lr expects a finite number in (0, 1], got 'nan'"),
        (["--lr", "inf"], "--lr expects a finite number in (0, 1], got 'inf'"),
        (["--lr", "-inf"], "--lr expects a finite number"),
        (["--lr", "-1"], "--lr expects a finite number in (0, 1], got '-1'"),
        (["--lr", "0"], "--lr expects a finite number in (0, 1]"),
        (["--lr", "2"], "--lr expects a finite number in (0, 1]"),
        (["--lr", "1e-3x"], "--lr expects a finite number"),
        (["--lr", "1e400"], "--lr expects a finite number"),
        (["--lr"], "--lr needs a value"),
        (["--steps", "0"], "--steps expects an integer in [1, 10000000]"),
        (["--steps", "-5"], "--steps expects an integer"),
        (["--batch", "99999999999999999999"], "(out of range)"),
        (["--threads", "0"], "--threads expects an integer in [1, 256]"),
        (["--threads", "4294967297"], "--threads expects an integer"),
        (["--layers", "0"], "--layers expects an integer in [1, 64]"),
        (["--heads", "0"], "--heads expects an integer in [1, 256]"),
        (["--context", "0"], "--context expects an integer in [1, 4096]"),
        (["--d-model", "1.5"], "--d-model expects an integer"),
        (["--d-ff", ""], "--d-ff expects an integer"),
        (["--seeds", "0"], "--seeds expects an integer in [1, 64]"),
        (["--warmup", "x"], "--warmup expects an integer"),
        (["--eval-every", "-1"], "--eval-every expects an integer"),
        (["--val-windows", "1e9"], "--val-windows expects an integer"),
        (["--interval", "0"], "--interval expects an integer in [1, 10000000]"),
        (["--history", "0"], "--history expects an integer in [1, 1048576]"),
        (["--n-guard", "11,10"], "--n-guard expects three integers W,A,G in [1, 37]"),
        (["--n-guard", "11,10,38"], "--n-guard expects a comma list of integers in [1, 37]"),
        (["--n-guard", "11,,10"], "no empty item"),
        (["--n-guard", "a,b,c"], "--n-guard expects a comma list of integers"),
        (["--ablate", "everything"], "--ablate expects guard, interval, history or all, got 'everything'"),
        (["--recipes", "fp32,fp64"], "--recipes: unknown training recipe 'fp64'"),
        (["--recipes", "fp32,"], "--recipes expects a comma list of training recipes with no empty item"),
        (["--recipes", "infer_hif8"], "unknown training recipe"),
        (["--text", "{text}", "--recipes", "bf16", "--infer"], "--infer needs the fp32 recipe"),
        (["--text", "{text}", "--d-model", "10", "--heads", "4"], "--d-model 10 is not a multiple of --heads 4"),
        (["--text", "{text}", "--steps", "10", "--inject-inf", "10"], "--inject-inf 10 lies beyond the run"),
        (["--text", "{text}", "--steps", "10", "--inject-nan", "99"], "--inject-nan 99 lies beyond the run"),
        (["--text", "{text}", "--recipes", "mxfp8", "--context", "48"], "MX recipes need a --context that is a multiple of 32"),
        (["--text", "{text}", "--batch", "4096", "--context", "4096"], "expected at most 2^30"),
        (["--text", "{text}", "--out", "file"], "exists and is not a folder"),
        (["--text", "{text}", "--out", "file/x/y"], "exists and is not a folder"),
        (["--text"], "--text needs a value"),
        (["--replot", "file"], "--replot 'file'"),
        (["--frob"], "unknown option '--frob'"),
    ]:
        C.append(Case("usage", "lm_training", args, 2, frag))
    for args, frag, setup in [
        (["--text", "fifo", "--steps", "2"], "fifo: is a FIFO", None),
        (["--text", "fifo", "--smoke"], "not a regular file", None),
        (["--text", "emptydir", "--steps", "2"], "not a regular file", None),
        (["--text", "missing.txt", "--steps", "2", "--out", "newout"], "missing.txt", None),
        (["--text", "tiny.txt", "--steps", "2", "--out", "newout"], "too short for context", None),
        (["--text", "tiny.txt", "--steps", "2"], "too short for context", None),  # default out in TMPDIR: not made
        (["--text", "/dev/zero", "--steps", "2"], "not a regular file", None),
        (["--text", "{text}", "--steps", "2", "--recipes", "fp32", "--quiet", "--out", "out"] + tiny_model,
         "curves.svg", out_with_blocked_target),
        (["--replot", "nowhere"], "curves.csv", None),
        (["--replot", "runs"], "not a regular file", replot_fifo),
        (["--replot", "runs"], "not a finite loss", replot_fixture("step,fp32\n0,2.5\n1,abc\n")),
        (["--replot", "runs"], "not a finite loss", replot_fixture("step,fp32\n0,nan\n")),
        (["--replot", "runs"], "the first line is not a header", replot_fixture("")),
    ]:
        C.append(Case("bad file", "lm_training", args, 1, frag, setup=setup))
    C.append(Case("valid edge", "lm_training",
                  ["--text", "{text}", "--steps", "2", "--recipes", "fp32", "--quiet", "--out", "res/run"] + tiny_model, 0,
                  "wrote table.md", check=files_in(*["res/run/" + n for n in ("table.md", "results.csv", "curves.csv", "curves.svg")]),
                  created=["res", "res/run"] + ["res/run/" + n for n in ("table.md", "results.csv", "curves.csv", "curves.svg")]))
    C.append(Case("valid edge", "lm_training", ["--replot", "runs", "--note", "<b>&"], 0, "wrote",
                  setup=replot_fixture("step,fp32,bf16\n0,5.5,5.6\n1,,5.1\n2,4.9,\n"), check=files_in("runs/curves.svg"),
                  created=["runs/curves.svg"]))

    # moe_all_to_all (mpirun)
    for args, frag, ranks in [
        (["--tokens", "100000000"], "--tokens expects an integer in [1, 65536], got '100000000'", 1),
        (["--tokens", "0"], "--tokens expects an integer in [1, 65536]", 1),
        (["--tokens", "99999999999999999999"], "(out of range)", 1),
        (["--tokens", "1e3"], "(not an integer)", 1),
        (["--tokens"], "--tokens needs a value", 1),
        (["--act", "fp32"], "--act expects mxfp8_e4m3, hif8 or all, got 'fp32'", 1),
        (["--act", ""], "--act expects mxfp8_e4m3, hif8 or all", 1),
        (["--bogus"], "unknown option '--bogus'", 1),
        ([], "run on 3 ranks, which do not divide the 8 experts", 3),
        (["--tokens", "70000"], "--tokens expects an integer in [1, 65536]", 2),
    ]:
        C.append(Case("usage", "moe_all_to_all", args, 2, frag, ranks))
    C.append(Case("valid edge", "moe_all_to_all", ["--act", "all", "--tokens", "4"], 0, "| hif8 |"))
    C.append(Case("valid edge", "moe_all_to_all", ["--tokens", "1", "--act", "hif8"], 0, "| hif8 |", 2))

    # lm_training_dp (mpirun)
    for args, frag, ranks in [
        (["--lr", "nan"], "--lr expects a finite number in (0, 1], got 'nan'", 1),
        (["--lr", "-1"], "--lr expects a finite number", 1),
        (["--steps", "19"], "--steps expects an integer in [20, 10000000]", 1),
        (["--steps", "99999999999999999999"], "(out of range)", 1),
        (["--chunk", "33"], "--chunk expects a multiple of 32", 1),
        (["--chunk", "0"], "--chunk expects an integer in [32, 1048576]", 1),
        (["--wire", ","], "--wire expects a comma list of wire formats with no empty item", 1),
        (["--wire", "fp32,fp64"], "--wire: unknown format 'fp64'", 1),
        (["--heads", "3"], "--d-model 64 is not a multiple of --heads 3", 1),
        (["--inject-inf", "60"], "--inject-inf 60 lies beyond the run", 1),
        (["--batch", "3"], "--batch 3 is not a multiple of the 2 ranks", 2),
        (["--frob"], "unknown option '--frob'", 2),
    ]:
        C.append(Case("usage", "lm_training_dp", args, 2, frag, ranks))
    for args, frag, ranks in [
        (["--text", "fifo"], "is a FIFO", 1),
        (["--text", "fifo"], "is a FIFO", 2),
        (["--text", "tiny.txt"], "too short for context", 2),
        (["--text", "missing.txt"], "missing.txt", 1),
    ]:
        C.append(Case("bad file", "lm_training_dp", args, 1, frag, ranks))

    # training_dp (mpirun)
    for args, frag, ranks in [
        (["--steps", "5"], "--steps expects an integer in [20, 1000000], got '5'", 1),
        (["--steps", "x"], "--steps expects an integer", 2),
        (["--seed", "-3"], "--seed expects an integer", 1),
        (["--chunk", "48"], "--chunk expects a multiple of 32", 1),
        (["--wire", ","], "no empty item", 1),
        (["--wire", "hif8+"], "--wire: unknown format 'hif8+'", 1),
        (["--wire", "hif8+fp64"], "--wire: unknown format 'hif8+fp64'", 1),
        (["--out", "x"], "unknown option '--out'", 2),
    ]:
        C.append(Case("usage", "training_dp", args, 2, frag, ranks))
    C.append(Case("valid edge", "training_dp", ["--steps", "20", "--wire", "hif8+bf16"], 0, "hif8", 2))
    return C


# --- running one case ------------------------------------------------------------------------------

def mpi_env():
    env = dict(os.environ)
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_mpi_yield_when_idle": "1",
                "OMPI_MCA_btl_vader_single_copy_mechanism": "none", "ASAN_OPTIONS": "detect_leaks=0"})
    return env


def run_case(case, bins, mpirun, text, work_root, n):
    """Returns (kind, detail): kind is ok, fail, crash, hang, litter or garbage."""
    work = os.path.join(work_root, "case%03d" % n)
    os.mkdir(work)
    base_fixtures(work)
    if case.setup:
        case.setup(work)
    before = snapshot(work)
    args = [a.replace("{text}", text) for a in case.args]
    env = mpi_env() if case.program in MPI_PROGRAMS else dict(os.environ)
    env["TMPDIR"] = os.path.join(work, "tmp")
    cmd = [bins[case.program]] + args
    if case.program in MPI_PROGRAMS:
        cmd = [mpirun, "-n", str(case.ranks)] + cmd
    try:
        p = subprocess.run(cmd, cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=TIME_LIMIT)
    except subprocess.TimeoutExpired:
        return "hang", "still running after %d s" % TIME_LIMIT
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    tail = (err.strip() or out.strip())[-600:]
    # under mpirun a rank's crash reaches stderr only as mpirun's report of it
    if crashed(p.returncode, err, ("terminate called", "MPI_ABORT", "exited on signal", "Aborted",
                                   "Segmentation fault")):
        return "crash", "exit %d: %s" % (p.returncode, tail)
    after = snapshot(work)
    changed = sorted(k for k in before if k not in after or after[k] != before[k])
    new = sorted(k for k in after if k not in before and k not in case.created)
    if changed or new:
        return "litter", "changed/removed: %s; left behind: %s" % (changed, new)
    if p.returncode != case.code:
        return "fail", "exit %d, expected %d: %s" % (p.returncode, case.code, tail)
    stream = out if case.code == 0 else err
    if case.fragment not in stream:
        return "fail", "message lacks %r: %s" % (case.fragment, tail)
    if case.code != 0:
        # the program's own lines (mpirun may add its report of the non-zero exit after them)
        own = [l for l in err.splitlines() if l.startswith(case.program + ":")]
        if len(own) != 1 or (case.program not in MPI_PROGRAMS and len(err.splitlines()) != 1):
            return "garbage", "expected one line on stderr, got: %r" % err[:600]
    elif case.cls == "help" and err.strip():
        return "garbage", "--help wrote to stderr: %r" % err[:300]
    if case.check:
        problem = case.check(work)
        if problem:
            return "garbage", problem
    return "ok", ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", action="append", default=[], help="NAME=PATH of an example binary")
    ap.add_argument("--mpirun", default=shutil.which("mpirun") or "")
    ap.add_argument("--text", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data", "kjv",
                                                   "genesis_1-25.txt"))
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    bins = {}
    for b in a.bin:
        name, _, path = b.partition("=")
        if name and path and os.path.isfile(path):  # a target not built (yet) is skipped, and counted
            bins[name] = os.path.abspath(path)
    cases = catalogue()
    if a.list:
        for c in cases:
            print("%-10s %d  %-80s %s" % (c.cls, c.code, c.id()[:80], c.fragment))
        return 0
    runnable = [c for c in cases if c.program in bins and (c.program not in MPI_PROGRAMS or a.mpirun)]
    if not runnable:
        print("bad_inputs_examples: no example binary given (--bin NAME=PATH); nothing to run", file=sys.stderr)
        return 1
    text = os.path.abspath(a.text)
    counts = {k: 0 for k in ("ok", "fail", "crash", "hang", "litter", "garbage")}
    work_root = tempfile.mkdtemp(prefix="minifloat-examples-catalogue-")
    try:
        for n, c in enumerate(runnable):
            kind, detail = run_case(c, bins, a.mpirun, text, work_root, n)
            counts[kind] += 1
            if kind != "ok":
                print("%-7s %s\n        %s" % (kind.upper(), c.id(), detail))
    finally:
        shutil.rmtree(work_root, ignore_errors=True)
    skipped = len(cases) - len(runnable)
    print("examples catalogue: %d cases run (%d skipped: binary not built or no mpirun); %s"
          % (len(runnable), skipped, ", ".join("%s %d" % kv for kv in counts.items())))
    return 0 if counts["ok"] == len(runnable) else 1


if __name__ == "__main__":
    sys.exit(main())

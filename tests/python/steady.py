"""Reference-count steadiness, shared by the refcount tests: a call repeated many times must leave
the watched objects' counts where they were (a stolen reference given without its own Py_INCREF
drains a static descriptor by one per call; a leak adds one)."""
import gc
import sys

LOOPS = 10_000


def counts(*objects):
    gc.collect()
    return [sys.getrefcount(o) for o in objects]


def assert_steady(fn, *watched, loops=LOOPS):
    """fn() run `loops` times keeps every watched object's count (a few for caches filled by the
    first call are allowed: numpy's cast tables, pybind11's type info)."""
    fn()
    before = counts(*watched)
    for _ in range(loops):
        fn()
    after = counts(*watched)
    for b, a, o in zip(before, after, watched):
        assert abs(a - b) <= 2, f"refcount of {o!r} moved from {b} to {a} over {loops} calls"

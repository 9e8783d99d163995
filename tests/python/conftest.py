"""pytest configuration of tests/python (run by ctest, label python, one entry per file).
Needs python3-pytest and python3-hypothesis.

A run in which no test passed fails (exit status 1): a file whose tests were all skipped, or that
collected nothing, is a defect, not a success. The oracle module next to this file is importable.
"""
import os
import sys

import pytest
from hypothesis import settings

sys.path.insert(0, os.path.dirname(__file__))

# No example database: the source tree stays clean and every run draws fresh examples (a failure
# prints its seed and the falsifying example).
settings.register_profile("minifloat", database=None, deadline=None, print_blob=True)
settings.load_profile("minifloat")

_passed = 0


def pytest_runtest_logreport(report):
    global _passed
    if report.when == "call" and report.passed:
        _passed += 1


def pytest_sessionfinish(session, exitstatus):
    if _passed == 0 and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        print("\nconftest: no test passed in this run; failing it (a test file that runs nothing is a defect)")


def pytest_report_header(config):
    import numpy
    import minifloat

    return "minifloat %s from %s (isa %s), numpy %s" % (
        minifloat.__version__, os.path.dirname(minifloat.__file__), minifloat.simd_isa(), numpy.__version__)

"""The grader catches planted bugs: each tier under tests/planted/ is the reference stage 2 with
one op broken, and grading it must report a FAILED check with a message that says what is wrong.

These run the grader through its Python API, isolated (a worker process), as `--impl` does for a
learner's workspace. The reference stage 2 itself must pass everything.
"""

import io
import re
from pathlib import Path

import pytest

from grader import Options, grade

PLANTED = Path(__file__).parent / "planted"

# (planted tier, ops graded, the check that must fail, a pattern its message must match)
BUGS = [
    ("conv_padding", "conv2d_forward", "correct",
     r"conv2d_forward: y\[[\d, ]+\] expected -?[\d.]+, received -?[\d.]+; \d+ of \d+ elements "
     r"differ .*padding=[12]"),
    ("softmax_overflow", "softmax", "correct",
     r"softmax: y\[[\d, ]+\] expected [\d.e-]+, received nan; .*\|x\| up to"),
    ("unwritten", "matmul", "correct",
     r"matmul: y\[0, 4\] expected -?[\d.]+, received nan; 1 of 5"),
    ("nan_output", "sigmoid", "correct", r"sigmoid: y\[[\d, ]+\] expected 1, received nan"),
    ("sigmoid_gradient", "sigmoid_backward", "grad",
     r"sigmoid_backward: dx\[0, 0\] expected -?[\d.]+, received -?[\d.]+; \d+ of \d+ elements "
     r"differ \(central difference, h=1e-6\)"),
    ("linear_db", "linear_backward", "grad",
     r"linear_backward: db\[0\] expected -?[\d.]+, received -?[\d.]+.*\(central difference"),
    ("segfault", "matmul", "correct",
     r"matmul: the tier crashed \(signal SIGSEGV\) at tests/planted/segfault/stage2_numpy/"
     r"__init__.py:\d+ in matmul"),
    ("hang", "relu", "correct", r"relu: no answer after 2 s \(hang\?\)"),
    ("stub", "matmul", "correct", r"^matmul: not implemented \(week 7, task matmul\)$"),
    ("nan_relu", "relu", "nan",
     r"^relu: a NaN in x\[[\d, ]+\] came out as 0 in y\[[\d, ]+\]; PyTorch keeps the NaN \[case 1"),
    ("nan_maxpool", "maxpool2d_forward", "nan",
     r"^maxpool2d_forward: a NaN in x\[[\d, ]+\] came out as -?[\d.]+ in y\[[\d, ]+\]; "
     r"PyTorch keeps the NaN"),
]  # fmt: skip


def run_grader(tmp_path, **options):
    """Grade with `options`; returns (exit status, results of the run, printed text)."""
    out = io.StringIO()
    status, record = grade(Options(stage=2, quick=True, json=str(tmp_path / "g.json"), **options),
                           out=out)  # fmt: skip
    return status, record["runs"][0]["results"], out.getvalue()


@pytest.mark.parametrize(("bug", "op", "check", "pattern"), BUGS, ids=[b[0] for b in BUGS])
def test_planted_bug_fails_with_a_clear_message(tmp_path, bug, op, check, pattern):
    status, results, printed = run_grader(
        tmp_path, impl=str(PLANTED / bug), ops=(op,), isolate=True, timeout=2
    )
    failed = [r for r in results if r.status == "failed" and r.op == op and r.check == check]
    assert status == 1
    assert failed, f"no failed {check} check for {op}:\n{printed}"
    assert re.search(pattern, failed[0].message), failed[0].message
    assert "Traceback" not in printed
    assert re.fullmatch(r"\d+ passed, [1-9]\d* failed(, \d+ skipped)?", printed.splitlines()[-1])


def test_the_worker_restarts_after_a_crash(tmp_path):
    """After matmul segfaults, a fresh worker grades the next op, which passes."""
    status, results, _ = run_grader(
        tmp_path, impl=str(PLANTED / "segfault"), ops=("matmul", "transpose"), isolate=True
    )
    by_check = {(r.op, r.check): r.status for r in results}
    assert status == 1
    assert by_check[("matmul", "correct")] == "failed"
    assert by_check[("transpose", "correct")] == "passed"


def test_a_hang_is_interrupted_in_process_too(tmp_path):
    """Without --isolate, a Python-level hang is stopped by the check's time limit."""
    status, results, _ = run_grader(tmp_path, impl=str(PLANTED / "hang"), ops=("relu",), timeout=1)
    assert status == 1
    assert results[0].message == "relu: no answer after 1 s (hang?)"


def test_unwritten_element_is_caught_without_isolation(tmp_path):
    """NaN-poisoned allocations work in the grader's own process as well."""
    status, results, _ = run_grader(tmp_path, impl=str(PLANTED / "unwritten"), ops=("matmul",))
    assert status == 1
    assert "received nan" in results[0].message


@pytest.mark.slow
def test_reference_stage2_passes_everything_against_stage1(tmp_path):
    status, results, printed = run_grader(tmp_path)
    failed = [f"{r.op} {r.check}: {r.message}" for r in results if r.status != "passed"]
    assert status == 0 and not failed, "\n".join(failed)
    checks = {r.check for r in results}
    assert {"correct", "grad", "dist", "speed"} <= checks
    assert printed.splitlines()[-1] == f"{len(results)} passed, 0 failed"

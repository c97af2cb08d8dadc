"""The grader catches planted bugs: each tier under tests/planted/ is the reference stage 2 (or
stage 1) with one op broken, and grading it must report a FAILED check with a message that says
what is wrong: wrong values, results that share memory, wrong dtypes, ops too slow, overflows, bugs
that show only at the large sizes of the speed ladders.

These run the grader through its Python API, isolated (a worker process), as `--impl` does for a
learner's workspace. The reference stage 2 itself must pass everything.
"""

import io
import re
from pathlib import Path

import pytest

from grader import Options, grade

PLANTED = Path(__file__).parent / "planted"

# (planted tier, op graded, the check that must fail (a pattern), a pattern its message must match)
BUGS = [
    ("conv_padding", "conv2d_forward", "correct",
     r"conv2d_forward: y\[[\d, ]+\] expected -?[\d.]+, received -?[\d.]+; \d+ of \d+ elements "
     r"differ .*padding=[12]"),
    ("softmax_overflow", "softmax", "correct",
     r"softmax: y\[[\d, ]+\] expected [\d.e-]+, received nan; .*\|x\| up to"),
    ("unwritten", "matmul", "correct",
     r"matmul: y\[0, 4\] was never written \(it still holds the nan the grader fills new outputs "
     r"with\), expected -?[\d.]+; 1 of 5 elements never written"),
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
    # results a caller cannot keep
    ("transpose_view", "transpose", "correct",
     r"^transpose: (y is not C-contiguous .*; )?y shares memory with the input a \(a view"),
    ("softmax_buffer", "softmax", "correct",
     r"softmax: y shares memory with y returned by an earlier call \(a buffer reused"),
    ("linear_fortran", "linear_forward", "correct", r"linear_forward: y is not C-contiguous"),
    ("argmax_int32", "maxpool2d_forward", "correct",
     r"^maxpool2d_forward: argmax must be int64, got int32 \["),
    ("cache_by_id", "matmul", "correct|speed",  # the same objects again: the cached result
     r"matmul: y shares memory with y returned by an earlier call"),
    # too slow for the stage: Python loops in NumPy code
    ("relu_slow", "relu", "speed",
     r"^relu: too slow: [\d.]+x the speed of stage 1 \[python\], expected at least 200x"),
    ("tanh_slow", "tanh", "speed",
     r"^tanh: too slow: [\d.]+x the speed of stage 1 \[python\], expected at least 100x"),
    # seen only at the large sizes of the speed ladder
    ("leaky_relu_large", "leaky_relu", "speed",
     r"^after timing: leaky_relu: y\[[\d, ]+\] expected -[\d.]+, received 0;"),
    ("matmul_k256", "matmul", "speed",
     r"^after timing: matmul: y\[0, 0\] expected -?[\d.]+, received -?[\d.]+; \d+ of 1048576"),
    ("first_images", "conv2d_forward", "speed",
     r"^after timing: conv2d_forward: y\[8, 0, 0, 0\] expected -?[\d.]+, received \S+; \d+ of "
     r"102400 elements differ"),
    # every wrong output named; a case built with ties says so
    ("batchnorm_dgamma_dbeta", "batchnorm_backward", "grad",
     r"batchnorm_backward: dgamma\[0\] expected .* \| batchnorm_backward: dbeta\[0\] expected"),
    ("maxpool_last_tie", "maxpool2d_forward", "correct",
     r"maxpool2d_forward: argmax\[[\d, ]+\] expected \d+, received \d+.*\[case 5 of 5: .*"
     r"this case is built with ties: the first maximum in window order wins\]"),
    # NaN hidden
    ("nan_relu", "relu", "nan",
     r"^relu: a NaN in x\[[\d, ]+\] came out as 0 in y\[[\d, ]+\]; PyTorch keeps the NaN \[case 1"),
    ("nan_maxpool", "maxpool2d_forward", "nan",
     r"^maxpool2d_forward: a NaN in x\[[\d, ]+\] came out as -?[\d.]+ in y\[[\d, ]+\]; "
     r"PyTorch keeps the NaN"),
]  # fmt: skip
# Stage 1's planted bugs: the extremes every tier must survive.
STAGE1_BUGS = [
    ("naive_sigmoid", "sigmoid", "correct",
     r"^sigmoid: raised OverflowError: math range error .*\|x\| up to 1e\+03"),
]  # fmt: skip


def run_grader(tmp_path, stage=2, **options):
    """Grade with `options`; returns (exit status, results of the run, printed text)."""
    out = io.StringIO()
    status, record = grade(Options(stage=stage, quick=True, json=str(tmp_path / "g.json"),
                                   **options), out=out)  # fmt: skip
    return status, record["runs"][0]["results"], out.getvalue()


PLANTED_BUGS = [(2, *bug) for bug in BUGS] + [(1, *bug) for bug in STAGE1_BUGS]


@pytest.mark.parametrize(
    ("stage", "bug", "op", "check", "pattern"), PLANTED_BUGS, ids=[b[1] for b in PLANTED_BUGS]
)
def test_planted_bug_fails_with_a_clear_message(tmp_path, stage, bug, op, check, pattern):
    status, results, printed = run_grader(
        tmp_path, stage, impl=str(PLANTED / bug), ops=(op,), isolate=True, timeout=2
    )
    failed = [
        r for r in results if r.status == "failed" and r.op == op and re.fullmatch(check, r.check)
    ]
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
    assert "was never written" in results[0].message


@pytest.mark.slow
def test_reference_stage2_passes_everything_against_stage1(tmp_path):
    status, results, printed = run_grader(tmp_path)
    failed = [f"{r.op} {r.check}: {r.message}" for r in results if r.status != "passed"]
    assert status == 0 and not failed, "\n".join(failed)
    checks = {r.check for r in results}
    assert {"correct", "grad", "dist", "speed"} <= checks
    assert printed.splitlines()[-1] == f"{len(results)} passed, 0 failed"

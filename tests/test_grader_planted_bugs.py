"""The grader catches planted bugs: each tier under tests/planted/ is the reference stage 2 (or
stage 1) with one op broken, and grading it must report a FAILED check with a message that says
what is wrong: wrong values, results that share memory, wrong dtypes, ops too slow, overflows, bugs
that show only at the large sizes of the speed ladders. Stage 3's are a copy of the repository's
stage3_c with ops made slow (C_PLANTS), which its speed policy must fail.

These run the grader through its Python API, isolated (a worker process), as `--impl` does for a
learner's workspace. The reference stages 2 and 3 themselves must pass everything.
"""

import io
import re
import shutil
import time
from pathlib import Path

import pytest

from grader import Options, grade
from grader.policy import STAGE2_OVER_STAGE1, STAGE3_OVER_STAGE2
from grader.run import CHECKS

PLANTED = Path(__file__).parent / "planted"

# A hang is told apart from slowness: the repository's tier answered the same check, and quickly.
HANG = (r"^relu: no answer after [\d.]+ s, while the repository's stage 2 answered this check in "
        r"[\d.e-]+ s: a hang \(an endless loop, a deadlock\)\?$")  # fmt: skip

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
    ("hang", "relu", "correct", HANG),
    ("stub", "matmul", "correct", r"^matmul: not implemented \(week 7, task matmul\)$"),
    # results a caller cannot keep
    ("transpose_view", "transpose", "correct",
     r"^transpose: (y is not C-contiguous .*; )?y shares memory with the input a \(a view"),
    ("swap_axes_contiguous_view", "swap_middle_axes", "correct",
     r"^swap_middle_axes: y shares memory with the input x \(a view"),
    ("swap_axes_reshape", "swap_middle_axes", "correct",
     r"^swap_middle_axes: y\[0, 0, 1, 0\] expected"),
    ("softmax_buffer", "softmax", "correct",
     r"softmax: y shares memory with y returned by an earlier call \(a buffer reused"),
    ("linear_fortran", "linear_forward", "correct", r"linear_forward: y is not C-contiguous"),
    ("argmax_int32", "maxpool2d_forward", "correct",
     r"^maxpool2d_forward: argmax must be int64, got int32 \["),
    # the same objects again (or new ones at a recycled id): the cached result
    ("cache_by_id", "matmul", "correct|nan|speed",
     r"matmul: (y shares memory with y returned by an earlier call|y has shape \[\d+, \d+\], "
     r"expected)"),
    # too slow for the stage: Python loops in NumPy code
    ("relu_slow", "relu", "speed",
     rf"^relu: too slow: [\d.]+x the speed of stage 1 \[python\], expected at least "
     rf"{STAGE2_OVER_STAGE1['relu']:.3g}x"),
    ("tanh_slow", "tanh", "speed",
     rf"^tanh: too slow: [\d.]+x the speed of stage 1 \[python\], expected at least "
     rf"{STAGE2_OVER_STAGE1['tanh']:.3g}x"),
    # seen only at the large sizes of the speed ladder
    # (now also in the correctness cases: a tail of 3111 elements, a K of 4097)
    ("leaky_relu_large", "leaky_relu", "correct|speed",
     r"^(after timing: )?leaky_relu: y\[[\d, ]+\] expected -[\d.]+, received 0;"),
    ("matmul_k256", "matmul", "correct|speed",
     r"^(after timing: )?matmul: y\[0, 0\] expected -?[\d.]+, received -?[\d.]+; \d+ of "
     r"(1048576|6) elements"),
    ("first_images", "conv2d_forward", "speed",
     r"^after timing: conv2d_forward: y\[8, 0, 0, 0\] was never written \(it still holds the nan "
     r"the grader fills new outputs with\), expected -?[\d.]+; \d+ of 102400 elements never "
     r"written"),
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
    # right only for the lengths tried: a chunk's tail, a row past a block, power-of-two rows
    ("sigmoid_chunk_tail", "sigmoid", "correct",
     r"^sigmoid: y\[2, \d+\] was never written .*; 39 of 3111 elements never written "
     r"\[case 6 of 6: x\[3, 1037\]"),
    ("softmax_first_block", "softmax", "correct",
     r"^softmax: y\[0, \d+\] expected [\d.e-]+, received [\d.e-]+; \d+ of 6151 elements "
     r"differ .*\[case 5 of 5: x\[1, 6151\]"),
    ("log_softmax_even_rows", "log_softmax", "correct",
     r"^log_softmax: y\[0, \d+\] expected -?[\d.]+, received -?[\d.]+; .*\[case 1 of 5"),
    ("softmax_backward_first_block", "softmax_backward", "correct",
     r"^softmax_backward: dx\[0, \d+\] expected -?[\d.e-]+, received -?[\d.e-]+; \d+ of 6151 "
     r"elements differ .*\[case 5 of 5: y\[1, 6151\]"),
    # a classic NumPy slip: a fancy index over every row, where one element per row was meant
    ("cross_entropy_backward_label_columns", "cross_entropy_loss_backward", "correct",
     r"^cross_entropy_loss_backward: dlogits\[\d+, \d+\] expected -?[\d.e-]+, received "
     r"-?[\d.e-]+; \d+ of \d+ elements differ .*\[case 2 of"),
    # an optional argument passed, a default left in place
    ("conv_no_dx_first_image", "conv2d_backward", "correct",
     r"^conv2d_backward: db\[0\] expected -?[\d.]+, received -?[\d.]+.* need_dx=False\]"),
    ("hinge_default_margin", "hinge_loss", "correct",
     r"^hinge_loss: loss expected [\d.]+, received [\d.]+ .*margin=1.0 \(default, not passed\)"),
    ("adam_default_beta2", "adam_step", "correct",
     r"^adam_step: p\[[\d, ]+\] expected .*beta2=0.999 \(default, not passed\)"),
    # a loss judged relative to its size, however long its sum
    ("mse_large_sixteenth", "mse_loss", "speed",
     r"^after timing: mse_loss: loss expected [\d.]+, received 0?\.[\d]+ \(tolerance"),
    # a result written into an input
    ("relu_into_input", "relu", "correct",
     r"^relu: modified its input x \(only optimizers and batchnorm's running statistics"),
    # arguments across their domains, edges included
    ("leaky_backward_compare", "leaky_relu_backward", "correct",
     r"^leaky_relu_backward: dx\[[\d, ]+\] expected .* alpha=2.5\]"),
    ("leaky_abs_alpha", "leaky_relu", "correct",
     r"^leaky_relu: y\[[\d, ]+\] expected .* alpha=-0.5\]"),
    ("batchnorm_eval_no_eps", "batchnorm_forward", "correct",
     r"^batchnorm_forward: y\[[\d, ]+\] expected .*training=False momentum=0.1 eps=0.001\]"),
    ("rmsprop_eps_inside", "rmsprop_step", "correct",
     r"^rmsprop_step: p\[[\d, ]+\] expected .* eps=0.5 "),
    # labels outside [0, C): refused
    ("cross_entropy_wraps_labels", "cross_entropy_loss", "correct",
     r"^cross_entropy_loss: accepted labels\[0\] = 10, outside \[0, C=10\); the contract "
     r"refuses it with a ValueError \[case 1 of"),
    ("hinge_backward_negative_labels", "hinge_loss_backward", "correct",
     r"^hinge_loss_backward: accepted labels\[0\] = -1, outside \[0, C=5\)"),
    # attention: a size from the wrong axis, a missing term, a form's constant, a form ignored
    ("layernorm_divides_by_rows", "layernorm", "correct",
     r"^layernorm: y\[[\d, ]+\] expected .* \| layernorm: saved\.mean\[0\] expected .*"
     r"\[case 1 of \d+: x\[1, 7\]"),
    ("layernorm_backward_no_mean", "layernorm_backward", "grad",
     r"^layernorm_backward: dx\[[\d, ]+\] expected .* \(central difference, h=1e-6\)"),
    ("gelu_tanh_constant", "gelu", "correct",
     r"^gelu: y\[[\d, ]+\] expected .* approximate=tanh\]"),
    ("gelu_backward_exact_only", "gelu_backward", "correct",
     r"^gelu_backward: dx\[[\d, ]+\] expected .* approximate=tanh\]"),
    # scaled dot-product attention: the mask's diagonal, its alignment and its NaN, the default
    # scale, an unshifted log-sum-exp, the softmax's Dsum term, two gradients swapped
    ("attention_causal_diagonal", "attention", "correct",
     r"^attention: y\[[\d, ]+\] expected .* saved\.lse\[[\d, ]+\] expected .*, received -inf;"
     r".* causal=True"),
    ("attention_causal_bottom_right", "attention", "correct",
     r"^attention: y\[[\d, ]+\] expected .*\[case \d of \d+: q\[2, 3, 5, 3\] k\[2, 3, 7, 3\].* "
     r"causal=True"),
    ("attention_scale_over_d", "attention", "correct",
     r"^attention: y\[[\d, ]+\] expected .* scale=None \(default, not passed\)\]"),
    ("attention_lse_no_max", "attention", "correct",
     r"^attention: y\[[\d, ]+\] expected .* saved\.lse\[[\d, ]+\] expected [\d.]+, received inf;"),
    ("attention_mask_assigns", "attention", "nan",
     r"^attention: an? (NaN|[+-]Inf) in [qkv]\[[\d, ]+\] came out as -?[\d.e+-]+ in y\[[\d, ]+\]; "
     r"PyTorch keeps the NaN .*causal=True"),
    ("attention_backward_no_dsum", "attention_backward", "grad",
     r"^attention_backward: dq\[[\d, ]+\] expected .* \| attention_backward: dk\[[\d, ]+\] "
     r"expected .*\(central difference, h=1e-6\) \[case 1 of 2: .*saved=\(\[2, 2, 5\],\)"),
    ("attention_backward_dk_dv_swapped", "attention_backward", "grad",
     r"^attention_backward: dk\[[\d, ]+\] expected .* \| attention_backward: dv\[[\d, ]+\] "
     r"expected .*\(central difference"),
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
    status, results, printed = run_grader(tmp_path, stage, impl=str(PLANTED / bug), ops=(op,),
                                          checks=tuple(check.split("|")), isolate=True, timeout=2)
    failed = [
        r for r in results if r.status == "failed" and r.op == op and re.fullmatch(check, r.check)
    ]
    assert status == 1
    assert failed, f"no failed {check} check for {op}:\n{printed}"
    assert re.search(pattern, failed[0].message), failed[0].message
    assert "Traceback" not in printed
    assert re.fullmatch(r"\d+ passed, [1-9]\d* failed(, \d+ skipped)?", printed.splitlines()[-1])


# Stage 3: op -> (file under stage3_c/, the reference's text, the planted text). Each op stays
# correct and becomes far slower than the repository's, as a learner's first try may be.
C_PLANTS = {
    "relu": ("activations.py",  # one C call per element, from Python
             '''    return _forward("relu", checks.relu(x))\n''',
             '''    x = checks.relu(x)
    y = new_output("relu", x.shape)
    for i in range(x.size):
        call("s2c_relu", pointer(x) + i, pointer(y) + i, 1)
    return y
'''),
    "batchnorm_backward": ("csrc/norm.c",  # O(count^2): dbeta summed again for every element
                           "                dx[index] = (float)(factor * ((double)count * dy[index]"
                           " - dy_sum -\n",
                           '''                double dy_total = 0.0;
                for (int64_t j = 0; j < n; j++)
                    for (int64_t q = 0; q < spatial; q++)
                        dy_total += dy[(j * c + channel) * spatial + q];
                dx[index] = (float)(factor * ((double)count * dy[index] - dy_total -
'''),
    "sum_rows": ("csrc/linalg.c",  # O(n m^2): each column sum scans the whole matrix
                 '''        for (int64_t i = 0; i < n; i++) {
            const float *row = x + i * m + j0;
            for (int64_t j = 0; j < width; j++)
                sums[j] += row[j];
        }
''',
                 '''        for (int64_t j = 0; j < width; j++)
            for (int64_t e = 0; e < n * m; e++)
                if (e % m == j0 + j)
                    sums[j] += x[e];
'''),
}  # fmt: skip
CONTROLS = ("tanh", "matmul")  # unplanted, in the same copy: slower than NumPy, and they pass


@pytest.fixture(scope="module")
def planted_c_grading(tmp_path_factory):
    """Stage 3's speed checks on a copy of stage3_c with C_PLANTS planted, one grading for all."""
    folder = tmp_path_factory.mktemp("planted_c")
    shutil.copytree(
        Path(__file__).parent.parent / "stage3_c",
        folder / "stage3_c",
        ignore=shutil.ignore_patterns("_build", "*.so", "_s2c_native*.c", "__pycache__"),
    )
    for file, reference, planted in C_PLANTS.values():
        path = folder / "stage3_c" / file
        text = path.read_text()
        assert text.count(reference) == 1, f"{file} no longer holds the text to plant into"
        path.write_text(text.replace(reference, planted))
    return run_grader(folder, 3, impl=str(folder), ops=(*C_PLANTS, *CONTROLS), checks=("speed",))


@pytest.mark.slow
@pytest.mark.timing
@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
@pytest.mark.parametrize("op", C_PLANTS)
def test_a_slow_c_op_fails_stage3s_speed_policy(planted_c_grading, op):
    status, results, printed = planted_c_grading
    failed = [r for r in results if r.op == op and r.status == "failed"]
    wanted = re.escape(f"{STAGE3_OVER_STAGE2[op]:.3g}x")
    assert status == 1
    assert failed, f"{op} passed its speed checks:\n{printed}"
    assert re.fullmatch(
        rf"{op}: too slow: [\d.e-]+x the speed of stage 2 \[numpy\] \(one thread each\), "
        rf"expected at least {wanted} \(stage 3's speed policy, grader/policy.py\)",
        failed[0].message,
    ), failed[0].message


@pytest.mark.slow
@pytest.mark.timing
@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
def test_the_unplanted_c_ops_pass_beside_them(planted_c_grading):
    _, results, printed = planted_c_grading
    controls = [r for r in results if r.op in CONTROLS]
    assert {r.op for r in controls} == set(CONTROLS), printed
    assert all(r.status == "passed" for r in controls), printed


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
    assert re.fullmatch(HANG, results[0].message), results[0].message


def test_a_rung_that_hangs_is_named_in_its_row_and_in_the_recap(monkeypatch):
    """A ladder's correct check runs one rung: when it hangs, its row and the failures' recap
    say which rung (a failure it raised names it the same way)."""
    from grader.isolation import InProcessRunner
    from grader.records import Setup, Task
    from grader.report import print_recap
    from grader.session import Session

    monkeypatch.setattr(Session, "run", lambda self, task: time.sleep(60))
    runner = InProcessRunner(Setup(stage=2))
    result = runner.run(Task("correct", "matmul", kernel="naive"), timeout=0.05)
    out = io.StringIO()
    print_recap([result], out)
    assert result.status == "failed" and result.size == "kernel naive"
    assert "FAILED matmul correct (kernel naive): matmul: no answer after" in out.getvalue()


def test_correct_code_as_slow_as_the_repository_passes(tmp_path, monkeypatch):
    """On a machine where every relu takes 0.1 s, the learner's (relu_sleepy) and the
    repository's alike, a check runs past its base limit; timed on the repository's tier, it is
    slow, not hung, and passes once given the time the yardstick sets."""
    import stage2_numpy
    from tests.planted.relu_sleepy import stage2_numpy as sleepy

    def repository_relu(x, relu=stage2_numpy.relu):
        time.sleep(sleepy.SECONDS_PER_CALL)
        return relu(x)

    monkeypatch.setattr(stage2_numpy, "relu", repository_relu)
    status, results, printed = run_grader(
        tmp_path, impl=str(PLANTED / "relu_sleepy"), ops=("relu",), checks=("correct",),
        timeout=sleepy.SECONDS_PER_CALL * 3,
    )  # fmt: skip
    assert status == 0, printed
    assert results[0].status == "passed"


def test_unwritten_element_is_caught_without_isolation(tmp_path):
    """NaN-poisoned allocations work in the grader's own process as well."""
    status, results, _ = run_grader(tmp_path, impl=str(PLANTED / "unwritten"), ops=("matmul",))
    assert status == 1
    assert "was never written" in results[0].message


# The reference's grading in two runs: the timed checks alone (marker `timing`: CI runs them after
# the other tests, so that nothing else loads the cores), every other check beside other tests.
UNTIMED = tuple(check for check in CHECKS if check not in ("speed", "agree"))


def assert_all_passed(status, results, printed):
    failed = [f"{r.op} {r.check} {r.size}: {r.message}" for r in results if r.status != "passed"]
    assert status == 0 and not failed, "\n".join(failed)
    assert printed.splitlines()[-1] == f"{len(results)} passed, 0 failed"


@pytest.mark.slow
@pytest.mark.parametrize("stage", [2, 3])
def test_reference_passes_every_check_but_speed(tmp_path, stage):
    status, results, printed = run_grader(tmp_path, stage, checks=UNTIMED)
    assert_all_passed(status, results, printed)
    assert {"correct", "nan", "grad", "dist"} <= {r.check for r in results}


@pytest.mark.slow
@pytest.mark.timing
def test_reference_stage2_passes_its_speed_policy_against_stage1(tmp_path):
    status, results, printed = run_grader(tmp_path, 2, checks=("speed",))
    assert_all_passed(status, results, printed)
    assert {r.check for r in results} == {"speed"}


@pytest.mark.slow
@pytest.mark.timing
def test_reference_stage3_passes_its_speed_policy(tmp_path):
    """The repository's stage 3: its speed on every op's speed sizes, judged on one thread
    against NumPy."""
    status, results, printed = run_grader(tmp_path, 3, checks=("speed",))
    assert_all_passed(status, results, printed)
    assert results and all("one_thread" in r.timing for r in results), printed

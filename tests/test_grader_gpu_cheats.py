"""The grader catches GPU cheats and GPU bugs: each tier under tests/planted_gpu/ is the reference
numba variant with one op gamed or broken, graded with `--impl` as a learner's would be.

The cheats that skip work (a result cached by address, a kernel on a stream the timer does not
see, timed near zero beside the busy kernel of grader/gpu_timing.py; a launch that never happens
above some size) only show on a real GPU, against the physical
floor (grader/roofline.py) and the re-check on fresh inputs (grader/speed.py); so does a missing
barrier, a race the simulator's scheduling hides. Wrong arithmetic (half precision), an element
never written and an out-of-bounds write run on the simulator too, so CI catches them.
"""

import io
import re
from pathlib import Path

import pytest

import tiers
from grader import Options, grade
from grader.run import CHECKS

PLANTED = Path(__file__).parent / "planted_gpu"
NUMBA = tiers.get("numba")
ON_GPU = not NUMBA.simulated and tiers.load(NUMBA).ok

# (planted tier, op graded, where it runs ("any" or "gpu"), the check that must fail (a pattern),
# a pattern of its message)
CHEATS = [
    ("half_precision", "matmul", "any", "correct",
     r"^matmul: y\[[\d, ]+\] expected -?[\d.]+, received -?[\d.]+; \d+ of \d+ elements differ"),
    ("unwritten", "relu", "any", "correct", r"relu: y\[[\d, ]+\] was never written"),
    # new data at a recycled address gets the old answer: the NaN check or a re-check shows it
    ("cached", "matmul", "gpu", "nan|speed",
     r"^(matmul: a NaN in|matmul: ran in [\d.]+ us, below|(on fresh inputs )?after timing)"),
    ("other_stream", "relu", "gpu", "correct|nan|determinism|speed",
     r"^relu: (ran in [\d.]+ us, below the memory bound|.*never written)"),
    ("launches_nothing", "relu", "gpu", "speed",
     r"^(relu: ran in [\d.]+ us, below the memory bound|(on fresh inputs )?after timing)"),
    ("missing_sync", "matmul", "gpu", "correct|determinism|speed",
     r"^(matmul: y\[[\d, ]+\] expected|matmul: run \d differs from run 1|after timing)"),
    # right for the shapes tried: a capped grid, grid.y past 65535, a row past an unrolled block
    ("relu_capped_grid", "relu", "any", "correct",
     r"^relu: y\[\d+, \d+\] was never written .* elements never written \[case 5 of \d+: "
     r"x\[3, 1037\]"),
    ("sigmoid_grid_y", "sigmoid", "gpu", "correct",
     r"^sigmoid: y\[65535, 0\] was never written .*x\[70001, 3\]"),
    ("softmax_unrolled_row", "softmax", "any", "correct",
     r"^softmax: y\[0, 1024\] was never written .*x\[\d+, (4097|6151)\]"),
    # an optional argument, a loss judged relative to its size, an input overwritten
    ("conv_no_dx_db_unwritten", "conv2d_backward", "gpu", "correct",  # the simulator: minutes
     r"^conv2d_backward: db\[0\] was never written .* need_dx=False\]"),
    ("mse_sixteenth_large", "mse_loss", "gpu", "speed",
     r"^(on fresh inputs )?after timing: mse_loss: loss expected [\d.]+, received [\d.e-]+ "
     r"\(tolerance"),
    ("relu_into_input", "relu", "any", "correct", r"^relu: modified its input x \(only optimizers"),
    # arguments across their domains; labels outside [0, C) refused
    ("leaky_backward_compare", "leaky_relu_backward", "any", "correct",
     r"^leaky_relu_backward: dx\[[\d, ]+\] expected .* alpha=2.5\]"),
    ("cross_entropy_clamped_labels", "cross_entropy_loss", "any", "correct",
     r"^cross_entropy_loss: accepted labels\[0\] = 10, outside \[0, C=10\); the contract "
     r"refuses it with a ValueError"),
]  # fmt: skip


def run_grader(tmp_path, cheat, op, checks=CHECKS):
    """Grade `op` of the planted tier `cheat` (only `checks`, to keep it cheap)."""
    out = io.StringIO()
    options = Options(stage=4, variant="numba", impl=str(PLANTED / cheat), ops=(op,), quick=True,
                      checks=checks, json=str(tmp_path / "g.json"))  # fmt: skip
    status, record = grade(options, out=out)
    return status, record["runs"][0]["results"], out.getvalue()


@pytest.mark.parametrize(("cheat", "op", "where", "check", "pattern"), CHEATS,
                         ids=[cheat[0] for cheat in CHEATS])  # fmt: skip
def test_a_gpu_cheat_fails_with_a_clear_message(tmp_path, cheat, op, where, check, pattern):
    if where == "gpu" and not ON_GPU:
        pytest.skip("shows only on a real GPU (timing, races): run on the GPU machine")
    status, results, printed = run_grader(tmp_path, cheat, op, tuple(check.split("|")))
    failed = [r for r in results if r.status == "failed" and re.fullmatch(check, r.check)]
    assert status == 1, printed
    assert failed, f"no failed {check} check for {op}:\n{printed}"
    assert any(re.search(pattern, r.message) for r in failed), printed
    assert "Traceback" not in printed


def test_an_out_of_bounds_write_fails(tmp_path):
    """On the simulator the write raises at once; on a GPU it lands in the allocator's slack,
    which only compute-sanitizer's memcheck sees: `python -m grader.sanitize --impl
    tests/planted_gpu/out_of_bounds --ops relu --tools memcheck`."""
    if ON_GPU:
        pytest.skip("on a GPU an overhanging write is memcheck's to find: make sanitize STAGE=4")
    status, results, printed = run_grader(tmp_path, "out_of_bounds", "relu")
    assert status == 1, printed
    assert re.search(r"relu: raised IndexError", results[0].message), printed


def test_a_missing_bounds_guard_is_reported_at_the_kernel_line(tmp_path):
    """A kernel without its `if row < n and col < m` guard: on the simulator the thread past the
    edge raises IndexError inside numba's simulated array, and the grader names the learner's
    kernel line instead (tiers.describe_exception skips Python's and the packages' frames)."""
    if ON_GPU:
        pytest.skip("on a GPU an overhanging access is memcheck's to find: make sanitize STAGE=4")
    source = PLANTED / "missing_guard_index" / "stage4_cuda" / "numba_impl" / "__init__.py"
    line = (
        source.read_text()
        .splitlines()
        .index(
            "    y[col, row] = a[row, col]  # no guard: threads past the edge index past the arrays"
        )
    )
    status, results, printed = run_grader(tmp_path, "missing_guard_index", "transpose")
    assert status == 1, printed
    where = re.escape(
        f"(at {source.relative_to(tiers.REPOSITORY)}:{line + 1} in _transpose_unguarded)"
    )
    assert re.search(rf"^transpose: raised IndexError: .* {where}", results[0].message), printed

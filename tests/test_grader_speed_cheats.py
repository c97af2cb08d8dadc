"""The speed check cannot be gamed: each tier under tests/planted/speed_* and
tests/planted_gpu/speed_* is the reference with one op that answers from a cache, leaves part of
its output unwritten where only a recycled block hides it, hands its work to another thread, or
hides it on the host behind the GPU timer's busy kernel; grading its speed must fail it with a
message that says what is wrong. Also the parts that judge: the timing loop's input changes, the
host time and unseen streams of a GPU call (grader/unseen_work.py), and the physical floor of a
small size (grader/roofline.py).

The GPU rows only show on a real GPU (the CUDA simulator times no speed); on the GPU machine:
`python -m pytest tests/test_grader_speed_cheats.py`.
"""

import io
import re
from pathlib import Path

import numpy as np
import pytest

import tiers
from grader import Options, grade
from grader.input_changes import roll_in_place
from grader.policy import STAGE2_OVER_STAGE1
from grader.roofline import Roofline, floor_problem, roofline
from grader.speed import PROFILED, PROFILER_VARIABLE, under_profiler
from grader.timing import Timing, measure, measure_in_turn
from grader.unseen_work import host_problem, other_stream_problem

TESTS = Path(__file__).parent
NUMBA = tiers.get("numba")
ON_GPU = not NUMBA.simulated and tiers.load(NUMBA).ok
AFTER_TIMING = r"^after timing: {op}: y\[[\d, ]+\] expected -?[\d.]+, received -?[\d.]+; \d+ of \d+"
# on a GPU a copy may also be timed below the physical floor, which is said first
STALE_ON_GPU = AFTER_TIMING + r"|^{op}: ran in [\d.]+ us, below"

# (planted tier, stage, op, where it runs ("any" or "gpu"), a pattern of the speed check's message)
CHEATS = [
    # a copy of the answer remembered for the same objects, the same address, the same shape
    ("planted/speed_copy_by_id", 2, "matmul", "any", AFTER_TIMING.format(op="matmul")),
    ("planted/speed_cache_by_pointer", 2, "relu", "any", AFTER_TIMING.format(op="relu")),
    ("planted/speed_cache_by_shape", 2, "tanh", "any", AFTER_TIMING.format(op="tanh")),
    ("planted/speed_c_copy_by_id", 3, "sigmoid", "any", AFTER_TIMING.format(op="sigmoid")),
    # an element never written, above the correctness cases' sizes
    ("planted/speed_tail_unwritten", 2, "sigmoid", "any",
     r"^after timing: sigmoid: y\[1023, 1023\] was never written .*; 1 of 1048576 elements never "
     r"written"),
    # a Python loop run on another thread while the calling thread waits
    ("planted/speed_other_thread", 2, "relu", "any",
     rf"^relu: too slow: [\d.]+x the speed of stage 1 \[python\], expected at least "
     rf"{STAGE2_OVER_STAGE1['relu']:.3g}x"),
    ("planted_gpu/speed_copy_by_id", 4, "matmul", "gpu", STALE_ON_GPU.format(op="matmul")),
    ("planted_gpu/speed_copy_by_pointer", 4, "sigmoid", "gpu", STALE_ON_GPU.format(op="sigmoid")),
    ("planted_gpu/speed_tail_unwritten", 4, "tanh", "gpu",
     r"^after timing: tanh: y\[[\d, ]+\] was never written .*elements never written"),
    ("planted_gpu/speed_host_round_trip", 4, "relu", "gpu",
     r"^relu: each call holds the host for [\d.]+ ms, against \d+ us for the repository's op"),
]  # fmt: skip


@pytest.mark.parametrize(("cheat", "stage", "op", "where", "pattern"), CHEATS,
                         ids=[cheat[0] for cheat in CHEATS])  # fmt: skip
def test_a_speed_cheat_fails_with_a_clear_message(tmp_path, cheat, stage, op, where, pattern):
    if where == "gpu" and not ON_GPU:
        pytest.skip("shows only on a real GPU (the simulator times no speed): run on the GPU")
    out = io.StringIO()
    options = Options(stage=stage, variant="numba" if stage == 4 else None,
                      impl=str(TESTS / cheat), ops=(op,), checks=("speed",), quick=True,
                      json=str(tmp_path / "g.json"))  # fmt: skip
    status, record = grade(options, out=out)
    printed = out.getvalue()
    failed = [r for r in record["runs"][0]["results"] if r.status == "failed"]
    assert status == 1, printed
    assert failed and all(r.check == "speed" for r in failed), printed
    assert re.search(pattern, failed[0].message), failed[0].message
    assert "Traceback" not in printed


def test_a_profiler_is_seen_by_its_injection_variable_or_its_libraries(monkeypatch, tmp_path):
    monkeypatch.delenv(PROFILER_VARIABLE, raising=False)
    assert not under_profiler()  # this process: no profiler
    maps = tmp_path / "maps"
    library = "7f00-7f10 r-xp 00000000 00:2f 17 /usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04\n"
    maps.write_text(library)
    assert not under_profiler(maps)
    for folder in ("/opt/nvidia/nsight-compute/2025.3.1/target/linux-desktop-glibc_2_11_3-x64",
                   "/usr/local/cuda-13.0/compute-sanitizer"):  # fmt: skip
        maps.write_text(library + f"7f20-7f30 r-xp 00000000 00:2f 18 {folder}/libinjection.so\n")
        assert under_profiler(maps)
    assert not under_profiler(tmp_path / "absent")  # no /proc (not Linux): no profiler seen
    monkeypatch.setenv(PROFILER_VARIABLE, "/opt/nvidia/nsight-compute/injection.so")
    assert under_profiler(tmp_path / "absent")


@pytest.mark.skipif(not ON_GPU, reason="speed verdicts are given only on a real GPU")
def test_under_a_profiler_speed_has_no_verdict_but_a_wrong_answer_fails(tmp_path, monkeypatch):
    """ncu replays each kernel: the host-time cheat's row is skipped, not failed (nor passed),
    while the stale copy still fails on its answer."""
    from numba import cuda

    cuda.current_context()  # the driver starts before the variable is set, loading nothing
    monkeypatch.setenv(PROFILER_VARIABLE, "/opt/nvidia/nsight-compute/injection.so")
    rows = {}
    for cheat, op in [("speed_host_round_trip", "relu"), ("speed_copy_by_pointer", "sigmoid")]:
        options = Options(stage=4, variant="numba", impl=str(TESTS / "planted_gpu" / cheat),
                          ops=(op,), checks=("speed",), quick=True,
                          json=str(tmp_path / f"{cheat}.json"))  # fmt: skip
        _, record = grade(options, out=io.StringIO())
        rows[cheat] = record["runs"][0]["results"]
    assert rows["speed_host_round_trip"] and all(
        r.status == "skipped" and r.message == PROFILED for r in rows["speed_host_round_trip"]
    )
    assert any(r.status == "failed" and "after timing" in r.message
               for r in rows["speed_copy_by_pointer"])  # fmt: skip


class VirtualClock:
    """A clock that moves only when told to: the seconds a test says each step takes."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def spend(self, seconds):
        self.now += seconds


@pytest.mark.skipif(not ON_GPU, reason="the host time is judged only on a real GPU")
def test_the_repositorys_own_ops_pass_through_a_planted_tier(tmp_path):
    """The control: ops a planted tier re-exports are the repository's, so their host time (the
    losses' and max-pooling's backward check labels and indices on the host) matches the
    repository's, and no input change, re-check or floor fails them."""
    ops = ("relu", "cross_entropy_loss", "hinge_loss_backward", "maxpool2d_backward")
    planted = TESTS / "planted_gpu" / "speed_copy_by_id"
    options = Options(stage=4, variant="numba", impl=str(planted), ops=ops, checks=("speed",),
                      quick=True, json=str(tmp_path / "g.json"))  # fmt: skip
    out = io.StringIO()
    status, _ = grade(options, out=out)
    assert status == 0, out.getvalue()


def test_inputs_change_before_every_timed_call_outside_the_clock():
    """A change runs before each call but the warm-up, and its own time is not counted."""
    clock, calls, changes = VirtualClock(), [], []

    def call():
        calls.append(1)
        clock.spend(1e-6)
        return len(calls)

    def change():
        changes.append(len(calls))
        clock.spend(1e-3)

    timing, result = measure(call, lambda: None, quick=True, change=change, clock=clock)
    assert changes == list(range(2, len(calls)))  # after the two warm-up calls of a fast call
    assert result == len(calls) and timing.batch > 1
    assert timing.median == pytest.approx(1e-6)


def test_a_changed_call_is_timed_in_turn_with_an_unchanged_one():
    clock, order = VirtualClock(), []
    changed = (lambda: order.append("changed") or clock.spend(1e-6), lambda: None,
               lambda: clock.spend(1e-3))  # fmt: skip
    unchanged = (lambda: order.append("unchanged") or clock.spend(2e-6), lambda: None)
    (first, second), _ = measure_in_turn([changed, unchanged], quick=True, clock=clock)
    assert first.repeats == second.repeats >= 3
    assert order[4 : 4 + first.batch + second.batch] == (
        ["changed"] * first.batch + ["unchanged"] * second.batch
    )
    assert first.median == pytest.approx(1e-6) and second.median == pytest.approx(2e-6)


def test_rolling_changes_every_float_element_in_place_and_no_integer():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    labels = np.arange(4)
    nested = [[1.0, 2.0], [3.0, 4.0]]
    row = nested[0]
    roll_in_place((x, labels))
    roll_in_place(nested)
    roll_in_place(3.5)  # a scalar: nothing to change
    assert x.tolist() == [[5, 0, 1], [2, 3, 4]]
    assert labels.tolist() == [0, 1, 2, 3]
    assert nested == [[4.0, 1.0], [2.0, 3.0]] and nested[0] is row


def gpu_timing(device, host, synchronous=None):
    """A Timing as measure_gpu returns it: device seconds per call, host seconds, synchronous."""
    return Timing(device, device, device, device, device, 5, 1, host, synchronous)


def test_a_call_that_holds_the_host_far_beyond_the_repositorys_fails():
    """The audit's figures: 8 ms on the host per call, two copies on the device, 37 us for the
    repository's op."""
    problem = host_problem(gpu_timing(20e-6, 8e-3), repository_host=37e-6)
    assert re.fullmatch(
        r"each call holds the host for 8\.0 ms, against 37 us for the repository's op on the same "
        r"arguments \(at most 1\.1 ms allowed\), while the device works 20 us: the op's work is "
        r"done on the host, or waited for there, not in a kernel on the timed stream",
        problem,
    )


@pytest.mark.parametrize(
    ("device", "host", "repository"),
    [
        (20e-6, 8e-3, None),  # the repository's own op is graded: nothing to compare with
        (275e-6, 41e-3, 40e-3),  # the repository's loss checks its labels on the host too
        (20e-6, 900e-6, 40e-6),  # a learner's extra launches: within the allowance
        (5e-3, 8e-3, 40e-6),  # the device works longer than a quarter of the host's time
    ],
)
def test_a_host_time_like_the_repositorys_or_the_devices_passes(device, host, repository):
    assert host_problem(gpu_timing(device, host), repository) is None


def test_work_on_a_stream_the_events_do_not_see_fails():
    """A matmul done on a non-blocking stream beside a decoy of 1.5 ms on the timed one: up to a
    device-wide synchronize the call takes 20 ms."""
    problem = other_stream_problem(gpu_timing(1.5e-3, 60e-6, synchronous=20e-3))
    assert re.fullmatch(
        r"a call takes 20\.0 ms up to a device-wide synchronize, but only 60 us on the host and "
        r"1\.5 ms on the timed stream: 18\.4 ms of work on a stream the timer does not see .*",
        problem,
    )
    assert other_stream_problem(gpu_timing(1.5e-3, 60e-6, synchronous=1.6e-3)) is None
    assert other_stream_problem(gpu_timing(275e-6, 41e-3, synchronous=43e-3)) is None


def test_the_physical_floor_of_a_small_size_is_an_empty_kernels_launch():
    """matmul 256^3 on an H100: a bound of 0.65 us, far below what any launch takes."""
    bound, launch = 0.65e-6, 2.5e-6
    line = lambda seconds: Roofline(bound, "compute", bound / seconds)  # noqa: E731
    assert floor_problem(line(14.7e-6), launch) is None
    assert re.fullmatch(
        r"ran in 1\.0 us, below the 2\.5 us of an empty kernel's launch on this device: work "
        r"skipped, a cached result, or output written later on another stream",
        floor_problem(line(1.0e-6), launch),
    )
    large = Roofline(100e-6, "memory", 100e-6 / 50e-6)
    assert floor_problem(large, launch).startswith("ran in 50.0 us, below the memory bound of 100")


def test_an_int8_gemm_is_bounded_by_the_int8_ceiling_not_fp32s():
    """int8_linear at 4096^3 on the H200's int8 tensor cores: 1.84 ms, 74.7 T int8 operations a
    second, past the FP32 ceiling (51.3 TFLOP/s) but far under the int8 one: not too fast. The
    same time against the FP32 ceiling (the bound of an op not marked integer_work) fails, and
    an int8 kernel past the int8 ceiling still fails."""
    from grader.ceilings import Ceilings
    from grader.ops import OPS

    assert OPS["int8_linear"].integer_work and not OPS["matmul"].integer_work
    ceilings = Ceilings("H200", 4.27e12, 51.3e12, "cuBLAS SGEMM", 2.75e-6, 600e12, "cuBLAS int8")
    operations, moved, seconds = 2 * 4096**3, 3 * 4096**2, 1.84e-3
    assert floor_problem(roofline(operations, moved, seconds, ceilings, True), 2.75e-6) is None
    assert "the compute bound" in floor_problem(roofline(operations, moved, seconds, ceilings),
                                                2.75e-6)  # fmt: skip
    assert "the compute bound" in floor_problem(
        roofline(operations, moved, 0.1e-3, ceilings, True), 2.75e-6)
    # without an int8 ceiling (no PyTorch), the bytes alone bound it
    unmeasured = Ceilings("H200", 4.27e12, 51.3e12, "cuBLAS SGEMM", 2.75e-6)
    line = roofline(operations, moved, seconds, unmeasured, True)
    assert line.limited_by == "memory" and floor_problem(line, 2.75e-6) is None

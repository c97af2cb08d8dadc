"""The grader's comparison, gradient estimate, poisoning and timing building blocks."""

import time

import numpy as np
import pytest
from conftest import load_tier

from grader import gradients, timing
from grader.compare import dtype_problem, mismatch
from grader.poison import poisoned_allocations
from grader.tolerance import Tolerance

TOL = Tolerance(rtol=1e-5, atol=1e-6)


def test_close_values_pass():
    expected = np.random.default_rng(0).standard_normal((3, 4))
    assert mismatch("op", "y", expected * (1 + 1e-7), expected, TOL) is None


def test_message_names_op_output_index_values_and_count():
    expected = np.arange(12.0).reshape(3, 4)
    received = expected.copy()
    received[1, 2] = 99.0
    received[2, 3] = -1.0
    message = mismatch("matmul", "y", received, expected, TOL)
    assert message.startswith("matmul: y[1, 2] expected 6, received 99; 2 of 12 elements differ")


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_and_inf_never_pass(bad):
    expected = np.ones(5)
    received = expected.copy()
    received[3] = bad
    assert "y[3]" in mismatch("op", "y", received, expected, TOL)
    both = np.full(5, bad)
    assert mismatch("op", "y", both, both, TOL) is not None  # even NaN against NaN, Inf vs Inf


def test_shape_and_dtype_problems_are_reported():
    assert "has shape [3, 2], expected [2, 3]" in mismatch("op", "y", np.ones((3, 2)),
                                                           np.ones((2, 3)), TOL)  # fmt: skip
    assert dtype_problem("op", "y", np.ones(2), 32) == "op: y must be float32, got float64"
    assert dtype_problem("op", "y", np.ones(2), 64) is None
    assert "int64" in dtype_problem("op", "argmax", np.ones(2, np.float32), 32)
    assert "int64, got int32" in dtype_problem("op", "argmax", np.ones(2, np.int32), 32)


def test_integer_outputs_must_match_exactly():
    assert mismatch("op", "argmax", np.array([0, 2]), np.array([0, 1])).startswith(
        "op: argmax[1] expected 1, received 2"
    )


def test_central_differences_match_a_known_derivative():
    arrays = {"x": np.array([0.5, -1.25, 2.0])}
    estimate = gradients.central_differences(
        lambda a: float(np.sum(a["x"] ** 3)), arrays, "x", np.arange(3)
    )
    np.testing.assert_allclose(estimate, 3 * arrays["x"] ** 2, rtol=1e-8)
    np.testing.assert_array_equal(arrays["x"], [0.5, -1.25, 2.0])  # restored afterwards


def test_sampled_indices_keep_both_ends():
    indices = gradients.sample_indices(1000, 10, np.random.default_rng(0))
    assert len(indices) == 10 and indices[0] == 0 and indices[-1] == 999
    assert list(gradients.sample_indices(5, 10, np.random.default_rng(0))) == [0, 1, 2, 3, 4]


def test_poisoned_allocations_also_fill_numpy_allocations_and_restore_numpy():
    """Code that bypasses the tier's hook (a learner's np.empty) is poisoned too; tests/
    test_registry.py checks the hook itself on every tier."""
    real_empty = np.empty
    with poisoned_allocations(load_tier("numpy")):
        assert np.all(np.isnan(np.empty((2, 3), dtype=np.float32)))
        assert np.all(np.empty_like(np.zeros(4, np.int64)) == np.iinfo(np.int64).min)
    assert np.empty is real_empty


def test_measure_reports_median_and_spread():
    result_timing, result = timing.measure(lambda: time.sleep(0.002) or 7, lambda: None, quick=True)
    assert result == 7
    assert result_timing.repeats >= 3 and result_timing.batch == 1
    assert 0.002 <= result_timing.min <= result_timing.median <= result_timing.max
    assert result_timing.q1 <= result_timing.median <= result_timing.q3


def test_calls_timed_in_turn_alternate_and_process_time_skips_waiting():
    """measure_in_turn times one batch of each call in turn; on the process's CPU clock a call
    that only waits (as a job does while other jobs hold the cores) costs next to nothing."""
    order = []
    busy_seconds = 1.2 * timing.BATCH_SECONDS  # a batch of one call

    def busy():
        order.append("busy")
        end = time.process_time() + busy_seconds
        while time.process_time() < end:
            pass

    def waiting():
        order.append("waiting")
        time.sleep(0.0002)

    calls = [(busy, lambda: None), (waiting, lambda: None)]
    (busy_time, waiting_time), _ = timing.measure_in_turn(calls, quick=True,
                                                          clock=time.process_time)  # fmt: skip
    batch = waiting_time.batch
    assert busy_time.repeats == waiting_time.repeats >= 3 and busy_time.batch == 1
    # after the warm-up (a fast call is called twice, its batch sized on the warm second call):
    # a batch of each in turn
    assert order[:3] == ["busy", "waiting", "waiting"]
    assert order[3 : 5 + 2 * batch] == (["busy"] + ["waiting"] * batch) * 2
    assert busy_time.median >= busy_seconds
    assert waiting_time.median < 0.0001

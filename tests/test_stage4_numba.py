"""Stage 4, numba variant: every op against stage 2 at tiny sizes, each rung of the ladders, the
random stream by value and by distribution, outputs poisoned with NaN, bad input refused.

Runs under numba's CUDA simulator (`make test` sets NUMBA_ENABLE_CUDASIM=1), where one CUDA
thread is one Python thread: sizes stay tiny but are not multiples of any tile or block, so every
bounds check runs. On a GPU (NUMBA_ENABLE_CUDASIM=0) the same tests run on the device, with the
warp-shuffle rung too.
"""

import math

import numpy as np
import pytest
from conftest import load_tier
from stage4_ops import (
    BACKWARDS,
    FORWARDS,
    assert_close,
    backward_args,
    check_backward,
    check_forward,
    run_both,
)

import stage2_numpy as reference
from grader import inputs

# numba warns about grids too small to fill a GPU: at these sizes they are meant to be small
pytestmark = [pytest.mark.week14, pytest.mark.filterwarnings("ignore:Grid size")]


@pytest.fixture(scope="module")
def gpu():
    return load_tier("numba")


@pytest.mark.parametrize("op_name", FORWARDS)
def test_forward_matches_stage_2(gpu, rng, op_name):
    check_forward(gpu, rng, op_name)




@pytest.mark.parametrize("op_name", BACKWARDS)
def test_backward_matches_stage_2(gpu, rng, op_name):
    check_backward(gpu, rng, op_name)


def test_conv2d_backward_without_dx(gpu, rng):
    args = backward_args(rng, "conv2d_backward")
    received, expected, _ = run_both(gpu, "conv2d_backward", args, need_dx=False)
    assert received[0] is None
    assert_close("conv2d_backward", received[1:], expected[1:], args)


@pytest.mark.week15
@pytest.mark.parametrize(
    "kernel",
    [
        "naive",
        "coalesced",
        "tiled",
        "register_1d",
        "register_2d",
        "register_2d_prefetch",
        "register_2d_vector",
    ],
)
def test_each_matmul_rung(gpu, rng, kernel):
    assert kernel in gpu.MATMUL_KERNELS
    for n, k, m in ((5, 7, 9), (33, 9, 130)):  # crosses a 32-tile and a 128-tile edge
        args = {"a": inputs.normal(rng, (n, k)), "b": inputs.normal(rng, (k, m))}
        received, expected, _ = run_both(gpu, "matmul", args, kernel=kernel)
        assert_close("matmul", received, expected, args, f" ({kernel})")


@pytest.mark.parametrize("kernel", ["naive", "tree", "shuffle"])
@pytest.mark.parametrize("op_name", ["softmax", "log_softmax"])
def test_each_softmax_rung(gpu, rng, kernel, op_name):
    if kernel == "shuffle" and gpu.available()[1]:
        with pytest.raises(NotImplementedError, match="simulator"):
            getattr(gpu, op_name)(gpu.from_numpy(inputs.normal(rng, (2, 3))), kernel=kernel)
        pytest.skip("warp shuffles do not exist in the CUDA simulator")
    for n, c, scale, offset in ((3, 37, 3.0, 0.0), (2, 5, 50.0, 1000.0)):
        args = {"x": inputs.normal(rng, (n, c), scale, offset)}
        received, expected, _ = run_both(gpu, op_name, args, kernel=kernel)
        assert_close(op_name, received, expected, args, f" ({kernel})")


@pytest.mark.parametrize("kernel", ["naive", "tree"])
def test_each_sum_rows_rung(gpu, rng, kernel):
    args = {"x": inputs.normal(rng, (37, 3))}
    received, expected, _ = run_both(gpu, "sum_rows", args, kernel=kernel)
    assert_close("sum_rows", received, expected, args, f" ({kernel})")


def test_loss_stays_on_the_device_until_read(gpu, rng):
    logits = inputs.normal(rng, (4, 3))
    labels = inputs.labels(rng, 4, 3)
    loss = gpu.cross_entropy_loss(gpu.from_numpy(logits), gpu.from_numpy(labels))
    assert isinstance(loss, gpu.DeviceScalar)
    assert gpu.to_numpy(loss).shape == ()
    expected = reference.cross_entropy_loss(logits, labels)
    assert math.isclose(float(loss), expected, rel_tol=1e-5)


def test_dropout_keeps_a_share_of_one_minus_p(gpu):
    x = gpu.from_numpy(np.ones((100, 60), np.float32))
    _, mask = gpu.dropout_forward(x, 0.3, 12345)
    kept = gpu.to_numpy(mask).mean()
    assert abs(kept - 0.7) < 4 * math.sqrt(0.21 / 6000)  # 4 standard deviations


def test_init_draws_the_contract_distributions(gpu):
    uniform = gpu.to_numpy(gpu.xavier_uniform((60, 50), 7)).ravel()
    bound = math.sqrt(6 / 110)
    assert np.abs(uniform).max() <= bound
    assert abs(uniform.mean()) < 4 * bound / math.sqrt(3 * 3000)
    normal = gpu.to_numpy(gpu.he_normal((60, 50), 8)).ravel() / math.sqrt(2 / 50)
    assert abs(normal.mean()) < 4 / math.sqrt(3000)
    assert abs(normal.std() - 1) < 0.06


def test_host_array_is_refused_naming_the_argument(gpu):
    a = gpu.from_numpy(np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match=r"matmul: b must be a device array"):
        gpu.matmul(a, np.ones((3, 2), np.float32))


def test_available_says_simulator_under_the_simulator(gpu):
    import os

    ok, reason = gpu.available()
    assert ok
    assert ("simulator" in reason) == (os.environ.get("NUMBA_ENABLE_CUDASIM") == "1")

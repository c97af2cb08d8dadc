"""The error bounds of stage4_cuda/conv_accuracy.py, on the CPU: the bounds of Winograd's
F(4x4, 3x3) forward (csrc/conv/06_winograd_4x4.cu) and weight gradients (F(3x3, 2x2) and
F(3x3, 4x4), csrc/conv/backward_dw.cu) cover a float32 run of the same algorithms, yet stay far
below what an indexing mistake gets wrong. The GPU tests (test_stage4_nvcc.py) hold the kernels to
these bounds."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from stage4_cuda import conv_accuracy  # noqa: E402

pytestmark = pytest.mark.oracle

# (N, C, K, H, padding): the Fashion CNN's conv2, padded layers, an odd output (blocks past it)
SHAPES = [(4, 64, 128, 13, 0), (2, 16, 17, 9, 1), (1, 16, 16, 5, 2)]


def _layer(shape):
    """x, w, b and dy of a 3x3 stride-1 layer, float64, standard normal."""
    n, c, k, size, padding = shape
    out = size + 2 * padding - 2
    rng = np.random.default_rng(3)
    sizes = [(n, c, size, size), (k, c, 3, 3), (k,), (n, k, out, out)]
    return [torch.from_numpy(rng.standard_normal(s)) for s in sizes]


def _within_but_far_below_a_wrong_tap(received, shifted, exact, bound):
    """`received` (float32's run) is within the bound and well inside it; `shifted` (the same on
    x shifted by one column: a wrong tap) is off by far more than the bound almost everywhere."""
    error = (received.double() - exact).abs()
    assert (error <= bound).all()
    assert (error / bound).max() < 0.1  # float32 stays well inside it
    assert ((shifted.double() - exact).abs() > bound).float().mean() > 0.9


@pytest.mark.parametrize("shape", SHAPES)
def test_winograd_4x4_forward_stays_within_its_bound(shape):
    x, w, b, _ = _layer(shape)
    padding = shape[4]
    exact = torch.nn.functional.conv2d(x, w, b, 1, padding)
    bound = conv_accuracy.forward_bound("winograd_4x4", x, w, b, 1, padding)
    x32, w32, b32 = x.float(), w.float(), b.float()
    y = conv_accuracy.winograd_4x4_forward(x32, w32, b32, padding)
    shifted = conv_accuracy.winograd_4x4_forward(torch.roll(x32, 1, dims=3), w32, b32, padding)
    _within_but_far_below_a_wrong_tap(y, shifted, exact, bound)


@pytest.mark.parametrize("block", [2, 4])
@pytest.mark.parametrize("shape", SHAPES)
def test_winograd_weight_gradient_stays_within_its_bound(shape, block):
    x, w, _, dy = _layer(shape)
    k, padding = w.shape[0], shape[4]
    exact_dx, exact, _ = torch.ops.aten.convolution_backward(
        dy, x, w, [k], [1, 1], [padding] * 2, [1, 1], False, [0, 0], 1, [True, True, True]
    )
    blocks = (block, block)
    dx_bound, bound, _ = conv_accuracy.backward_bound(x, w, dy, 1, padding, winograd=blocks)
    x32, dy32 = x.float(), dy.float()
    dw = conv_accuracy.winograd_weight_gradient(x32, dy32, padding, block=block)
    x_shifted = torch.roll(x32, 1, dims=3)
    shifted = conv_accuracy.winograd_weight_gradient(x_shifted, dy32, padding, block=block)
    _within_but_far_below_a_wrong_tap(dw, shifted, exact, bound)
    if block == 4:  # and dx by F(4x4, 3x3): dy through the turned filters
        turned = w.float().transpose(0, 1).flip((2, 3))
        dx = conv_accuracy.winograd_4x4_forward(dy32, turned, None, 2 - padding)
        assert ((dx.double() - exact_dx).abs() <= dx_bound).all()

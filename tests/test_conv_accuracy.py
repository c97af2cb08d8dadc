"""The error bounds of stage4_cuda/conv_accuracy.py, on the CPU: the bound of Winograd's weight
gradient (F(3x3, 2x2), csrc/conv/backward.cu) covers a float32 run of the same algorithm, yet stays
far below what an indexing mistake gets wrong. The GPU tests (test_stage4_nvcc.py) hold the kernels
to these bounds."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from stage4_cuda import conv_accuracy  # noqa: E402


# (N, C, K, H, padding): the Fashion CNN's conv2, padded layers, an odd output (blocks past it)
@pytest.mark.parametrize("shape", [(4, 64, 128, 13, 0), (2, 16, 17, 9, 1), (1, 16, 16, 5, 2)])
def test_winograd_weight_gradient_stays_within_its_bound(shape):
    n, c, k, size, padding = shape
    out = size + 2 * padding - 2
    rng = np.random.default_rng(3)
    x = torch.from_numpy(rng.standard_normal((n, c, size, size)))
    dy = torch.from_numpy(rng.standard_normal((n, k, out, out)))
    w = torch.zeros(k, c, 3, 3, dtype=torch.float64)
    _, exact, _ = torch.ops.aten.convolution_backward(
        dy, x, w, [k], [1, 1], [padding] * 2, [1, 1], False, [0, 0], 1, [False, True, True]
    )
    _, bound, _ = conv_accuracy.backward_bound(x, w, dy, 1, padding, winograd=True)
    dw = conv_accuracy.winograd_weight_gradient(x.float(), dy.float(), padding).double()
    assert ((dw - exact).abs() <= bound).all()
    assert ((dw - exact).abs() / bound).max() < 0.1  # float32 stays well inside it
    # a wrong tap (x shifted by one column) is off by far more than the bound almost everywhere
    x_shifted = torch.roll(x.float(), 1, dims=3)
    shifted = conv_accuracy.winograd_weight_gradient(x_shifted, dy.float(), padding).double()
    assert ((shifted - exact).abs() > bound).float().mean() > 0.9

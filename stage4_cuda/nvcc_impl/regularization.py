"""Dropout (csrc/dropout.cu, week 16): element i is kept when uniform(seed, i) >= p, from the
shared random stream, so the mask equals every other tier's for the same seed."""

from ..runtime import device
from ._checks import checks
from ._library import call


def dropout_forward(x, p, seed):
    """-> (y, mask): y = x * mask / (1 - p), mask[i] = 1.0 where uniform(seed, i) >= p."""
    x, p, seed = checks.dropout_forward(x, p, seed)
    y, mask = device.empty(x.shape), device.empty(x.shape)
    call("s2c_cuda_dropout_forward", x, y, mask, x.size, p, seed)
    return y, mask


def dropout_backward(dy, mask, p):
    """dy * mask / (1 - p)."""
    dy, mask, p = checks.dropout_backward(dy, mask, p)
    dx = device.empty(dy.shape)
    call("s2c_cuda_dropout_backward", dy, mask, dx, dy.size, p)
    return dx

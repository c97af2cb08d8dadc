"""Dropout (week 16): element i is kept when uniform(seed, i) >= p, from the shared random stream
(random_stream.py), so the mask equals every other tier's for the same seed; kept elements are
scaled by 1 / (1 - p)."""

import numpy as np
from numba import cuda, float32

from ..runtime import device
from ..runtime.checks import checks
from ..runtime.device import flat
from ..runtime.launch import launch_elementwise
from . import random_stream as stream

ONE = float32(1)
ZERO = float32(0)


@cuda.jit
def _dropout(x, p, seed, y, mask):
    # BEGIN SOLUTION week 16, task dropout_forward
    i = cuda.grid(1)
    if i < y.size:
        keep = stream.uniform(stream.key(seed), i) >= p  # float64 p: the exact threshold
        mask[i] = ONE if keep else ZERO
        y[i] = x[i] * mask[i] / float32(1.0 - p)
    # END SOLUTION


@cuda.jit
def _dropout_backward(dy, mask, p, dx):
    # BEGIN SOLUTION week 16, task dropout_backward
    i = cuda.grid(1)
    if i < dx.size:
        dx[i] = dy[i] * mask[i] / float32(1.0 - p)
    # END SOLUTION


def dropout_forward(x, p, seed):
    """-> (y, mask): y = x * mask / (1 - p), mask[i] = 1.0 where uniform(seed, i) >= p."""
    x, p, seed = checks.dropout_forward(x, p, seed)
    y, mask = device.empty(x.shape), device.empty(x.shape)
    # p stays float64: rounded to float32 it could move across a value of the stream
    launch_elementwise(
        _dropout, x.size, flat(x), np.float64(p), np.uint64(seed), flat(y), flat(mask)
    )
    return y, mask


def dropout_backward(dy, mask, p):
    """dy * mask / (1 - p)."""
    dy, mask, p = checks.dropout_backward(dy, mask, p)
    dx = device.empty(dy.shape)
    launch_elementwise(_dropout_backward, dy.size, flat(dy), flat(mask), np.float64(p), flat(dx))
    return dx

"""Inverted dropout (week 6): drop each element with probability p, scale the kept by 1 / (1 - p)
so that the expected output equals the input; evaluation then needs no change."""

import math

from ._checks import checks, tensor_shape
from ._tensor import map_elements, reshape
from .random_stream import uniform


def dropout_forward(x, p, seed):
    """x any shape, 0 <= p < 1 -> (y, mask), both x's shape.

    Element i (flat row-major index) is kept (mask 1.0) when uniform(seed, i) >= p, else dropped
    (mask 0.0): every tier draws the same mask for the same seed. y = x * mask / (1 - p).
    """
    x, p, seed = checks.dropout_forward(x, p, seed)
    shape = tensor_shape(x)
    # BEGIN SOLUTION week 6, task dropout_forward
    keep = [1.0 if uniform(seed, i) >= p else 0.0 for i in range(math.prod(shape))]
    mask = reshape(keep, shape)
    y = map_elements(lambda value, kept: value * kept / (1.0 - p), x, mask)
    return y, mask
    # END SOLUTION


def dropout_backward(dy, mask, p):
    """dy * mask / (1 - p); dy and mask (from the forward) one shape (any), 0 <= p < 1."""
    dy, mask, p = checks.dropout_backward(dy, mask, p)
    # BEGIN SOLUTION week 6, task dropout_backward
    return map_elements(lambda grad, kept: grad * kept / (1.0 - p), dy, mask)
    # END SOLUTION

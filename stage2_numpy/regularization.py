"""Inverted dropout (week 8): drop each element with probability p, scale the kept ones by
1 / (1 - p) so the expected output equals the input.

Element i (flat row-major index) is kept when uniform(seed, i) >= p: every tier draws the same
mask for the same seed.
"""

import numpy as np

from ._checks import checks
from .random_stream import uniform


def dropout_forward(x, p, seed):
    """x any shape, 0 <= p < 1, seed an int >= 0 -> (y, mask), both x's shape.

    mask is 1.0 where the element is kept and 0.0 where dropped; y = x * mask / (1 - p).
    """
    x, p, seed = checks.dropout_forward(x, p, seed)
    # BEGIN SOLUTION week 8, task dropout_forward
    keep = uniform(seed, np.arange(x.size)).reshape(x.shape) >= p
    mask = keep.astype(np.float32)
    y = x * mask
    y *= 1 / (1 - p)
    return y, mask
    # END SOLUTION


def dropout_backward(dy, mask, p):
    """dy * mask / (1 - p): dy and mask have one shape, 0 <= p < 1."""
    dy, mask, p = checks.dropout_backward(dy, mask, p)
    # BEGIN SOLUTION week 8, task dropout_backward
    dx = dy * mask
    dx *= 1 / (1 - p)
    return dx
    # END SOLUTION

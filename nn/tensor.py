"""What `nn` needs of a native array beyond the op contract: its shape, a reshape, constants.

The contract has no reshape or fill op, so these use what every tier's native array offers: NumPy
and device arrays have `.shape` and `.reshape`; stage 1's nested lists are measured by walking them
and reshaped through `to_numpy`/`from_numpy` (stage 1 is slow anyway; on the other tiers a reshape
is a view and costs nothing).
"""

import numpy as np


def shape_of(x):
    """The shape of native array `x` as a tuple of ints."""
    if hasattr(x, "shape"):
        return tuple(int(d) for d in x.shape)
    shape = []
    while isinstance(x, list):
        shape.append(len(x))
        x = x[0] if x else None
    return tuple(shape)


def reshape(tier, x, shape):
    """Native array `x` with the same elements in row-major order, viewed as `shape`."""
    if hasattr(x, "reshape"):
        return x.reshape(shape)
    return tier.from_numpy(tier.to_numpy(x).reshape(shape))


def full(tier, shape, value):
    """A new native float array of `shape` filled with `value`."""
    return tier.from_numpy(np.full(shape, value, dtype=np.float32))

"""Weight initialization from the shared random stream (week 4).

Fans as PyTorch: fan_in = shape[1] * prod(shape[2:]), fan_out = shape[0] * prod(shape[2:]), so a
dense weight [out, in] has fan_in = in and a conv weight [K, C, R, S] has fan_in = C*R*S.
Element i (flat row-major index) uses stream number i, so every tier gives the same weights.
"""

import math

from ._checks import checks
from ._tensor import reshape
from .random_stream import normal, uniform


def _fans(shape):
    """(fan_in, fan_out) of a weight shape; a 1-D shape has fan_in = fan_out = shape[0]."""
    # BEGIN SOLUTION week 4, task fans
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive_field = math.prod(shape[2:])  # 1 for a dense weight
    return shape[1] * receptive_field, shape[0] * receptive_field
    # END SOLUTION


def xavier_uniform(shape, seed):
    """A new tensor of `shape` (a tuple), uniform in [-bound, bound), bound = sqrt(6 / (fan_in +
    fan_out)): element i is (2 * uniform(seed, i) - 1) * bound (Glorot and Bengio, 2010)."""
    shape, seed = checks.xavier_uniform(shape, seed)
    # BEGIN SOLUTION week 4, task xavier_uniform
    fan_in, fan_out = _fans(shape)
    bound = math.sqrt(6.0 / (fan_in + fan_out))
    values = [(2.0 * uniform(seed, i) - 1.0) * bound for i in range(math.prod(shape))]
    return reshape(values, shape)
    # END SOLUTION


def he_normal(shape, seed):
    """A new tensor of `shape` (a tuple), normal with std sqrt(2 / fan_in): element i is
    normal(seed, i) * sqrt(2 / fan_in) (He et al., 2015: keeps the variance through ReLUs)."""
    shape, seed = checks.he_normal(shape, seed)
    # BEGIN SOLUTION week 4, task he_normal
    fan_in, _ = _fans(shape)
    std = math.sqrt(2.0 / fan_in)
    return reshape([normal(seed, i) * std for i in range(math.prod(shape))], shape)
    # END SOLUTION

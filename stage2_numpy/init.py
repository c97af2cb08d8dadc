"""Weight initialization from the shared random stream (week 7).

Computed in float64, then stored as float32, so every tier gives the same weights for the same
seed (to float32 rounding). Fans as PyTorch: fan_in = shape[1] * prod(shape[2:]),
fan_out = shape[0] * prod(shape[2:]); a 1-D shape has fan_in = fan_out = shape[0].
"""

import math

import numpy as np

from ._checks import checks
from .random_stream import normal, uniform


def fans(shape):
    """(fan_in, fan_out) of a weight of `shape`, as PyTorch computes them."""
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive_field = math.prod(shape[2:])  # 1 for a dense [out, in] weight
    return shape[1] * receptive_field, shape[0] * receptive_field


def xavier_uniform(shape, seed):
    """Glorot-uniform weights: a new float32 array of `shape` (a tuple).

    Element i = (2 * uniform(seed, i) - 1) * sqrt(6 / (fan_in + fan_out)).
    """
    shape, seed = checks.xavier_uniform(shape, seed)
    # BEGIN SOLUTION week 7, task xavier_uniform
    fan_in, fan_out = fans(shape)
    bound = math.sqrt(6 / (fan_in + fan_out))
    weights = (2 * uniform(seed, np.arange(math.prod(shape))) - 1) * bound
    return weights.astype(np.float32).reshape(shape)
    # END SOLUTION


def he_normal(shape, seed):
    """He-normal weights (for ReLU networks): a new float32 array of `shape` (a tuple).

    Element i = normal(seed, i) * sqrt(2 / fan_in).
    """
    shape, seed = checks.he_normal(shape, seed)
    # BEGIN SOLUTION week 7, task he_normal
    fan_in, _ = fans(shape)
    weights = normal(seed, np.arange(math.prod(shape))) * math.sqrt(2 / fan_in)
    return weights.astype(np.float32).reshape(shape)
    # END SOLUTION

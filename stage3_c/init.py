"""Weight initialization (week 12, csrc/init.c) on the shared random stream, so every tier gives
the same weights for the same seed (to float32 rounding). Fans as PyTorch: fan_in = shape[1] *
prod(shape[2:]), fan_out = shape[0] * prod(shape[2:]); a 1-D shape has fan_in = fan_out =
shape[0]."""

import math

from ._checks import checks, new_output
from ._native import call, pointer


def _fans(shape):
    """(fan_in, fan_out) of a weight shape."""
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive_field = math.prod(shape[2:])
    return shape[1] * receptive_field, shape[0] * receptive_field


def xavier_uniform(shape, seed):
    """A new float32 array of `shape`: element i is (2 * uniform(seed, i) - 1) * sqrt(6 /
    (fan_in + fan_out))."""
    op = "xavier_uniform"
    shape, seed = checks.xavier_uniform(shape, seed)
    fan_in, fan_out = _fans(shape)
    out = new_output(op, shape)
    call("s2c_xavier_uniform", pointer(out), out.size, fan_in, fan_out, seed)
    return out


def he_normal(shape, seed):
    """A new float32 array of `shape`: element i is normal(seed, i) * sqrt(2 / fan_in)."""
    op = "he_normal"
    shape, seed = checks.he_normal(shape, seed)
    fan_in, _ = _fans(shape)
    out = new_output(op, shape)
    call("s2c_he_normal", pointer(out), out.size, fan_in, seed)
    return out

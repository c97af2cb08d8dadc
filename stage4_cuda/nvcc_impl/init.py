"""Weight initialization (csrc/init.cu, week 14) from the shared random stream: the weights equal
every other tier's for the same seed. The fans, and so the bound or the standard deviation, are
the runtime's (`fans`, as PyTorch computes them), as in the numba variant."""

import math

from ..runtime import device
from ..runtime.fans import fans
from ._checks import checks
from ._library import call


def _init(function, shape, seed, spread):
    """A new [shape] array filled by `function` with numbers scaled by spread(fan_in, fan_out)."""
    w = device.empty(shape)
    call(function, w, w.size, seed, spread(*fans(shape)))
    return w


def xavier_uniform(shape, seed):
    """Uniform in [-a, a], a = sqrt(6 / (fan_in + fan_out)): a new float32 device array."""
    return _init("s2c_cuda_xavier_uniform", *checks.xavier_uniform(shape, seed),
                 lambda fan_in, fan_out: math.sqrt(6 / (fan_in + fan_out)))


def he_normal(shape, seed):
    """Normal with standard deviation sqrt(2 / fan_in): a new float32 device array."""
    return _init("s2c_cuda_he_normal", *checks.he_normal(shape, seed),
                 lambda fan_in, _: math.sqrt(2 / fan_in))

"""Planted bug: relu computes in place, into its input, and returns a copy of it."""

from stage4_cuda import numba_impl as _numba
from stage4_cuda.runtime.device import empty
from tests.planted_gpu.reference import *  # noqa: F403


def relu(x):
    y = _numba.relu(x)
    x.copy_to_device(y)
    result = empty(x.shape)
    result.copy_to_device(x)
    return result

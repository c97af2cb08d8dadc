"""Planted cheat: sigmoid keeps the last answer for each input address and shape, and answers a
call on the same buffer with a device copy of it (a new array each time, so no memory is shared):
right for an input never written again, wrong once new contents arrive in the same buffer."""

from stage4_cuda.numba_impl import activations
from tests.planted_gpu.reference import *  # noqa: F403

_answers = {}


def sigmoid(x):
    key = (x.device_ctypes_pointer.value, x.shape)
    if key not in _answers:
        _answers[key] = activations.sigmoid(x)
    copy = empty(x.shape)  # noqa: F405
    copy.copy_to_device(_answers[key])
    return copy

"""Planted cheat: matmul keeps each result, keyed by its inputs' device pointers, and answers a
repeated call with a copy: correct for unchanged inputs, far faster than any product, and wrong as
soon as new data arrives at a recycled address."""

from stage4_cuda.numba_impl import linalg
from tests.planted_gpu.reference import *  # noqa: F403

_answers = {}


def matmul(a, b, kernel="best"):
    key = (a.device_ctypes_pointer.value, b.device_ctypes_pointer.value, a.shape, b.shape)
    if key not in _answers:
        _answers[key] = linalg.matmul(a, b, kernel)
    answer = _answers[key]
    copy = empty(answer.shape)  # noqa: F405
    copy.copy_to_device(answer)
    return copy

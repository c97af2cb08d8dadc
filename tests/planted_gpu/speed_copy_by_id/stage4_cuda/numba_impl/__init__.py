"""Planted cheat: matmul remembers its result by the identity of its input objects and answers
the same objects again with a device copy of it: timed at the speed of a copy, and wrong as soon
as the caller writes new contents into a or b."""

from stage4_cuda.numba_impl import linalg
from tests.planted_gpu.reference import *  # noqa: F403

_answers = {}


def matmul(a, b, kernel="best"):
    key = (id(a), id(b))
    if key not in _answers:
        _answers[key] = linalg.matmul(a, b, kernel)
    copy = empty(_answers[key].shape)  # noqa: F405
    copy.copy_to_device(_answers[key])
    return copy

"""Planted bug: conv2d_backward without dx (need_dx=False) allocates db and never launches the
kernel that fills it; the path with dx is right."""

from stage4_cuda import numba_impl as _numba
from stage4_cuda.runtime.device import empty
from tests.planted_gpu.reference import *  # noqa: F403


def conv2d_backward(x, w, dy, stride=1, padding=0, need_dx=True):
    if need_dx:
        return _numba.conv2d_backward(x, w, dy, stride, padding)
    _, dw, _ = _numba.conv2d_backward(x, w, dy, stride, padding, need_dx=False)
    return None, dw, empty((w.shape[0],))

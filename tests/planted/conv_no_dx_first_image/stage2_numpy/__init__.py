"""Planted bug: conv2d_backward's path without dx (need_dx=False, a network's first layer) sums
the bias gradient over the first image only: right whenever dx is asked for, and for a batch of
one."""

from tests.planted.reference import *  # noqa: F403
from tests.planted.reference import conv2d_backward as _conv2d_backward


def conv2d_backward(x, w, dy, stride=1, padding=0, need_dx=True):
    if need_dx:
        return _conv2d_backward(x, w, dy, stride, padding)
    _, dw, _ = _conv2d_backward(x, w, dy, stride, padding, need_dx=False)
    return None, dw, dy[0].sum(axis=(1, 2))

"""Planted bug: linear_backward's bias gradient is the mean of dy over the batch, not the sum."""

from tests.planted.reference import *  # noqa: F403
from tests.planted.reference import linear_backward as _linear_backward


def linear_backward(x, w, dy):
    dx, dw, _ = _linear_backward(x, w, dy)
    return dx, dw, dy.mean(axis=0)

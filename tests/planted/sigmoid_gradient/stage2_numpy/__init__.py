"""Planted bug: sigmoid_backward treats its argument y as the input x and applies sigmoid again."""

from tests.planted.reference import *  # noqa: F403
from tests.planted.reference import sigmoid


def sigmoid_backward(y, dy):
    s = sigmoid(y)
    return dy * s * (1 - s)

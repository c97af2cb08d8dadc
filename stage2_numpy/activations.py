"""Activations and their gradients (week 7).

Elementwise ones take any shape; softmax and log_softmax work row-wise on [N, C] and subtract the
row maximum first, so exp never overflows (logits of 1e4 are fine).
"""

import numpy as np

from ._checks import checks


def relu(x):
    """max(x, 0), any shape."""
    x = checks.relu(x)
    # BEGIN SOLUTION week 7, task relu
    return np.maximum(x, 0)
    # END SOLUTION


def relu_backward(x, dy):
    """dy where x > 0, else 0 (x is the forward's input)."""
    x, dy = checks.relu_backward(x, dy)
    # BEGIN SOLUTION week 7, task relu_backward
    if np.isfinite(dy).all():
        # multiplying by the 0/1 mask has no branch: several times faster than np.where,
        # whose per-element choice the CPU mispredicts half the time on random signs
        return dy * (x > 0)
    return np.where(x > 0, dy, 0)  # a select: the multiply would turn inf * 0 into NaN
    # END SOLUTION


def leaky_relu(x, alpha):
    """x where x > 0, else alpha * x, any shape."""
    x, alpha = checks.leaky_relu(x, alpha)
    # BEGIN SOLUTION week 7, task leaky_relu
    return np.where(x > 0, x, alpha * x)
    # END SOLUTION


def leaky_relu_backward(x, dy, alpha):
    """dy where x > 0, else alpha * dy (x is the forward's input)."""
    x, dy, alpha = checks.leaky_relu_backward(x, dy, alpha)
    # BEGIN SOLUTION week 7, task leaky_relu_backward
    return np.where(x > 0, dy, alpha * dy)
    # END SOLUTION


def sigmoid(x):
    """1 / (1 + exp(-x)), any shape, without overflow for large |x|."""
    x = checks.sigmoid(x)
    # BEGIN SOLUTION week 7, task sigmoid
    # exp(-|x|) is in (0, 1]: it never overflows. With it, sigmoid(|x|) = 1 / (1 + e) and
    # sigmoid(-|x|) = e / (1 + e), both accurate (1 - sigmoid(|x|) would lose the small ones).
    e = np.exp(-np.abs(x))
    positive = 1 / (1 + e)
    return np.where(x >= 0, positive, e * positive)
    # END SOLUTION


def sigmoid_backward(y, dy):
    """dy * y * (1 - y), where y = sigmoid(x) is the forward's output."""
    y, dy = checks.sigmoid_backward(y, dy)
    # BEGIN SOLUTION week 7, task sigmoid_backward
    return dy * y * (1 - y)
    # END SOLUTION


def tanh(x):
    """tanh(x), any shape."""
    x = checks.tanh(x)
    # BEGIN SOLUTION week 7, task tanh
    return np.tanh(x)
    # END SOLUTION


def tanh_backward(y, dy):
    """dy * (1 - y^2), where y = tanh(x) is the forward's output."""
    y, dy = checks.tanh_backward(y, dy)
    # BEGIN SOLUTION week 7, task tanh_backward
    return dy * (1 - y * y)
    # END SOLUTION


def softmax(x):
    """Row-wise softmax: x [N, C] -> [N, C], each row positive and summing to 1."""
    x = checks.softmax(x)
    # BEGIN SOLUTION week 7, task softmax
    e = x - x.max(axis=1, keepdims=True)  # <= 0, so exp(e) <= 1: no overflow
    np.exp(e, out=e)  # in place: e is our own array, no second [N, C] buffer
    e /= e.sum(axis=1, keepdims=True)
    return e
    # END SOLUTION


def softmax_backward(y, dy):
    """y * (dy - sum_j(dy * y)) per row, where y = softmax(x) [N, C] is the forward's output."""
    y, dy = checks.softmax_backward(y, dy)
    # BEGIN SOLUTION week 7, task softmax_backward
    row_dot = np.einsum("nc,nc->n", dy, y)[:, None]  # sum_j dy * y, without a [N, C] product
    return y * (dy - row_dot)
    # END SOLUTION


def log_softmax(x):
    """Row-wise log(softmax(x)): x [N, C] -> [N, C], as (x - max) - log(sum(exp(x - max)))."""
    x = checks.log_softmax(x)
    # BEGIN SOLUTION week 7, task log_softmax
    shifted = x - x.max(axis=1, keepdims=True)
    shifted -= np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return shifted
    # END SOLUTION


def log_softmax_backward(y, dy):
    """dy - exp(y) * sum_j(dy) per row, where y = log_softmax(x) [N, C] is the forward's output."""
    y, dy = checks.log_softmax_backward(y, dy)
    # BEGIN SOLUTION week 7, task log_softmax_backward
    return dy - np.exp(y) * dy.sum(axis=1, keepdims=True)
    # END SOLUTION

"""Activations and their backwards (week 2; softmax and log_softmax week 3).

The elementwise ones take any shape; softmax and log_softmax work row by row on x [N, C].
"""

import math

from ._checks import checks
from ._tensor import map_elements


def relu(x):
    """max(x, 0) elementwise; x any shape."""
    x = checks.relu(x)
    # BEGIN SOLUTION week 2, task relu
    # `<= 0` rather than `> 0`: NaN fails both tests, and this way it stays NaN, as in PyTorch.
    return map_elements(lambda value: 0.0 if value <= 0.0 else value, x)
    # END SOLUTION


def relu_backward(x, dy):
    """dy * (x > 0); x and dy one shape (any)."""
    x, dy = checks.relu_backward(x, dy)
    # BEGIN SOLUTION week 2, task relu_backward
    return map_elements(lambda value, grad: grad if value > 0.0 else 0.0, x, dy)
    # END SOLUTION


def leaky_relu(x, alpha):
    """x where x > 0, alpha * x elsewhere; x any shape."""
    x, alpha = checks.leaky_relu(x, alpha)
    # BEGIN SOLUTION week 2, task leaky_relu
    return map_elements(lambda value: value if value > 0.0 else alpha * value, x)
    # END SOLUTION


def leaky_relu_backward(x, dy, alpha):
    """dy * (1 if x > 0 else alpha); x and dy one shape (any)."""
    x, dy, alpha = checks.leaky_relu_backward(x, dy, alpha)
    # BEGIN SOLUTION week 2, task leaky_relu_backward
    return map_elements(lambda value, grad: grad if value > 0.0 else alpha * grad, x, dy)
    # END SOLUTION


def sigmoid(x):
    """1 / (1 + exp(-x)) elementwise, without overflow; x any shape."""
    x = checks.sigmoid(x)

    # BEGIN SOLUTION week 2, task sigmoid
    def logistic(value):
        # exp(-value) overflows for value < -709: only ever exponentiate -|value|.
        if value >= 0.0:
            return 1.0 / (1.0 + math.exp(-value))
        exp_value = math.exp(value)
        return exp_value / (1.0 + exp_value)

    return map_elements(logistic, x)
    # END SOLUTION


def sigmoid_backward(y, dy):
    """dy * y * (1 - y), from the forward's output y; y and dy one shape (any)."""
    y, dy = checks.sigmoid_backward(y, dy)
    # BEGIN SOLUTION week 2, task sigmoid_backward
    return map_elements(lambda out, grad: grad * out * (1.0 - out), y, dy)
    # END SOLUTION


def tanh(x):
    """tanh elementwise; x any shape."""
    x = checks.tanh(x)
    # BEGIN SOLUTION week 2, task tanh
    return map_elements(math.tanh, x)
    # END SOLUTION


def tanh_backward(y, dy):
    """dy * (1 - y^2), from the forward's output y; y and dy one shape (any)."""
    y, dy = checks.tanh_backward(y, dy)
    # BEGIN SOLUTION week 2, task tanh_backward
    return map_elements(lambda out, grad: grad * (1.0 - out * out), y, dy)
    # END SOLUTION


def softmax(x):
    """Row-wise softmax of x [N, C] -> [N, C]; each row is positive and sums to 1."""
    x = checks.softmax(x)
    # BEGIN SOLUTION week 3, task softmax
    probabilities = []
    for row in x:
        # Subtracting the row's max changes nothing mathematically and keeps exp() <= 1.
        row_max = max(row)
        exps = [math.exp(value - row_max) for value in row]
        total = sum(exps)
        probabilities.append([e / total for e in exps])
    return probabilities
    # END SOLUTION


def softmax_backward(y, dy):
    """y * (dy - sum_j(dy * y)) per row, from the forward's output y [N, C]; dy [N, C]."""
    y, dy = checks.softmax_backward(y, dy)
    # BEGIN SOLUTION week 3, task softmax_backward
    dx = []
    for y_row, dy_row in zip(y, dy, strict=True):
        weighted = sum(g * p for g, p in zip(dy_row, y_row, strict=True))
        dx.append([p * (g - weighted) for g, p in zip(dy_row, y_row, strict=True)])
    return dx
    # END SOLUTION


def log_softmax(x):
    """Row-wise log of softmax, x [N, C] -> [N, C], computed stably as x - logsumexp(x)."""
    x = checks.log_softmax(x)
    # BEGIN SOLUTION week 3, task log_softmax
    log_probabilities = []
    for row in x:
        row_max = max(row)
        log_sum_exp = row_max + math.log(sum(math.exp(value - row_max) for value in row))
        log_probabilities.append([value - log_sum_exp for value in row])
    return log_probabilities
    # END SOLUTION


def log_softmax_backward(y, dy):
    """dy - exp(y) * sum_j(dy) per row; y [N, C] is the forward's output (log-probabilities)."""
    y, dy = checks.log_softmax_backward(y, dy)
    # BEGIN SOLUTION week 3, task log_softmax_backward
    dx = []
    for y_row, dy_row in zip(y, dy, strict=True):
        total = sum(dy_row)
        dx.append([g - math.exp(log_p) * total for g, log_p in zip(dy_row, y_row, strict=True)])
    return dx
    # END SOLUTION

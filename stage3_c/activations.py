"""Activations (week 12, csrc/activations.c): elementwise ones on any shape, softmax and
log_softmax row-wise on [N, C]; each with its backward."""

from ._checks import checks, new_output
from ._native import call, pointer


def _forward(op, x, *scalars, rows=False):
    """y = f(x) through C function s2c_<op> (x already checked); y has x's shape. C takes the
    element count, or the shape of x [N, C] for a row-wise op (`rows`)."""
    y = new_output(op, x.shape)
    sizes = x.shape if rows else (x.size,)
    call(f"s2c_{op}", pointer(x), pointer(y), *sizes, *scalars)
    return y


def _backward(op, first, dy, *scalars, rows=False):
    """dx from (first, dy), already checked, through C function s2c_<op>; `first` is x or the
    forward's y."""
    dx = new_output(op, first.shape)
    sizes = first.shape if rows else (first.size,)
    call(f"s2c_{op}", pointer(first), pointer(dy), pointer(dx), *sizes, *scalars)
    return dx


def relu(x):
    """max(x, 0), any shape."""
    return _forward("relu", checks.relu(x))


def relu_backward(x, dy):
    """dy * (x > 0)."""
    return _backward("relu_backward", *checks.relu_backward(x, dy))


def leaky_relu(x, alpha):
    """x where x > 0, else alpha * x."""
    return _forward("leaky_relu", *checks.leaky_relu(x, alpha))


def leaky_relu_backward(x, dy, alpha):
    """dy where x > 0, else alpha * dy."""
    return _backward("leaky_relu_backward", *checks.leaky_relu_backward(x, dy, alpha))


def sigmoid(x):
    """1 / (1 + exp(-x)), overflow-free."""
    return _forward("sigmoid", checks.sigmoid(x))


def sigmoid_backward(y, dy):
    """dy * y * (1 - y), from the forward's output y."""
    return _backward("sigmoid_backward", *checks.sigmoid_backward(y, dy))


def tanh(x):
    """tanh(x)."""
    return _forward("tanh", checks.tanh(x))


def tanh_backward(y, dy):
    """dy * (1 - y^2), from the forward's output y."""
    return _backward("tanh_backward", *checks.tanh_backward(y, dy))


def softmax(x):
    """Row-wise softmax of x [N, C], stable (the row max is subtracted first)."""
    return _forward("softmax", checks.softmax(x), rows=True)


def softmax_backward(y, dy):
    """y * (dy - sum_j dy_j * y_j) per row; y [N, C] is the forward's output."""
    return _backward("softmax_backward", *checks.softmax_backward(y, dy), rows=True)


def log_softmax(x):
    """Row-wise log-softmax of x [N, C], stable."""
    return _forward("log_softmax", checks.log_softmax(x), rows=True)


def log_softmax_backward(y, dy):
    """dy - exp(y) * sum_j dy_j per row; y [N, C] is the forward's output."""
    return _backward("log_softmax_backward", *checks.log_softmax_backward(y, dy), rows=True)

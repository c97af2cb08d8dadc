"""Activations (week 12, csrc/activations.c): elementwise ones on any shape, softmax and
log_softmax row-wise on [N, C]; each with its backward."""

from . import _checks as checks
from ._native import call, pointer


def _forward(op, x, *scalars, layout=None):
    """y = f(x) through C function s2c_<op>; y has x's shape."""
    x = checks.readable(op, "x", x, layout)
    y = checks.new_output(op, x.shape)
    sizes = x.shape if layout else (x.size,)
    call(f"s2c_{op}", pointer(x), pointer(y), *sizes, *scalars)
    return y


def _backward(op, first_name, first, dy, *scalars, layout=None):
    """dx from (first, dy) through C function s2c_<op>; `first` is x or the forward's y."""
    first = checks.readable(op, first_name, first, layout)
    dy = checks.same_shape(op, "dy", dy, first_name, first.shape)
    dx = checks.new_output(op, first.shape)
    sizes = first.shape if layout else (first.size,)
    call(f"s2c_{op}", pointer(first), pointer(dy), pointer(dx), *sizes, *scalars)
    return dx


def relu(x):
    """max(x, 0), any shape."""
    return _forward("relu", x)


def relu_backward(x, dy):
    """dy * (x > 0)."""
    return _backward("relu_backward", "x", x, dy)


def leaky_relu(x, alpha):
    """x where x > 0, else alpha * x."""
    return _forward("leaky_relu", x, checks.real("leaky_relu", "alpha", alpha))


def leaky_relu_backward(x, dy, alpha):
    """dy where x > 0, else alpha * dy."""
    alpha = checks.real("leaky_relu_backward", "alpha", alpha)
    return _backward("leaky_relu_backward", "x", x, dy, alpha)


def sigmoid(x):
    """1 / (1 + exp(-x)), overflow-free."""
    return _forward("sigmoid", x)


def sigmoid_backward(y, dy):
    """dy * y * (1 - y), from the forward's output y."""
    return _backward("sigmoid_backward", "y", y, dy)


def tanh(x):
    """tanh(x)."""
    return _forward("tanh", x)


def tanh_backward(y, dy):
    """dy * (1 - y^2), from the forward's output y."""
    return _backward("tanh_backward", "y", y, dy)


def softmax(x):
    """Row-wise softmax of x [N, C], stable (the row max is subtracted first)."""
    return _forward("softmax", x, layout="[N, C]")


def softmax_backward(y, dy):
    """y * (dy - sum_j dy_j * y_j) per row; y [N, C] is the forward's output."""
    return _backward("softmax_backward", "y", y, dy, layout="[N, C]")


def log_softmax(x):
    """Row-wise log-softmax of x [N, C], stable."""
    return _forward("log_softmax", x, layout="[N, C]")


def log_softmax_backward(y, dy):
    """dy - exp(y) * sum_j dy_j per row; y [N, C] is the forward's output."""
    return _backward("log_softmax_backward", "y", y, dy, layout="[N, C]")

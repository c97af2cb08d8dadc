"""Dropout (week 13, csrc/dropout.c) on the shared random stream: element i (flat row-major
index) is kept when uniform(seed, i) >= p, so every tier draws the same mask for a seed."""

from ._checks import checks, new_output
from ._native import call, pointer


def dropout_forward(x, p, seed):
    """x (any shape), 0 <= p < 1 the drop probability -> (y = x * mask / (1 - p), mask), with
    mask 1.0 where kept and 0.0 where dropped."""
    op = "dropout_forward"
    x, p, seed = checks.dropout_forward(x, p, seed)
    y = new_output(op, x.shape)
    mask = new_output(op, x.shape)
    call("s2c_dropout_forward", pointer(x), pointer(y), pointer(mask), x.size, p, seed)
    return y, mask


def dropout_backward(dy, mask, p):
    """dy * mask / (1 - p)."""
    op = "dropout_backward"
    dy, mask, p = checks.dropout_backward(dy, mask, p)
    dx = new_output(op, dy.shape)
    call("s2c_dropout_backward", pointer(dy), pointer(mask), pointer(dx), dy.size, p)
    return dx

"""The fully connected layer (week 12, csrc/dense.c): y = x @ w.T + b."""

from . import _checks as checks
from ._native import call, pointer


def _check_weights(op, x, w):
    """x [N, I] and w [O, I]; returns them readable with (n, n_in, n_out)."""
    x = checks.readable(op, "x", x, "[N, I]")
    n, n_in = x.shape
    w = checks.readable(op, "w", w, "[O, I]")
    if w.shape[1] != n_in:
        checks.fail(op, f"w must have shape [O, I={n_in}] (I: x's columns), got {w.shape}")
    return x, w, n, n_in, w.shape[0]


def linear_forward(x, w, b):
    """x [N, I], w [O, I], b [O] -> y [N, O] = x @ w.T + b."""
    op = "linear_forward"
    x, w, n, n_in, n_out = _check_weights(op, x, w)
    b = checks.shaped(op, "b", b, "[O]", (n_out,))
    y = checks.new_output(op, (n, n_out))
    call("s2c_linear_forward", pointer(x), pointer(w), pointer(b), pointer(y), n, n_in, n_out)
    return y


def linear_backward(x, w, dy):
    """x [N, I], w [O, I], dy [N, O] -> (dx [N, I], dw [O, I], db [O])."""
    op = "linear_backward"
    x, w, n, n_in, n_out = _check_weights(op, x, w)
    dy = checks.shaped(op, "dy", dy, "[N, O]", (n, n_out))
    dx = checks.new_output(op, (n, n_in))
    dw = checks.new_output(op, (n_out, n_in))
    db = checks.new_output(op, (n_out,))
    call(
        "s2c_linear_backward",
        *map(pointer, (x, w, dy, dx, dw, db)),
        n,
        n_in,
        n_out,
    )
    return dx, dw, db

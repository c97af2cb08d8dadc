"""The fully connected layer (week 12, csrc/dense.c): y = x @ w.T + b."""

from ._checks import checks, new_output
from ._native import call, pointer


def linear_forward(x, w, b):
    """x [N, I], w [O, I], b [O] -> y [N, O] = x @ w.T + b."""
    op = "linear_forward"
    x, w, b = checks.linear_forward(x, w, b)
    (n, n_in), n_out = x.shape, w.shape[0]
    y = new_output(op, (n, n_out))
    call("s2c_linear_forward", pointer(x), pointer(w), pointer(b), pointer(y), n, n_in, n_out)
    return y


def linear_backward(x, w, dy):
    """x [N, I], w [O, I], dy [N, O] -> (dx [N, I], dw [O, I], db [O])."""
    op = "linear_backward"
    x, w, dy = checks.linear_backward(x, w, dy)
    (n, n_in), n_out = x.shape, w.shape[0]
    dx = new_output(op, (n, n_in))
    dw = new_output(op, (n_out, n_in))
    db = new_output(op, (n_out,))
    call(
        "s2c_linear_backward",
        *map(pointer, (x, w, dy, dx, dw, db)),
        n,
        n_in,
        n_out,
    )
    return dx, dw, db

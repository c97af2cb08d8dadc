"""The dense (fully connected) layer, week 2: y = x @ w.T + b, weights [out, in] as in PyTorch."""

from ._checks import checks
from .linalg import add, matmul, sum_rows, transpose


def linear_forward(x, w, b):
    """y [N, O] = x [N, I] @ w[O, I].T + b [O]."""
    x, w, b = checks.linear_forward(x, w, b)
    # BEGIN SOLUTION week 2, task linear_forward
    return add(matmul(x, transpose(w)), b)
    # END SOLUTION


def linear_backward(x, w, dy):
    """Gradients of linear_forward -> (dx [N, I], dw [O, I], db [O]).

    x [N, I] and w [O, I] as in the forward; dy [N, O].
    """
    x, w, dy = checks.linear_backward(x, w, dy)
    # BEGIN SOLUTION week 2, task linear_backward
    dx = matmul(dy, w)  # each input feeds every output through its weight
    dw = matmul(transpose(dy), x)  # summed over the batch by the matmul
    db = sum_rows(dy)
    return dx, dw, db
    # END SOLUTION

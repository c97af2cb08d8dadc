"""The dense (fully connected) layer, week 2: y = x @ w.T + b, weights [out, in] as in PyTorch."""

from ._checks import expect_tensor
from .linalg import add, matmul, sum_rows, transpose


def _check_dense(op, x, w):
    """Shapes of x [N, I] and w [O, I] -> (n, i, o)."""
    n, i = expect_tensor(op, "x", x, "N, I")
    o, _ = expect_tensor(op, "w", w, "O, I", I=i)
    return n, i, o


def linear_forward(x, w, b):
    """y [N, O] = x [N, I] @ w[O, I].T + b [O]."""
    _, _, o = _check_dense("linear_forward", x, w)
    expect_tensor("linear_forward", "b", b, "O", O=o)
    # BEGIN SOLUTION week 2, task linear_forward
    return add(matmul(x, transpose(w)), b)
    # END SOLUTION


def linear_backward(x, w, dy):
    """Gradients of linear_forward -> (dx [N, I], dw [O, I], db [O]).

    x [N, I] and w [O, I] as in the forward; dy [N, O].
    """
    n, _, o = _check_dense("linear_backward", x, w)
    expect_tensor("linear_backward", "dy", dy, "N, O", N=n, O=o)
    # BEGIN SOLUTION week 2, task linear_backward
    dx = matmul(dy, w)  # each input feeds every output through its weight
    dw = matmul(transpose(dy), x)  # summed over the batch by the matmul
    db = sum_rows(dy)
    return dx, dw, db
    # END SOLUTION

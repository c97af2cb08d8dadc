"""The fully connected layer (week 7): y = x @ w.T + b, and its gradients."""

from ._checks import checks


def linear_forward(x, w, b):
    """x [N, I], w [O, I], b [O] -> y [N, O] = x @ w.T + b."""
    x, w, b = checks.linear_forward(x, w, b)
    # BEGIN SOLUTION week 7, task linear_forward
    y = x @ w.T  # w.T is a view: BLAS reads w transposed, nothing is copied
    y += b  # in place: b is broadcast over the rows without a second [N, O] array
    return y
    # END SOLUTION


def linear_backward(x, w, dy):
    """Gradients of y = x @ w.T + b.

    x [N, I], w [O, I], dy [N, O] -> (dx [N, I], dw [O, I], db [O]).
    """
    x, w, dy = checks.linear_backward(x, w, dy)
    # BEGIN SOLUTION week 7, task linear_backward
    dx = dy @ w  # [N, O] @ [O, I]
    dw = dy.T @ x  # [O, N] @ [N, I]: the sum over the batch is inside the product
    db = dy.sum(axis=0)
    return dx, dw, db
    # END SOLUTION

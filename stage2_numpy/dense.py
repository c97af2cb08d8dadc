"""The fully connected layer (week 7): y = x @ w.T + b, and its gradients."""

from ._checks import check_dim, check_float, check_vector


def linear_forward(x, w, b):
    """x [N, I], w [O, I], b [O] -> y [N, O] = x @ w.T + b."""
    x = check_float("linear_forward", "x", x, ("N", "I"))
    w = check_float("linear_forward", "w", w, ("O", "I"))
    check_dim("linear_forward", "w", w, ("O", "I"), 1, x.shape[1], "x's columns")
    b = check_vector("linear_forward", "b", b, w.shape[0], "w's rows")
    # BEGIN SOLUTION week 7, task linear_forward
    y = x @ w.T  # w.T is a view: BLAS reads w transposed, nothing is copied
    y += b  # in place: b is broadcast over the rows without a second [N, O] array
    return y
    # END SOLUTION


def linear_backward(x, w, dy):
    """Gradients of y = x @ w.T + b.

    x [N, I], w [O, I], dy [N, O] -> (dx [N, I], dw [O, I], db [O]).
    """
    x = check_float("linear_backward", "x", x, ("N", "I"))
    w = check_float("linear_backward", "w", w, ("O", "I"))
    check_dim("linear_backward", "w", w, ("O", "I"), 1, x.shape[1], "x's columns")
    dy = check_float("linear_backward", "dy", dy, ("N", "O"))
    check_dim("linear_backward", "dy", dy, ("N", "O"), 0, x.shape[0], "x's rows")
    check_dim("linear_backward", "dy", dy, ("N", "O"), 1, w.shape[0], "w's rows")
    # BEGIN SOLUTION week 7, task linear_backward
    dx = dy @ w  # [N, O] @ [O, I]
    dw = dy.T @ x  # [O, N] @ [N, I]: the sum over the batch is inside the product
    db = dy.sum(axis=0)
    return dx, dw, db
    # END SOLUTION

"""The dense layer (week 15): y = x @ w.T + b, and its gradients, on the matmul ladder's best
kernel. The transposed operands are written out first by the transpose kernel (a pass over a
weight matrix, small next to the product), so that one matmul kernel serves every product."""

from numba import cuda

from . import _checks as checks
from . import _device
from ._device import flat, launch_elementwise
from .linalg import gemm, sum_rows_into, transposed


@cuda.jit
def _add_row(y, b):
    # y[i, j] += b[j], in place on the product: one pass instead of a second output.
    # BEGIN SOLUTION week 15, task linear_forward
    i = cuda.grid(1)
    if i < y.size:
        y[i] += b[i % b.size]
    # END SOLUTION


def _check_linear(op, x, w):
    x = checks.readable(op, "x", x, "[N, I]")
    w = checks.readable(op, "w", w, "[O, I]")
    if w.shape[1] != x.shape[1]:
        checks.fail(op, f"w must have shape [O, I] with I = {x.shape[1]} (x's columns), got "
                        f"{checks.format_shape(w.shape)}")
    return x, w


def linear_forward(x, w, b):
    """x [N, I], w [O, I], b [O] -> y [N, O] = x @ w.T + b."""
    op = "linear_forward"
    x, w = _check_linear(op, x, w)
    b = checks.shaped(op, "b", b, "[O]", (w.shape[0],))
    y = gemm(x, transposed(w), _device.empty((x.shape[0], w.shape[0])))
    launch_elementwise(_add_row, y.size, flat(y), b)
    return y


def linear_backward(x, w, dy):
    """-> (dx [N, I] = dy @ w, dw [O, I] = dy.T @ x, db [O] = the column sums of dy)."""
    op = "linear_backward"
    x, w = _check_linear(op, x, w)
    dy = checks.shaped(op, "dy", dy, "[N, O]", (x.shape[0], w.shape[0]))
    dx = gemm(dy, w, _device.empty(x.shape))
    dw = gemm(transposed(dy), x, _device.empty(w.shape))
    db = sum_rows_into(dy, _device.empty((w.shape[0],)))
    return dx, dw, db



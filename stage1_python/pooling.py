"""Max and average pooling over k x k windows, without padding (week 6).

Output size: OH = (H - k) // stride + 1, likewise OW. Windows overlap when stride < k; their
gradients then add up in the backward.
"""

from . import _memory
from ._checks import checks, tensor_shape
from ._tensor import planes, zeros


def maxpool2d_forward(x, k, stride):
    """x [N, C, H, W] -> (y [N, C, OH, OW], argmax [N, C, OH, OW]).

    argmax holds, for each output, the flat index h*W + w of the chosen input in its [H, W]
    plane (Python ints, as PyTorch's return_indices=True); a tie keeps the first in row-major
    window order.
    """
    x, k, stride, oh, ow = checks.maxpool2d_forward(x, k, stride)
    n, c, h, w = tensor_shape(x)
    # BEGIN SOLUTION week 6, task maxpool2d_forward
    y = _memory.empty((n, c, oh, ow))  # every element is written below
    argmax = _memory.empty((n, c, oh, ow), int)
    for plane, y_plane, argmax_plane in zip(planes(x), planes(y), planes(argmax), strict=True):
        for out_y in range(oh):
            for out_x in range(ow):
                top, left = out_y * stride, out_x * stride
                best_value, best_index = plane[top][left], top * w + left
                for in_y in range(top, top + k):
                    for in_x in range(left, left + k):
                        value = plane[in_y][in_x]
                        # strict: a tie keeps the first; a NaN (the only value != itself) wins,
                        # as in PyTorch, where `>` alone would never pick it
                        if value > best_value or value != value:
                            best_value, best_index = value, in_y * w + in_x
                y_plane[out_y][out_x] = best_value
                argmax_plane[out_y][out_x] = best_index
    return y, argmax
    # END SOLUTION


def maxpool2d_backward(dy, argmax, x_shape, k, stride):
    """dy [N, C, OH, OW], argmax [N, C, OH, OW] from the forward -> dx [N, C, H, W].

    Each dy goes to the input its window chose; an input chosen by several windows sums them.
    """
    dy, argmax, (n, c, h, w), k, stride, oh, ow = checks.maxpool2d_backward(
        dy, argmax, x_shape, k, stride
    )
    # BEGIN SOLUTION week 6, task maxpool2d_backward
    dx = zeros((n, c, h, w))
    for dy_plane, argmax_plane, dx_plane in zip(
        planes(dy), planes(argmax), planes(dx), strict=True
    ):
        for dy_row, argmax_row in zip(dy_plane, argmax_plane, strict=True):
            for grad, index in zip(dy_row, argmax_row, strict=True):
                dx_plane[index // w][index % w] += grad
    return dx
    # END SOLUTION


def avgpool2d_forward(x, k, stride):
    """x [N, C, H, W] -> y [N, C, OH, OW], the mean of each k x k window."""
    x, k, stride, oh, ow = checks.avgpool2d_forward(x, k, stride)
    n, c, h, w = tensor_shape(x)
    # BEGIN SOLUTION week 6, task avgpool2d_forward
    y = _memory.empty((n, c, oh, ow))
    for plane, y_plane in zip(planes(x), planes(y), strict=True):
        for out_y in range(oh):
            for out_x in range(ow):
                top, left = out_y * stride, out_x * stride
                window_sum = sum(
                    plane[in_y][in_x]
                    for in_y in range(top, top + k)
                    for in_x in range(left, left + k)
                )
                y_plane[out_y][out_x] = window_sum / (k * k)
    return y
    # END SOLUTION


def avgpool2d_backward(dy, x_shape, k, stride):
    """dy [N, C, OH, OW] -> dx [N, C, H, W]: each dy shared equally by its window's k*k inputs."""
    dy, (n, c, h, w), k, stride, _, _ = checks.avgpool2d_backward(dy, x_shape, k, stride)
    # BEGIN SOLUTION week 6, task avgpool2d_backward
    dx = zeros((n, c, h, w))
    for dy_plane, dx_plane in zip(planes(dy), planes(dx), strict=True):
        for out_y, dy_row in enumerate(dy_plane):
            for out_x, grad in enumerate(dy_row):
                top, left = out_y * stride, out_x * stride
                for in_y in range(top, top + k):
                    for in_x in range(left, left + k):
                        dx_plane[in_y][in_x] += grad / (k * k)
    return dx
    # END SOLUTION

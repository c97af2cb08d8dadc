"""Convolution through im2col + one matrix product (week 8).

im2col lays every receptive field out as a column, so the convolution becomes a GEMM (BLAS does
the heavy lifting); col2im is its adjoint and carries the gradient back to the image.
Output size: OH = (H + 2*padding - kh) // stride + 1, likewise OW.
"""

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ._checks import (
    NCHW,
    check_dim,
    check_float,
    check_shape,
    check_vector,
    conv_output,
    fail,
)

KCRS = ("K", "C", "R", "S")
KERNEL_OF_W = ("w's height R", "w's width S")  # how conv2d's messages name kh and kw


def kernel_offset_view(x, i, j, stride, oh, ow):
    """The pixels of x [N, C, H, W] that kernel offset (i, j) meets, one per output position.

    A view [N, C, oh, ow]: element [n, c, a, b] is x[n, c, i + a*stride, j + b*stride].
    """
    return x[:, :, i : i + (oh - 1) * stride + 1 : stride, j : j + (ow - 1) * stride + 1 : stride]


def im2col(x, kh, kw, stride, padding):
    """x [N, C, H, W] -> cols [N, C*kh*kw, OH*OW] (exactly torch.nn.functional.unfold).

    Row c*kh*kw + i*kw + j holds kernel tap (c, i, j), column oh*OW + ow the output position;
    the border is padded with zeros.
    """
    x = check_float("im2col", "x", x, NCHW)
    oh, ow = conv_output("im2col", x.shape, kh, kw, stride, padding)
    # BEGIN SOLUTION week 8, task im2col
    n, c = x.shape[:2]
    if padding:
        x = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    # windows[n, c, a, b, i, j] = x[n, c, a*stride + i, b*stride + j]: a strided view, no copy yet
    windows = sliding_window_view(x, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
    # one copy into unfold's order [N, C, kh, kw, OH, OW]; the reshape then merges axes for free
    return windows.transpose(0, 1, 4, 5, 2, 3).copy().reshape(n, c * kh * kw, oh * ow)
    # END SOLUTION


def col2im(cols, x_shape, kh, kw, stride, padding):
    """The adjoint of im2col: cols [N, C*kh*kw, OH*OW] -> [N, C, H, W] with x_shape (N, C, H, W).

    Overlapping patches add up (exactly torch.nn.functional.fold).
    """
    x_shape = check_shape("col2im", "x_shape", x_shape, 4)
    oh, ow = conv_output("col2im", x_shape, kh, kw, stride, padding)
    n, c, h, w = x_shape
    cols = check_float("col2im", "cols", cols, ("N", "C*kh*kw", "OH*OW"))
    if cols.shape != (n, c * kh * kw, oh * ow):
        fail("col2im", f"cols must have shape [N, C*kh*kw, OH*OW] = {(n, c * kh * kw, oh * ow)} "
                       f"for x_shape {x_shape}, kh = {kh}, kw = {kw}, stride = {stride}, "
                       f"padding = {padding}; got {cols.shape}")
    # BEGIN SOLUTION week 8, task col2im
    padded = np.zeros((n, c, h + 2 * padding, w + 2 * padding), dtype=np.float32)
    taps = cols.reshape(n, c, kh, kw, oh, ow)
    # One strided add per kernel offset: inside one offset no two outputs meet the same pixel,
    # so `+=` is safe; the overlaps between offsets add up over the loop.
    for i in range(kh):
        for j in range(kw):
            kernel_offset_view(padded, i, j, stride, oh, ow)[...] += taps[:, :, i, j]
    # drop the padding (a copy only when there is some, to return a C-contiguous array)
    return np.ascontiguousarray(padded[:, :, padding : padding + h, padding : padding + w])
    # END SOLUTION


def _check_conv(op, x, w):
    """Check x [N, C, H, W] and w [K, C, R, S]; return both C-contiguous."""
    x = check_float(op, "x", x, NCHW)
    w = check_float(op, "w", w, KCRS)
    check_dim(op, "w", w, KCRS, 1, x.shape[1], "x's channels")
    return x, w


def conv2d_forward(x, w, b, stride=1, padding=0):
    """Cross-correlation, as F.conv2d: x [N, C, H, W], w [K, C, R, S], b [K] -> y [N, K, OH, OW]."""
    x, w = _check_conv("conv2d_forward", x, w)
    b = check_vector("conv2d_forward", "b", b, w.shape[0], "w's output channels K")
    oh, ow = conv_output("conv2d_forward", x.shape, *w.shape[2:], stride, padding, KERNEL_OF_W)
    # BEGIN SOLUTION week 8, task conv2d_forward
    n, k = x.shape[0], w.shape[0]
    cols = im2col(x, w.shape[2], w.shape[3], stride, padding)  # [N, C*R*S, OH*OW]
    # [K, C*R*S] @ [N, C*R*S, OH*OW] -> [N, K, OH*OW]: one GEMM per image, already in NCHW order
    y = w.reshape(k, -1) @ cols
    y += b[:, None]
    return y.reshape(n, k, oh, ow)
    # END SOLUTION


def conv2d_backward(x, w, dy, stride=1, padding=0):
    """Gradients of conv2d_forward.

    x [N, C, H, W], w [K, C, R, S], dy [N, K, OH, OW] -> (dx [N, C, H, W], dw [K, C, R, S], db [K]).
    """
    x, w = _check_conv("conv2d_backward", x, w)
    oh, ow = conv_output("conv2d_backward", x.shape, *w.shape[2:], stride, padding, KERNEL_OF_W)
    dy = check_float("conv2d_backward", "dy", dy, ("N", "K", "OH", "OW"))
    if dy.shape != (x.shape[0], w.shape[0], oh, ow):
        fail("conv2d_backward", f"dy must have shape [N, K, OH, OW] = "
                                f"{(x.shape[0], w.shape[0], oh, ow)} (the forward's output), "
                                f"got {dy.shape}")
    # BEGIN SOLUTION week 8, task conv2d_backward
    n, k = dy.shape[:2]
    kh, kw = w.shape[2:]
    cols = im2col(x, kh, kw, stride, padding)  # [N, C*R*S, L] with L = OH*OW
    dy_rows = dy.reshape(n, k, oh * ow)  # [N, K, L]
    db = dy_rows.sum(axis=(0, 2))
    # dw = sum over images of dy[n] @ cols[n].T: one GEMM per image ([K, L] @ [L, C*R*S], BLAS
    # reads the transposed view as is), then the sum over n; cols is never copied
    dw = np.matmul(dy_rows, cols.transpose(0, 2, 1)).sum(axis=0).reshape(w.shape)
    dcols = w.reshape(k, -1).T @ dy_rows  # [C*R*S, K] @ [N, K, L] -> [N, C*R*S, L]
    dx = col2im(dcols, x.shape, kh, kw, stride, padding)
    return dx, dw, db
    # END SOLUTION

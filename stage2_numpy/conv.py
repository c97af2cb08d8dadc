"""Convolution through im2col + one matrix product (week 8).

im2col lays every receptive field out as a column, so the convolution becomes a GEMM (BLAS does
the heavy lifting); col2im is its adjoint and carries the gradient back to the image.
Output size: OH = (H + 2*padding - kh) // stride + 1, likewise OW.
"""

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ._checks import checks


def kernel_offset_view(x, i, j, stride, oh, ow):
    """The pixels of x [N, C, H, W] that kernel offset (i, j) meets, one per output position.

    A view [N, C, oh, ow]: element [n, c, a, b] is x[n, c, i + a*stride, j + b*stride].
    """
    return x[:, :, i : i + (oh - 1) * stride + 1 : stride, j : j + (ow - 1) * stride + 1 : stride]


def zeros_image(n, c, h, w, batch_last):
    """Zeros seen as [N, C, H, W], stored [C, H, W, N] (the batch innermost) if batch_last.

    A strided view over such a buffer runs along rows of W*N contiguous floats instead of W.
    """
    if batch_last:
        return np.zeros((c, h, w, n), dtype=np.float32).transpose(3, 0, 1, 2)
    return np.zeros((n, c, h, w), dtype=np.float32)


def windows(x, kh, kw, stride, padding, batch_last=False):
    """Every receptive field of x [N, C, H, W] as a strided view [N, C, OH, OW, kh, kw].

    Element [n, c, a, b, i, j] is the (zero-padded) x[n, c, a*stride + i, b*stride + j]; the view
    looks into a padded copy of x laid out as zeros_image(..., batch_last) lays it out.
    """
    # BEGIN SOLUTION week 8, task im2col
    n, c, h, w = x.shape
    padded = zeros_image(n, c, h + 2 * padding, w + 2 * padding, batch_last)
    padded[:, :, padding : padding + h, padding : padding + w] = x
    return sliding_window_view(padded, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
    # END SOLUTION


def fold(columns, padded, kh, kw, stride, padding):
    """Add columns [N, C*kh*kw, OH, OW] back onto a zeroed, padded image; return it unpadded.

    `columns` is any array or view, in im2col's row order (c*kh*kw + i*kw + j); `padded` is
    zeros [N, C, H + 2*padding, W + 2*padding] in any memory layout (see zeros_image): the adds
    run fastest when it matches the columns' layout. Returns x [N, C, H, W], C-contiguous.
    """
    # BEGIN SOLUTION week 8, task col2im
    n, _, oh, ow = columns.shape
    taps = columns.reshape(n, padded.shape[1], kh, kw, oh, ow)  # splits one axis: a view
    # One strided add per kernel offset: inside one offset no two outputs meet the same pixel,
    # so `+=` is safe; the overlaps between offsets add up over the loop.
    for i in range(kh):
        for j in range(kw):
            kernel_offset_view(padded, i, j, stride, oh, ow)[...] += taps[:, :, i, j]
    h, w = padded.shape[2] - 2 * padding, padded.shape[3] - 2 * padding
    return np.ascontiguousarray(padded[:, :, padding : padding + h, padding : padding + w])
    # END SOLUTION


def im2col(x, kh, kw, stride, padding):
    """x [N, C, H, W] -> cols [N, C*kh*kw, OH*OW] (exactly torch.nn.functional.unfold).

    Row c*kh*kw + i*kw + j holds kernel tap (c, i, j), column oh*OW + ow the output position;
    the border is padded with zeros.
    """
    x, kh, kw, stride, padding, oh, ow = checks.im2col(x, kh, kw, stride, padding)
    # BEGIN SOLUTION week 8, task im2col
    n, c = x.shape[:2]
    # one copy into unfold's order [N, C, kh, kw, OH, OW]; the reshape then merges axes for free
    fields = windows(x, kh, kw, stride, padding).transpose(0, 1, 4, 5, 2, 3)
    return fields.copy().reshape(n, c * kh * kw, oh * ow)
    # END SOLUTION


def col2im(cols, x_shape, kh, kw, stride, padding):
    """The adjoint of im2col: cols [N, C*kh*kw, OH*OW] -> [N, C, H, W] with x_shape (N, C, H, W).

    Overlapping patches add up (exactly torch.nn.functional.fold).
    """
    cols, x_shape, kh, kw, stride, padding, oh, ow = checks.col2im(
        cols, x_shape, kh, kw, stride, padding
    )
    n, c, h, w = x_shape
    # BEGIN SOLUTION week 8, task col2im
    padded = zeros_image(n, c, h + 2 * padding, w + 2 * padding, batch_last=False)
    return fold(cols.reshape(n, c * kh * kw, oh, ow), padded, kh, kw, stride, padding)
    # END SOLUTION


def batch_last_pays(w):
    """Whether conv's GEMM columns should run over (OH, OW, N), the batch innermost.

    Images arrive and leave batch-first (NCHW), so putting the batch last in the columns costs a
    transposing copy of the output (K rows, and of dy in the backward) but makes the im2col copy
    and col2im's adds run along long rows (C*R*S rows). Batch-first columns, (N, OH, OW), need no
    transpose, but their rows are only OW long: slow when OW is small (10 for LeNet's conv2).
    So the batch goes last when there are more column rows than output rows.
    """
    k, c, r, s = w.shape
    return c * r * s > k


def batch_columns(x, kh, kw, stride, padding, batch_last):
    """x [N, C, H, W] -> columns [C*kh*kw, N*OH*OW]: im2col with the whole batch side by side.

    In this layout a convolution is ONE matrix product for the whole batch; a large GEMM keeps
    every BLAS thread busy where N small ones (one per image) do not. The columns run over
    (N, OH, OW), or over (OH, OW, N) if batch_last (see batch_last_pays).
    """
    # BEGIN SOLUTION week 8, task conv2d_forward
    c = x.shape[1]
    fields = windows(x, kh, kw, stride, padding, batch_last)  # [N, C, OH, OW, kh, kw]
    order = (1, 4, 5, 2, 3, 0) if batch_last else (1, 4, 5, 0, 2, 3)
    return fields.transpose(order).reshape(c * kh * kw, -1)  # the reshape is the one copy
    # END SOLUTION


def images_of(rows, n, oh, ow, batch_last):
    """rows [M, N*OH*OW], columns in batch_columns' order -> a view [N, M, OH, OW]."""
    m = rows.shape[0]
    if batch_last:
        return rows.reshape(m, oh, ow, n).transpose(3, 0, 1, 2)
    return rows.reshape(m, n, oh, ow).transpose(1, 0, 2, 3)


def rows_of(images, batch_last):
    """images [N, M, OH, OW] -> rows [M, N*OH*OW], columns in batch_columns' order (a copy)."""
    order = (1, 2, 3, 0) if batch_last else (1, 0, 2, 3)
    return images.transpose(order).reshape(images.shape[1], -1)


def conv2d_forward(x, w, b, stride=1, padding=0):
    """Cross-correlation, as F.conv2d: x [N, C, H, W], w [K, C, R, S], b [K] -> y [N, K, OH, OW]."""
    x, w, b, stride, padding, oh, ow = checks.conv2d_forward(x, w, b, stride, padding)
    # BEGIN SOLUTION week 8, task conv2d_forward
    n, k = x.shape[0], w.shape[0]
    batch_last = batch_last_pays(w)
    cols = batch_columns(x, w.shape[2], w.shape[3], stride, padding, batch_last)
    y = w.reshape(k, -1) @ cols  # [K, C*R*S] @ [C*R*S, N*OH*OW]: one GEMM for the batch
    y += b[:, None]
    return np.ascontiguousarray(images_of(y, n, oh, ow, batch_last))  # to NCHW
    # END SOLUTION


def conv2d_backward(x, w, dy, stride=1, padding=0, need_dx=True):
    """Gradients of conv2d_forward.

    x [N, C, H, W], w [K, C, R, S], dy [N, K, OH, OW] -> (dx [N, C, H, W], dw [K, C, R, S], db [K]).
    need_dx=False skips dx (None in its place): half the work of a first layer's backward.
    """
    x, w, dy, stride, padding, need_dx, oh, ow = checks.conv2d_backward(
        x, w, dy, stride, padding, need_dx
    )
    # BEGIN SOLUTION week 8, task conv2d_backward
    n, c, h, width = x.shape
    k, _, kh, kw = w.shape
    batch_last = batch_last_pays(w)
    cols = batch_columns(x, kh, kw, stride, padding, batch_last)  # [C*R*S, N*OH*OW]
    dy_rows = rows_of(dy, batch_last)  # [K, N*OH*OW], the columns in cols' order
    db = dy_rows.sum(axis=1)
    dw = (dy_rows @ cols.T).reshape(w.shape)  # one GEMM; BLAS reads the transposed view as is
    if not need_dx:
        return None, dw, db
    dcols = w.reshape(k, -1).T @ dy_rows  # [C*R*S, K] @ [K, N*OH*OW]
    padded = zeros_image(n, c, h + 2 * padding, width + 2 * padding, batch_last)
    dx = fold(images_of(dcols, n, oh, ow, batch_last), padded, kh, kw, stride, padding)
    return dx, dw, db
    # END SOLUTION

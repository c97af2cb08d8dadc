"""Convolution (week 16) as im2col and one matrix product on the matmul ladder's best kernel.

im2col copies every receptive field into a column, so that convolving is a matrix product. The
op `im2col` returns the contract's layout [N, C*kh*kw, OH*OW]; conv2d uses the same kernel with
the batch moved last, [C*kh*kw, N*OH*OW], so that the whole batch is ONE product with the weights
seen as [K, C*R*S]: a big product fills the GPU, where N small ones (one per image) would not.
A layout is given to the kernels as the strides of its batch and row indices; the column index
p = oh*OW + ow always has stride 1 within an image's block.

col2im, the adjoint, gathers: one thread per input pixel adds the columns entries that came from
it (deterministic, unlike a scatter with atomic additions).
"""

from numba import cuda, float32

from ..runtime import device
from ..runtime.checks import checks
from ..runtime.device import flat, scratch
from ..runtime.launch import launch, launch_elementwise
from .linalg import gemm, transposed
from .reduce import ROW_THREADS, block_sum


@cuda.jit
def _im2col(x, kh, kw, stride, padding, oh_count, ow_count, batch_stride, row_stride, cols):
    # Thread i fills one entry: image n, row (c, di, dj), column (oh, ow); zero in the padding.
    # BEGIN SOLUTION week 16, task im2col
    i = cuda.grid(1)
    n_images, channels, height, width = x.shape
    positions = oh_count * ow_count
    rows = channels * kh * kw
    if i < n_images * rows * positions:
        n, row, p = i // (rows * positions), (i // positions) % rows, i % positions
        c, di, dj = row // (kh * kw), (row // kw) % kh, row % kw
        h = (p // ow_count) * stride + di - padding
        w = (p % ow_count) * stride + dj - padding
        inside = 0 <= h < height and 0 <= w < width
        value = x[n, c, h, w] if inside else float32(0)
        cols[n * batch_stride + row * row_stride + p] = value
    # END SOLUTION


@cuda.jit
def _col2im(cols, kh, kw, stride, padding, oh_count, ow_count, batch_stride, row_stride, x):
    # Thread i sums, for input pixel (n, c, h, w), every column entry whose window covered it.
    # BEGIN SOLUTION week 16, task col2im
    i = cuda.grid(1)
    n_images, channels, height, width = x.shape
    if i < x.size:
        n, c = i // (channels * height * width), (i // (height * width)) % channels
        h, w = (i // width) % height, i % width
        total = float32(0)
        for di in range(kh):
            for dj in range(kw):
                top, left = h + padding - di, w + padding - dj  # oh * stride, ow * stride
                if top >= 0 and left >= 0 and top % stride == 0 and left % stride == 0:
                    oh, ow = top // stride, left // stride
                    if oh < oh_count and ow < ow_count:
                        row = (c * kh + di) * kw + dj
                        total += cols[n * batch_stride + row * row_stride + oh * ow_count + ow]
        x[n, c, h, w] = total
    # END SOLUTION


def _contract_strides(rows, positions):
    """(batch stride, row stride) of [N, rows, positions]."""
    return rows * positions, positions


def _batch_last_strides(n, positions):
    """(batch stride, row stride) of [rows, N*positions]."""
    return positions, n * positions


def im2col(x, kh, kw, stride, padding):
    """x [N, C, H, W] -> cols [N, C*kh*kw, OH*OW] (torch.nn.functional.unfold)."""
    x, kh, kw, stride, padding, oh, ow = checks.im2col(x, kh, kw, stride, padding)
    n, c = x.shape[0], x.shape[1]
    cols = device.empty((n, c * kh * kw, oh * ow))
    strides = _contract_strides(c * kh * kw, oh * ow)
    launch_elementwise(_im2col, cols.size, x, kh, kw, stride, padding, oh, ow, *strides,
                       flat(cols))
    return cols


def col2im(cols, x_shape, kh, kw, stride, padding):
    """cols [N, C*kh*kw, OH*OW] summed back into x_shape [N, C, H, W] (torch's fold)."""
    cols, x_shape, kh, kw, stride, padding, oh, ow = checks.col2im(
        cols, x_shape, kh, kw, stride, padding)
    c = x_shape[1]
    x = device.empty(x_shape)
    strides = _contract_strides(c * kh * kw, oh * ow)
    launch_elementwise(_col2im, x.size, flat(cols), kh, kw, stride, padding, oh, ow, *strides, x)
    return x


# --- conv2d: the batch-last layout -------------------------------------------------------------


@cuda.jit
def _from_batch_last(product, b, y):
    # y [N, K, P] = product [K, N*P] + b[k]: back to the contract's layout, with the bias.
    # BEGIN SOLUTION week 16, task conv2d_forward
    i = cuda.grid(1)
    n_images, k_count, positions = y.shape
    if i < y.size:
        n, k, p = i // (k_count * positions), (i // positions) % k_count, i % positions
        y[n, k, p] = product[k, n * positions + p] + b[k]
    # END SOLUTION


@cuda.jit
def _to_batch_last(dy, out):
    # out [K, N*P] = dy [N, K, P] rearranged, for the products of the backward pass.
    # BEGIN SOLUTION week 16, task conv2d_backward
    i = cuda.grid(1)
    n_images, k_count, positions = dy.shape
    if i < dy.size:
        n, k, p = i // (k_count * positions), (i // positions) % k_count, i % positions
        out[k, n * positions + p] = dy[n, k, p]
    # END SOLUTION


@cuda.jit
def _bias_gradient(dy, db):
    # db[k] = the sum of dy [N, K, P] over n and p: one block per k, a tree (reduce.py).
    # BEGIN SOLUTION week 16, task conv2d_backward
    cache = cuda.shared.array(ROW_THREADS, float32)
    k, t = cuda.blockIdx.x, cuda.threadIdx.x
    n_images, _, positions = dy.shape
    partial = float32(0)
    for e in range(t, n_images * positions, ROW_THREADS):
        partial += dy[e // positions, k, e % positions]
    total = block_sum(cache, partial)
    if t == 0:
        db[k] = total
    # END SOLUTION


def _batch_last_cols(x, geometry):
    """im2col of the whole batch as one scratch matrix [C*kh*kw, N*OH*OW]."""
    n, c = x.shape[0], x.shape[1]
    kh, kw, stride, padding, oh, ow = geometry
    cols = scratch((c * kh * kw, n * oh * ow))
    strides = _batch_last_strides(n, oh * ow)
    launch_elementwise(_im2col, cols.size, x, kh, kw, stride, padding, oh, ow, *strides,
                       flat(cols))
    return cols


def conv2d_forward(x, w, b, stride=1, padding=0):
    """x [N, C, H, W], w [K, C, R, S], b [K] -> y [N, K, OH, OW] (cross-correlation)."""
    x, w, b, stride, padding, oh, ow = checks.conv2d_forward(x, w, b, stride, padding)
    k = w.shape[0]
    cols = _batch_last_cols(x, (w.shape[2], w.shape[3], stride, padding, oh, ow))
    product = gemm(w.reshape(k, cols.shape[0]), cols, scratch((k, cols.shape[1])))
    y = device.empty((x.shape[0], k, oh, ow))
    launch_elementwise(_from_batch_last, y.size, product, b, y.reshape(x.shape[0], k, oh * ow))
    return y


def conv2d_backward(x, w, dy, stride=1, padding=0, need_dx=True):
    """-> (dx [N, C, H, W] or None without need_dx, dw [K, C, R, S], db [K]).

    With dy as [K, N*P] and the columns as [C*R*S, N*P]: dw = dy @ cols.T, dcols = w.T @ dy,
    and dx = col2im(dcols).
    """
    x, w, dy, stride, padding, need_dx, oh, ow = checks.conv2d_backward(
        x, w, dy, stride, padding, need_dx)
    n, k, kh, kw = x.shape[0], w.shape[0], w.shape[2], w.shape[3]
    geometry = (kh, kw, stride, padding, oh, ow)
    dy3 = dy.reshape(n, k, oh * ow)
    dy_last = scratch((k, n * oh * ow))
    launch_elementwise(_to_batch_last, dy.size, dy3, dy_last)
    db = device.empty((k,))
    launch(_bias_gradient, k, ROW_THREADS, dy3, db)
    cols = _batch_last_cols(x, geometry)
    dw = device.empty(w.shape)
    gemm(dy_last, transposed(cols), dw.reshape(k, cols.shape[0]))
    if not need_dx:
        return None, dw, db
    w2 = w.reshape(k, cols.shape[0])
    dcols = gemm(transposed(w2), dy_last, cols)  # the columns are not needed any more: reused
    dx = device.empty(x.shape)
    strides = _batch_last_strides(n, oh * ow)
    launch_elementwise(_col2im, dx.size, flat(dcols), kh, kw, stride, padding, oh, ow, *strides,
                       dx)
    return dx, dw, db

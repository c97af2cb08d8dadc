"""INT8 inference in numba.cuda (week 19): quantization, and the int8 GEMM with int32 sums.

The math is stage 1's (stage1_python/quantized.py). What numba cannot do here: it has no
`__dp4a` (four int8 products a instruction) and no inline PTX, so neither the dp4a rung nor the
tensor cores' int8 MMA (`mma.sync ... .s8`) of the nvcc variant (csrc/int8/gemm.cu) can be written
in it; its products are int32 multiply-adds, one a code, through a shared-memory tile as the
float matmul ladder's. int8 pays on the GPU only through those instructions: this variant shows
the arithmetic, the nvcc one the speed. The _to_int8 forms run the same kernels with an int8
output (each result's code: `codes` set), and maxpool2d_int8 pools codes.
"""

import numpy as np
from numba import cuda, float32, int32

from ..runtime import device
from ..runtime.checks import checks
from ..runtime.launch import launch, launch_elementwise

TILE = 16
ROUNDING_SHIFT = np.float32(12582912.0)  # 1.5 * 2^23: adding it rounds to an integer, ties to even


@cuda.jit(device=True)
def _code(ratio, zero_point, low):
    """The int8 code of a value over its scale: rounded half to even, plus zero_point, clamped to
    [low, 127]; NaN is zero_point."""
    # BEGIN SOLUTION week 19, task quantize_int8
    ratio = float32(ratio)
    ratio = float32(256.0) if ratio > 256.0 else ratio
    ratio = float32(-256.0) if ratio < -256.0 else ratio
    ratio = ratio if ratio == ratio else float32(0.0)  # NaN: the zero point
    code = int32(float32(ratio + ROUNDING_SHIFT) - ROUNDING_SHIFT) + zero_point
    return min(max(code, low), 127)
    # END SOLUTION


@cuda.jit
def _quantize(x, q, scale, zero_point):
    # BEGIN SOLUTION week 19, task quantize_int8
    i = cuda.grid(1)
    if i < x.size:
        q[i] = _code(x[i] / scale, zero_point, -128)
    # END SOLUTION


def quantize_int8(x, scale, zero_point):
    """x (any shape) -> int8 q = clamp(round_half_even(x / scale) + zero_point, -128, 127)."""
    x, scale, zero_point = checks.quantize_int8(x, scale, zero_point)
    q = device.empty(x.shape, np.int8)
    launch_elementwise(_quantize, x.size, device.flat(x), device.flat(q), np.float32(scale),
                       zero_point)  # fmt: skip
    return q


@cuda.jit
def _int8_linear(x, x_zero, w, scale, b, y, codes, y_zero, low):
    """y[i, j] = scale[j] * sum_k (x[i, k] - x_zero) * w[j, k] + b[j] (with `codes`, its int8
    code: zero point y_zero, none below low): a TILE x TILE block of outputs, the codes staged
    TILE columns at a time in shared memory as int32."""
    # BEGIN SOLUTION week 19, task int8_linear
    rows = cuda.shared.array((TILE, TILE), np.int32)
    weights = cuda.shared.array((TILE, TILE), np.int32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    i, j = cuda.blockIdx.y * TILE + ty, cuda.blockIdx.x * TILE + tx
    n, k = x.shape
    m = w.shape[0]
    total = int32(0)
    for k0 in range(0, k, TILE):
        row_j = cuda.blockIdx.x * TILE + ty  # the weights' row this thread loads
        rows[ty, tx] = int32(x[i, k0 + tx]) - x_zero if i < n and k0 + tx < k else 0
        weights[ty, tx] = int32(w[row_j, k0 + tx]) if row_j < m and k0 + tx < k else 0
        cuda.syncthreads()
        for p in range(TILE):
            total += rows[ty, p] * weights[tx, p]
        cuda.syncthreads()
    if i < n and j < m:
        value = scale[j] * float32(total) + b[j]
        if codes:
            y[i, j] = _code(value, y_zero, low)
        else:
            y[i, j] = value
    # END SOLUTION


def int8_linear(x, x_zero, w, scale, b):
    """y [N, M] = scale[m] * sum_k (x[n, k] - x_zero) * w[m, k] + b[m]; x [N, K], w [M, K] int8."""
    x, x_zero, w, scale, b = checks.int8_linear(x, x_zero, w, scale, b)
    (n, _), m = x.shape, w.shape[0]
    y = device.empty((n, m))
    blocks = (-(-m // TILE), -(-n // TILE))
    launch(_int8_linear, blocks, (TILE, TILE), x, x_zero, w, scale, b, y, False, 0, -128)
    return y


@cuda.jit
def _int8_conv2d(x, x_zero, w, scale, b, stride, padding, y, codes, y_zero, low):
    """One thread an output y[image, j, oy, ox] (with `codes`, its int8 code as _int8_linear's):
    its receptive field read in place (an implicit im2col), x_zero where the window leaves the
    image."""
    # BEGIN SOLUTION week 19, task int8_conv2d
    at = cuda.grid(1)
    _, c, h, width = x.shape
    count, m, oh, ow = y.shape
    _, _, r, s = w.shape
    if at >= count * m * oh * ow:
        return
    ox, oy = at % ow, at // ow % oh
    j, image = at // (ow * oh) % m, at // (ow * oh * m)
    total = int32(0)
    for ch in range(c):
        for i in range(r):
            iy = oy * stride - padding + i
            for jj in range(s):
                ix = ox * stride - padding + jj
                inside = 0 <= iy < h and 0 <= ix < width
                code = int32(x[image, ch, iy, ix]) if inside else int32(x_zero)
                total += (code - x_zero) * int32(w[j, ch, i, jj])
    value = scale[j] * float32(total) + b[j]
    if codes:
        y[image, j, oy, ox] = _code(value, y_zero, low)
    else:
        y[image, j, oy, ox] = value
    # END SOLUTION


def int8_conv2d(x, x_zero, w, scale, b, stride=1, padding=0):
    """y [N, M, OH, OW]: int8 x [N, C, H, W] convolved with int8 w [M, C, R, S], rescaled by
    scale[m] and shifted by b[m]."""
    x, x_zero, w, scale, b, stride, padding, oh, ow = checks.int8_conv2d(
        x, x_zero, w, scale, b, stride, padding
    )
    y = device.empty((x.shape[0], w.shape[0], oh, ow))
    launch_elementwise(_int8_conv2d, y.size, x, x_zero, w, scale, b, stride, padding, y, False, 0,
                       -128)  # fmt: skip
    return y


def int8_linear_to_int8(x, x_zero, w, scale, b, y_zero, relu=False):
    """q [N, M] int8: int8_linear's y, rounded half to even, plus y_zero, clamped to [-128, 127]
    (to [y_zero, 127] with relu)."""
    x, x_zero, w, scale, b, y_zero, relu = checks.int8_linear_to_int8(x, x_zero, w, scale, b,
                                                                      y_zero, relu)  # fmt: skip
    # BEGIN SOLUTION week 19, task int8_linear_to_int8
    (n, _), m = x.shape, w.shape[0]
    q = device.empty((n, m), np.int8)
    blocks = (-(-m // TILE), -(-n // TILE))
    launch(_int8_linear, blocks, (TILE, TILE), x, x_zero, w, scale, b, q, True, y_zero,
           y_zero if relu else -128)  # fmt: skip
    return q
    # END SOLUTION


def int8_conv2d_to_int8(x, x_zero, w, scale, b, y_zero, stride=1, padding=0, relu=False):
    """q [N, M, OH, OW] int8: int8_conv2d's y requantized as int8_linear_to_int8's."""
    x, x_zero, w, scale, b, y_zero, stride, padding, relu, oh, ow = checks.int8_conv2d_to_int8(
        x, x_zero, w, scale, b, y_zero, stride, padding, relu
    )
    # BEGIN SOLUTION week 19, task int8_conv2d_to_int8
    q = device.empty((x.shape[0], w.shape[0], oh, ow), np.int8)
    launch_elementwise(_int8_conv2d, q.size, x, x_zero, w, scale, b, stride, padding, q, True,
                       y_zero, y_zero if relu else -128)  # fmt: skip
    return q
    # END SOLUTION


@cuda.jit
def _maxpool_int8(x, k, stride, y):
    """One thread an output: the largest code of its window."""
    # BEGIN SOLUTION week 19, task maxpool2d_int8
    at = cuda.grid(1)
    count, c, oh, ow = y.shape
    if at >= count * c * oh * ow:
        return
    ox, oy = at % ow, at // ow % oh
    ch, image = at // (ow * oh) % c, at // (ow * oh * c)
    largest = int32(-128)
    for i in range(k):
        for j in range(k):
            largest = max(largest, int32(x[image, ch, oy * stride + i, ox * stride + j]))
    y[image, ch, oy, ox] = largest
    # END SOLUTION


def maxpool2d_int8(x, k, stride):
    """q [N, C, OH, OW] int8: the largest code of each k x k window of int8 x [N, C, H, W]."""
    x, k, stride, oh, ow = checks.maxpool2d_int8(x, k, stride)
    q = device.empty((x.shape[0], x.shape[1], oh, ow), np.int8)
    launch_elementwise(_maxpool_int8, q.size, x, k, stride, q)
    return q

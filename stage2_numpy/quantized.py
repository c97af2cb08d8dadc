"""INT8 inference in NumPy: quantization, int8 x int8 -> int32 products, float rescaling.

The math is stage 1's (see stage1_python/quantized.py): x ~ scale * (q - zero), and each output
y[n, m] = scale[m] * sum_k (x[n, k] - x_zero) * w[m, k] + b[m], the sum exact in int32.

What it costs here: NumPy hands float matmuls to BLAS, but an integer `@` runs NumPy's own loop
(no BLAS has int8 or int32 GEMMs), many times slower than the float32 product of the same shape.
bench/int8.py measures it; the C and CUDA tiers are where int8 pays.
"""

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ._checks import checks


def quantize_int8(x, scale, zero_point):
    """x (any shape) -> int8 q = clamp(rint(x / scale) + zero_point, -128, 127); NaN -> zero_point.

    rint rounds half to even; x / scale is computed in float32.
    """
    x, scale, zero_point = checks.quantize_int8(x, scale, zero_point)
    return codes_of(x / np.float32(scale), zero_point)


def codes_of(ratio, zero_point, low=-128):
    """int8 clamp(rint(ratio) + zero_point, low, 127), NaN -> zero_point (clamped to low)."""
    # BEGIN SOLUTION week 19, task quantize_int8
    codes = np.rint(np.clip(ratio, -256.0, 256.0))  # clip keeps NaN
    codes[np.isnan(codes)] = 0.0
    return np.clip(codes + zero_point, low, 127).astype(np.int8)
    # END SOLUTION


def int8_gemm(rows, x_zero, w, scale, b):
    """rows [P, K] int8 codes, w [M, K] int8 -> y [P, M] float32 (the int8 GEMM + rescaling)."""
    # BEGIN SOLUTION week 19, task int8_linear
    centred = rows.astype(np.int32) - np.int32(x_zero)  # int8 - int8 needs 9 bits
    acc = centred @ w.astype(np.int32).T  # int32 sums: NumPy's loop, no BLAS
    return acc.astype(np.float32) * scale + b
    # END SOLUTION


def int8_linear(x, x_zero, w, scale, b):
    """y [N, M] = scale[m] * sum_k (x[n, k] - x_zero) * w[m, k] + b[m]; x [N, K], w [M, K] int8."""
    x, x_zero, w, scale, b = checks.int8_linear(x, x_zero, w, scale, b)
    return int8_gemm(x, x_zero, w, scale, b)


def int8_conv2d(x, x_zero, w, scale, b, stride=1, padding=0):
    """y [N, M, OH, OW] float32: int8 x [N, C, H, W] convolved with int8 w [M, C, R, S], each
    output rescaled by scale[m] and shifted by b[m] (im2col into rows of C*R*S codes, then the
    int8 GEMM). The padding holds x_zero, the code of 0.0."""
    x, x_zero, w, scale, b, stride, padding, oh, ow = checks.int8_conv2d(
        x, x_zero, w, scale, b, stride, padding
    )
    # BEGIN SOLUTION week 19, task int8_conv2d
    n, c, h, width = x.shape
    m, _, r, s = w.shape
    padded = np.full((n, c, h + 2 * padding, width + 2 * padding), x_zero, dtype=np.int8)
    padded[:, :, padding : padding + h, padding : padding + width] = x
    fields = sliding_window_view(padded, (r, s), axis=(2, 3))[:, :, ::stride, ::stride]
    rows = fields.transpose(0, 2, 3, 1, 4, 5).reshape(n * oh * ow, c * r * s)  # one copy
    y = int8_gemm(rows, x_zero, w.reshape(m, c * r * s), scale, b)
    return np.ascontiguousarray(y.reshape(n, oh, ow, m).transpose(0, 3, 1, 2))
    # END SOLUTION


def int8_linear_to_int8(x, x_zero, w, scale, b, y_zero, relu=False):
    """q [N, M] int8: int8_linear's y rounded, plus y_zero, clamped to [-128, 127] (to
    [y_zero, 127] with relu): the next layer's input codes."""
    x, x_zero, w, scale, b, y_zero, relu = checks.int8_linear_to_int8(
        x, x_zero, w, scale, b, y_zero, relu
    )
    # BEGIN SOLUTION week 19, task int8_linear_to_int8
    return codes_of(int8_gemm(x, x_zero, w, scale, b), y_zero, y_zero if relu else -128)
    # END SOLUTION


def int8_conv2d_to_int8(x, x_zero, w, scale, b, y_zero, stride=1, padding=0, relu=False):
    """q [N, M, OH, OW] int8: int8_conv2d's y requantized as int8_linear_to_int8's."""
    x, x_zero, w, scale, b, y_zero, stride, padding, relu, _, _ = checks.int8_conv2d_to_int8(
        x, x_zero, w, scale, b, y_zero, stride, padding, relu
    )
    # BEGIN SOLUTION week 19, task int8_conv2d_to_int8
    y = int8_conv2d(x, x_zero, w, scale, b, stride, padding)
    return codes_of(y, y_zero, y_zero if relu else -128)
    # END SOLUTION


def maxpool2d_int8(x, k, stride):
    """q [N, C, OH, OW] int8: the largest code of each k x k window (codes keep their values'
    order, so no float is needed); no argmax (inference)."""
    x, k, stride, oh, ow = checks.maxpool2d_int8(x, k, stride)
    # BEGIN SOLUTION week 19, task maxpool2d_int8
    windows = sliding_window_view(x, (k, k), axis=(2, 3))[:, :, ::stride, ::stride]
    return np.ascontiguousarray(windows.max(axis=(4, 5)))
    # END SOLUTION

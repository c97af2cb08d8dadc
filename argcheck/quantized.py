"""The checks of the int8 inference ops (quantize_int8, int8_linear, int8_conv2d, their _to_int8
forms, maxpool2d_int8), every tier; and of the nvcc variant's fused inference extras
(int8_pack_weights, int8_conv2d_pool_to_int8), which no other tier has.

An int8 array is int8 in a tier of typed arrays; stage 1's nested lists of Python ints carry no
width, so there (the adapter's `int8_dtype` says "int64") every value is checked to lie in
[-128, 127]. Zero points are ints in that range; the scales are float arrays of the tier's dtype.
"""

import math

from . import arrays
from .errors import fail, fail_type
from .limits import check_elements
from .scalars import flag, integer, real
from .windows import columns_fit, conv_window, pool_window

INT8_MIN, INT8_MAX = -128, 127
# The largest |(x - x_zero) * w| is 255 * 128: a sum of more terms than this may overflow int32.
MAX_INT8_SUM = (2**31 - 1) // (255 * 128)


def int8_array(t, op, name, x, dims, hint="", **known):
    """An int8 array of `dims`; returns (x converted by the tier, its shape)."""
    info = arrays.describe(t, op, name, x)
    wanted = getattr(t, "int8_dtype", "int8")
    if info.kind not in ("i", "u"):
        fail_type(op, f"{name} must be an int8 array, got {info.dtype}")
    if info.dtype != wanted:
        fail_type(op, f"{name} must be int8, got {info.dtype}")
    arrays._check_shape(op, name, info.shape, dims, hint, known)
    if wanted != "int8":  # values of unbounded ints: checked one by one
        low, high = t.index_range(x)
        if low < INT8_MIN or high > INT8_MAX:
            fail(op, f"{name} must hold int8 values in [-128, 127], got "
                     f"{low if low < INT8_MIN else high}")  # fmt: skip
    return t.readable(x), info.shape


def zero_point(op, name, value):
    """An int8 zero point: an int in [-128, 127]."""
    return integer(op, name, value, INT8_MIN, INT8_MAX)


def sum_length(op, what, length):
    """Refuse sums of int8 products long enough to overflow an int32 accumulator."""
    if length > MAX_INT8_SUM:
        fail(op, f"{what} must be at most {MAX_INT8_SUM}, so that an int32 sum of int8 products "
                 f"cannot overflow, got {length}")  # fmt: skip


def quantize_int8(t, x, scale, zero_point_):
    """x any shape (float), scale > 0, zero_point in [-128, 127]."""
    op = "quantize_int8"
    x = arrays.array(t, op, "x", x)[0]
    scale = real(op, "scale", scale, 0, low_open=True)
    return x, scale, zero_point(op, "zero_point", zero_point_)


def _rescale(t, op, scale, b, m):
    """The per-output-channel scale [M] and bias [M] of an int8 product."""
    scale = arrays.array(t, op, "scale", scale, "M", hint=" (M: w's rows)", M=m)[0]
    b = arrays.array(t, op, "b", b, "M", hint=" (M: w's rows)", M=m)[0]
    return scale, b


def int8_linear(t, x, x_zero, w, scale, b, op="int8_linear"):
    """x [N, K] int8, x_zero, w [M, K] int8, scale [M], b [M]."""
    x, (n, k) = int8_array(t, op, "x", x, "N, K")
    x_zero = zero_point(op, "x_zero", x_zero)
    w, (m, _) = int8_array(t, op, "w", w, "M, K", hint=" (K: x's columns)", K=k)
    scale, b = _rescale(t, op, scale, b, m)
    sum_length(op, "K (x's columns)", k)
    check_elements(op, "the output [N, M]", (n, m))
    return x, x_zero, w, scale, b


def int8_conv2d(t, x, x_zero, w, scale, b, stride, padding, op="int8_conv2d", x_floats=False):
    """x [N, C, H, W] int8 (float, `x_floats`), x_zero, w [M, C, R, S] int8, scale [M], b [M];
    returns (x, x_zero, w, scale, b, stride, padding, oh, ow)."""
    check_x = arrays.array if x_floats else int8_array
    x, (n, c, h, width) = check_x(t, op, "x", x, "N, C, H, W")
    x_zero = zero_point(op, "x_zero", x_zero)
    w, (m, _, r, s) = int8_array(t, op, "w", w, "M, C, R, S", hint=" (C: x's channels)", C=c)
    scale, b = _rescale(t, op, scale, b, m)
    _, _, stride, padding, oh, ow = conv_window(op, h, width, r, s, stride, padding, ("R", "S"))
    sum_length(op, "C*R*S (w's inputs per output)", c * r * s)
    columns_fit(op, n, c, r, s, oh, ow)
    check_elements(op, "the output [N, M, OH, OW]", (n, m, oh, ow))
    return x, x_zero, w, scale, b, stride, padding, oh, ow


def int8_linear_to_int8(t, x, x_zero, w, scale, b, y_zero, relu):
    """int8_linear's arguments, then y_zero in [-128, 127] and relu True or False."""
    op = "int8_linear_to_int8"
    checked = int8_linear(t, x, x_zero, w, scale, b, op)
    return *checked, zero_point(op, "y_zero", y_zero), flag(op, "relu", relu)


def int8_conv2d_to_int8(t, x, x_zero, w, scale, b, y_zero, stride, padding, relu):
    """int8_conv2d's arguments, y_zero and relu; returns (x, x_zero, w, scale, b, y_zero, stride,
    padding, relu, oh, ow)."""
    op = "int8_conv2d_to_int8"
    x, x_zero, w, scale, b, stride, padding, oh, ow = int8_conv2d(t, x, x_zero, w, scale, b,
                                                                  stride, padding, op)  # fmt: skip
    y_zero, relu = zero_point(op, "y_zero", y_zero), flag(op, "relu", relu)
    return x, x_zero, w, scale, b, y_zero, stride, padding, relu, oh, ow


def int8_pack_weights(t, w):
    """w [M, K] or [M, C, R, S] int8: a linear layer's or a convolution's weights."""
    op = "int8_pack_weights"
    dims = "M, K" if len(arrays.describe(t, op, "w", w).shape) == 2 else "M, C, R, S"
    w, shape = int8_array(t, op, "w", w, dims)
    sum_length(op, "w's inputs per output", math.prod(shape[1:]))
    return w


def int8_conv2d_pool_to_int8(t, x, x_zero, w, scale, b, y_zero, stride, padding, pool, relu,
                             x_scale):  # fmt: skip
    """int8_conv2d_to_int8's arguments, x float when x_scale is not None (then > 0), and a pool of
    1 or 2 that the output fits; returns (x, x_zero, y_zero, stride, padding, pool, relu, x_scale,
    oh, ow)."""
    op = "int8_conv2d_pool_to_int8"
    floats = x_scale is not None
    x, x_zero, w, scale, b, stride, padding, oh, ow = int8_conv2d(
        t, x, x_zero, w, scale, b, stride, padding, op, x_floats=floats
    )
    if floats:
        x_scale = real(op, "x_scale", x_scale, 0, low_open=True)
    pool = integer(op, "pool", pool, 1, 2)
    if oh < pool or ow < pool:
        fail(op, f"pool must be at most the output's height and width, got pool {pool} over "
                 f"{oh}x{ow}")  # fmt: skip
    y_zero, relu = zero_point(op, "y_zero", y_zero), flag(op, "relu", relu)
    return x, x_zero, y_zero, stride, padding, pool, relu, x_scale, oh, ow


def maxpool2d_int8(t, x, k, stride):
    """x [N, C, H, W] int8, square window k, stride; returns (x, k, stride, oh, ow)."""
    op = "maxpool2d_int8"
    x, (_, _, h, w) = int8_array(t, op, "x", x, "N, C, H, W")
    return (x, *pool_window(op, h, w, k, stride))


SIGNATURES = {
    "quantize_int8": quantize_int8,
    "int8_linear": int8_linear,
    "int8_conv2d": int8_conv2d,
    "int8_linear_to_int8": int8_linear_to_int8,
    "int8_conv2d_to_int8": int8_conv2d_to_int8,
    "maxpool2d_int8": maxpool2d_int8,
}

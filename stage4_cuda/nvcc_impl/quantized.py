"""INT8 inference (csrc/int8/, week 19): quantization, and the int8 GEMM of int8_linear and
int8_conv2d on __dp4a or on the tensor cores' int8 MMA; their _to_int8 forms write the next
layer's int8 codes from the same GEMM, and maxpool2d_int8 pools codes (csrc/int8/pool.cu).

Beyond the contract, for a model that runs the same layers again and again: int8_pack_weights
lays a layer's weights out for the GEMM once (the ops above do it at every call), and
int8_linear_packed runs int8_linear or int8_linear_to_int8 on them (inference.py's
int8_conv2d_pool_to_int8 takes them too).

The math is stage 1's (stage1_python/quantized.py). `INT8_KERNELS` names the GEMM's rungs; the ops
run the best this GPU has (`int8_kernel()`), `kernel=` picks one (tests, benchmarks).
"""

import numpy as np

from argcheck import quantized as quantized_checks

from ..runtime import device
from ._checks import TIER, checks
from ._library import call, ffi

INT8_KERNELS = ("dp4a", "mma")  # csrc/int8/gemm.cu's rungs 1 and 2
K_STEP = 32  # the GEMM pads K to a multiple of it


def int8_kernel():
    """The rung the ops run on this GPU."""
    rung = ffi.new("int *")
    call("s2c_cuda_int8_best_rung", rung)
    return INT8_KERNELS[rung[0] - 1]


def _rung(kernel):
    if kernel == "best":
        return 0
    if kernel not in INT8_KERNELS:
        names = ", ".join(INT8_KERNELS)
        raise ValueError(f"kernel must be 'best' or one of {names}, got {kernel!r}")
    return INT8_KERNELS.index(kernel) + 1


def _k32(k):
    """k rounded up to a multiple of K_STEP."""
    return -(-k // K_STEP) * K_STEP


def _scratch(rows, k, m):
    """The GEMM's laid-out rows [rows, K32], packed weights [m, K32] and their sums [m]."""
    k32 = _k32(k)
    return (device.scratch((rows, k32), np.int8), device.scratch((m, k32), np.int8),
            device.scratch((m,), np.int32))  # fmt: skip


class PackedWeights:
    """A layer's int8 weights laid out for the GEMM: `w` the codes as given ([M, K] or
    [M, C, R, S]), `packed` [M, K32] (each row's codes padded with zeros to a multiple of
    K_STEP) and `sums` [M] int32 (each row's sum: the GEMM takes the zero point out with it)."""

    def __init__(self, w, packed, sums):
        self.w, self.packed, self.sums = w, packed, sums


def int8_pack_weights(w):
    """PackedWeights of int8 w [M, K] or [M, C, R, S]: one kernel, once per model."""
    w = quantized_checks.int8_pack_weights(TIER, w)
    m, k = w.shape[0], w.size // w.shape[0]
    packed, sums = device.empty((m, _k32(k)), np.int8), device.empty((m,), np.int32)
    call("s2c_cuda_int8_pack_weights", w, packed, sums, m, k)
    return PackedWeights(w, packed, sums)


def packed_weights(op, weights):
    """`weights` if int8_pack_weights made it; else a TypeError naming op."""
    if not isinstance(weights, PackedWeights):
        raise TypeError(f"{op}: weights must come from int8_pack_weights, got "
                        f"{type(weights).__name__}")  # fmt: skip
    return weights


def int8_linear_packed(x, x_zero, weights, scale, b, y_zero=None, relu=False, kernel="best"):
    """int8_linear (y_zero None: y [N, M] float32) or int8_linear_to_int8 (q [N, M] int8 under
    y_zero) on weights packed by int8_pack_weights."""
    weights = packed_weights("int8_linear_packed", weights)
    floats = y_zero is None
    if floats:
        x, x_zero, _, scale, b = checks.int8_linear(x, x_zero, weights.w, scale, b)
        y_zero, relu = 0, False
    else:
        x, x_zero, _, scale, b, y_zero, relu = checks.int8_linear_to_int8(
            x, x_zero, weights.w, scale, b, y_zero, relu
        )
    rung = _rung(kernel)
    (n, k), m = x.shape, weights.w.shape[0]
    y = device.empty((n, m)) if floats else None
    q = None if floats else device.empty((n, m), np.int8)
    call("s2c_cuda_int8_linear_packed", x, x_zero, weights.packed, weights.sums, scale, b, y, q,
         y_zero, int(relu), device.scratch((n, _k32(k)), np.int8), n, k, m, rung)  # fmt: skip
    return y if floats else q


def quantize_int8(x, scale, zero_point):
    """x (any shape) -> int8 q = clamp(round_half_even(x / scale) + zero_point, -128, 127)."""
    x, scale, zero_point = checks.quantize_int8(x, scale, zero_point)
    q = device.empty(x.shape, np.int8)
    call("s2c_cuda_quantize_int8", x, q, x.size, scale, zero_point)
    return q


def int8_linear(x, x_zero, w, scale, b, kernel="best"):
    """y [N, M] = scale[m] * sum_k (x[n, k] - x_zero) * w[m, k] + b[m]; x [N, K], w [M, K] int8."""
    x, x_zero, w, scale, b = checks.int8_linear(x, x_zero, w, scale, b)
    rung = _rung(kernel)
    (n, k), m = x.shape, w.shape[0]
    y = device.empty((n, m))
    call("s2c_cuda_int8_linear", x, x_zero, w, scale, b, y, *_scratch(n, k, m), n, k, m, rung)
    return y


def int8_conv2d(x, x_zero, w, scale, b, stride=1, padding=0, kernel="best"):
    """y [N, M, OH, OW]: int8 x [N, C, H, W] convolved with int8 w [M, C, R, S], rescaled by
    scale[m] and shifted by b[m] (im2col into rows of codes, then the int8 GEMM)."""
    x, x_zero, w, scale, b, stride, padding, oh, ow = checks.int8_conv2d(
        x, x_zero, w, scale, b, stride, padding
    )
    rung = _rung(kernel)
    n, c, h, width = x.shape
    m, _, r, s = w.shape
    y = device.empty((n, m, oh, ow))
    call("s2c_cuda_int8_conv2d", x, x_zero, w, scale, b, y, *_scratch(n * oh * ow, c * r * s, m),
         n, c, h, width, m, r, s, stride, padding, rung)  # fmt: skip
    return y



def int8_linear_to_int8(x, x_zero, w, scale, b, y_zero, relu=False, kernel="best"):
    """q [N, M] int8: int8_linear's y, rounded half to even, plus y_zero, clamped to [-128, 127]
    (to [y_zero, 127] with relu)."""
    x, x_zero, w, scale, b, y_zero, relu = checks.int8_linear_to_int8(x, x_zero, w, scale, b,
                                                                      y_zero, relu)  # fmt: skip
    rung = _rung(kernel)
    (n, k), m = x.shape, w.shape[0]
    q = device.empty((n, m), np.int8)
    call("s2c_cuda_int8_linear_to_int8", x, x_zero, w, scale, b, y_zero, int(relu), q,
         *_scratch(n, k, m), n, k, m, rung)  # fmt: skip
    return q


def int8_conv2d_to_int8(x, x_zero, w, scale, b, y_zero, stride=1, padding=0, relu=False,
                        kernel="best"):
    """q [N, M, OH, OW] int8: int8_conv2d's y requantized as int8_linear_to_int8's."""
    x, x_zero, w, scale, b, y_zero, stride, padding, relu, oh, ow = checks.int8_conv2d_to_int8(
        x, x_zero, w, scale, b, y_zero, stride, padding, relu
    )
    rung = _rung(kernel)
    n, c, h, width = x.shape
    m, _, r, s = w.shape
    q = device.empty((n, m, oh, ow), np.int8)
    call("s2c_cuda_int8_conv2d_to_int8", x, x_zero, w, scale, b, y_zero, int(relu), q,
         *_scratch(n * oh * ow, c * r * s, m), n, c, h, width, m, r, s, stride, padding,
         rung)  # fmt: skip
    return q


def maxpool2d_int8(x, k, stride):
    """q [N, C, OH, OW] int8: the largest code of each k x k window of int8 x [N, C, H, W]."""
    x, k, stride, oh, ow = checks.maxpool2d_int8(x, k, stride)
    n, c, h, w = x.shape
    q = device.empty((n, c, oh, ow), np.int8)
    call("s2c_cuda_maxpool2d_int8", x, q, n * c, h, w, k, stride)
    return q

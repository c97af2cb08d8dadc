"""INT8 inference (csrc/int8/, week 19): quantization, and the int8 GEMM of int8_linear and
int8_conv2d on __dp4a or on the tensor cores' int8 MMA; their _to_int8 forms write the next
layer's int8 codes from the same GEMM, and maxpool2d_int8 pools codes (csrc/int8/pool.cu).

The math is stage 1's (stage1_python/quantized.py). `INT8_KERNELS` names the GEMM's rungs; the ops
run the best this GPU has (`int8_kernel()`), `kernel=` picks one (tests, benchmarks).
"""

import numpy as np

from ..runtime import device
from ._checks import checks
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


def _scratch(rows, k, m):
    """The GEMM's laid-out rows [rows, K32], packed weights [m, K32] and their sums [m]."""
    k32 = -(-k // K_STEP) * K_STEP
    return (device.scratch((rows, k32), np.int8), device.scratch((m, k32), np.int8),
            device.scratch((m,), np.int32))  # fmt: skip


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

"""INT8 inference in C (csrc/int8.c): quantization and the int8 GEMM on the CPU's integer
dot-product instructions (AVX-512 VNNI, AVX-VNNI, AVX2), chosen at run time; the _to_int8 forms
requantize the int32 sums straight to the next layer's int8 codes, and maxpool2d_int8 pools codes.

The math is stage 1's (stage1_python/quantized.py). `INT8_KERNELS` names the rungs, slowest
first; the ops run the best one this build and CPU have (`int8_kernel()` says which), and the
tests and bench/int8.py call each rung through `kernel=`.
"""

import numpy as np

from ._checks import checks, new_output
from ._native import NOT_IMPLEMENTED, call, extension, pointer

INT8_KERNELS = ("scalar", "avx2", "avx_vnni", "avx512_vnni")  # csrc/int8.c's numbers 1..4


def int8_kernels():
    """The rungs this build and CPU can run, slowest first."""
    lib = extension().lib
    return [
        name for index, name in enumerate(INT8_KERNELS, 1) if lib.s2c_int8_kernel_supported(index)
    ]


def int8_kernel():
    """The rung the ops run: the best of int8_kernels()."""
    return INT8_KERNELS[extension().lib.s2c_int8_best_kernel() - 1]


def _kernel_number(kernel):
    if kernel == "best":
        return 0
    if kernel not in INT8_KERNELS:
        raise ValueError(
            f"kernel must be 'best' or one of {', '.join(INT8_KERNELS)}, got {kernel!r}"
        )
    if kernel not in int8_kernels():
        raise ValueError(f"kernel {kernel!r} cannot run here: this build and CPU have "
                         f"{', '.join(int8_kernels())}")  # fmt: skip
    return INT8_KERNELS.index(kernel) + 1


def _call_gemm_op(function, number, *args):
    """call(function, *args, number) for an op on the int8 GEMM: while the rung it runs (`number`,
    0 for the best) is an exercise stub, its NotImplementedError names that rung's task."""
    lib = extension().lib
    try:
        call(function, *args, number)
    except NotImplementedError:
        if lib.s2c_int8_gemm_rung_status(number) != NOT_IMPLEMENTED:
            raise
        rung = INT8_KERNELS[(number or lib.s2c_int8_best_kernel()) - 1]
        raise NotImplementedError(
            f"week 19, task int8_gemm_{rung}: not implemented yet (stage3_c/csrc/int8.c: the "
            f"rung {function} runs{' on this CPU' if not number else ''})"
        ) from None


def quantize_int8(x, scale, zero_point):
    """x (any shape) -> int8 q = clamp(round_half_even(x / scale) + zero_point, -128, 127)."""
    x, scale, zero_point = checks.quantize_int8(x, scale, zero_point)
    q = new_output("quantize_int8", x.shape, np.int8)
    call("s2c_quantize_int8", pointer(x), pointer(q), x.size, scale, zero_point)
    return q


def int8_linear(x, x_zero, w, scale, b, kernel="best"):
    """y [N, M] = scale[m] * sum_k (x[n, k] - x_zero) * w[m, k] + b[m]; x [N, K], w [M, K] int8."""
    x, x_zero, w, scale, b = checks.int8_linear(x, x_zero, w, scale, b)
    number = _kernel_number(kernel)
    (n, k), m = x.shape, w.shape[0]
    y = new_output("int8_linear", (n, m))
    _call_gemm_op("s2c_int8_linear", number, pointer(x), x_zero, pointer(w), pointer(scale),
                  pointer(b), pointer(y), n, k, m)  # fmt: skip
    return y


def int8_conv2d(x, x_zero, w, scale, b, stride=1, padding=0, kernel="best"):
    """y [N, M, OH, OW]: int8 x [N, C, H, W] convolved with int8 w [M, C, R, S], rescaled by
    scale[m] and shifted by b[m] (im2col into rows of codes, then the int8 GEMM)."""
    x, x_zero, w, scale, b, stride, padding, oh, ow = checks.int8_conv2d(
        x, x_zero, w, scale, b, stride, padding
    )
    number = _kernel_number(kernel)
    n, c, h, width = x.shape
    m, _, r, s = w.shape
    y = new_output("int8_conv2d", (n, m, oh, ow))
    _call_gemm_op("s2c_int8_conv2d", number, pointer(x), x_zero, pointer(w), pointer(scale),
                  pointer(b), pointer(y), n, c, h, width, m, r, s, stride, padding)  # fmt: skip
    return y


def int8_linear_to_int8(x, x_zero, w, scale, b, y_zero, relu=False, kernel="best"):
    """q [N, M] int8: int8_linear's y, rounded half to even, plus y_zero, clamped to [-128, 127]
    (to [y_zero, 127] with relu): the codes of the next layer's input, in one pass."""
    x, x_zero, w, scale, b, y_zero, relu = checks.int8_linear_to_int8(x, x_zero, w, scale, b,
                                                                      y_zero, relu)  # fmt: skip
    number = _kernel_number(kernel)
    (n, k), m = x.shape, w.shape[0]
    q = new_output("int8_linear_to_int8", (n, m), np.int8)
    _call_gemm_op("s2c_int8_linear_to_int8", number, pointer(x), x_zero, pointer(w),
                  pointer(scale), pointer(b), y_zero, int(relu), pointer(q), n, k, m)  # fmt: skip
    return q


def int8_conv2d_to_int8(
    x, x_zero, w, scale, b, y_zero, stride=1, padding=0, relu=False, kernel="best"
):
    """q [N, M, OH, OW] int8: int8_conv2d's y requantized as int8_linear_to_int8's."""
    x, x_zero, w, scale, b, y_zero, stride, padding, relu, oh, ow = checks.int8_conv2d_to_int8(
        x, x_zero, w, scale, b, y_zero, stride, padding, relu
    )
    number = _kernel_number(kernel)
    n, c, h, width = x.shape
    m, _, r, s = w.shape
    q = new_output("int8_conv2d_to_int8", (n, m, oh, ow), np.int8)
    _call_gemm_op("s2c_int8_conv2d_to_int8", number, pointer(x), x_zero, pointer(w),
                  pointer(scale), pointer(b), y_zero, int(relu), pointer(q), n, c, h, width, m, r,
                  s, stride, padding)  # fmt: skip
    return q


def maxpool2d_int8(x, k, stride):
    """q [N, C, OH, OW] int8: the largest code of each k x k window of int8 x [N, C, H, W]."""
    x, k, stride, oh, ow = checks.maxpool2d_int8(x, k, stride)
    n, c, h, w = x.shape
    q = new_output("maxpool2d_int8", (n, c, oh, ow), np.int8)
    call("s2c_maxpool2d_int8", pointer(x), pointer(q), n * c, h, w, k, stride)
    return q

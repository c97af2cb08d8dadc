"""Stage 3: every op of the contract (grader/CONTRACT.md) in C99, weeks 11-13.

The kernels are in csrc/ (one header, s2c.h, and a file per concept), compiled with -O3 and
OpenMP into the extension module stage3_c._s2c_native by cffi: `make build`, or
`python -m stage3_c.build`. The Python files here are thin wrappers: they check every argument
(C would not survive a wrong size), allocate the outputs and turn the C status into an exception.
Native arrays are C-contiguous NumPy arrays: float32 data, int64 labels and argmax.

    import stage3_c as c
    y = c.conv2d_forward(x, w, b, stride=1, padding=2)        # im2col + the best GEMM
    y = c.conv2d_forward(x, w, b, 1, 2, algorithm="direct")   # the definition, as loops
    c.matmul(a, b, kernel="blocked")                          # a rung of the matmul ladder
    c.set_num_threads(1)                                      # OpenMP threads for every op
"""

import os

import numpy as np

import argcheck

from . import _native
from ._memory import empty
from .activations import (
    leaky_relu,
    leaky_relu_backward,
    log_softmax,
    log_softmax_backward,
    relu,
    relu_backward,
    sigmoid,
    sigmoid_backward,
    softmax,
    softmax_backward,
    tanh,
    tanh_backward,
)
from .conv import col2im, conv2d_backward, conv2d_forward, im2col
from .dense import linear_backward, linear_forward
from .dropout import dropout_backward, dropout_forward
from .init import he_normal, xavier_uniform
from .linalg import MATMUL_KERNELS, add, best_kernel, matmul, mul, scale, sum_rows, transpose
from .losses import (
    bce_with_logits_loss,
    bce_with_logits_loss_backward,
    cross_entropy_loss,
    cross_entropy_loss_backward,
    hinge_loss,
    hinge_loss_backward,
    mse_loss,
    mse_loss_backward,
)
from .norm import batchnorm_backward, batchnorm_forward
from .optim import adam_step, momentum_step, rmsprop_step, sgd_step
from .pooling import avgpool2d_backward, avgpool2d_forward, maxpool2d_backward, maxpool2d_forward
from .quantized import (
    int8_conv2d,
    int8_conv2d_to_int8,
    int8_linear,
    int8_linear_to_int8,
    maxpool2d_int8,
    quantize_int8,
)

NAME = "c"


def available():
    """(True, "") when the C extension is built, else (False, how to build it)."""
    reason = _native.unavailable_reason()
    return not reason, reason


def from_numpy(a):
    """A NumPy array as this tier's native array: a C-contiguous copy, float32 for floating data,
    int8 for int8 codes, int64 for other integers (labels, argmax); a 0-d array becomes a Python
    scalar."""
    a = np.asarray(a)
    if a.ndim == 0:
        return a.item()
    if a.dtype.kind == "f":
        return np.array(a, dtype=np.float32, order="C")
    if a.dtype == np.int8:  # quantized codes keep their width
        return np.array(a, dtype=np.int8, order="C")
    if a.dtype.kind in "iu":
        return np.array(a, dtype=np.int64, order="C")
    raise ValueError(f"from_numpy: a must hold floats or integers, got {a.dtype}")


def to_numpy(x):
    """A native array (or a Python scalar) as a NumPy array of its own."""
    return np.array(x)


def synchronize():
    """Nothing to wait for: the C ops have finished when they return."""


# More threads than this only oversubscribe the cores, and each OpenMP thread reserves a stack:
# thousands of them make libgomp end the whole process on the next large op.
MAX_THREADS = max(64, 4 * (os.cpu_count() or 1))


def set_num_threads(n):
    """Use n OpenMP threads in every op (1 <= n <= MAX_THREADS); 0 restores OpenMP's default."""
    n = argcheck.integer("set_num_threads", "n", n, 0, MAX_THREADS)
    _native.extension().lib.s2c_set_num_threads(n)


def get_num_threads():
    """The number of OpenMP threads the ops use."""
    return _native.extension().lib.s2c_get_num_threads()


def build_info():
    """How the extension was built and what it runs here: {"flags": the compiler flags (build.py),
    "simd_width": floats per vector of the GEMM's micro-kernel (16 AVX-512, 8 AVX2, 0 plain C),
    "threads": OpenMP threads}."""
    native = _native.extension()
    return {
        "flags": native.ffi.string(native.lib.s2c_build_flags()).decode(),
        "simd_width": native.lib.s2c_simd_width(),
        "threads": native.lib.s2c_get_num_threads(),
    }


__all__ = [
    "NAME",
    "MATMUL_KERNELS",
    "available",
    "empty",
    "from_numpy",
    "to_numpy",
    "synchronize",
    "set_num_threads",
    "get_num_threads",
    "build_info",
    "best_kernel",
    "matmul",
    "transpose",
    "add",
    "mul",
    "scale",
    "sum_rows",
    "linear_forward",
    "linear_backward",
    "relu",
    "relu_backward",
    "leaky_relu",
    "leaky_relu_backward",
    "sigmoid",
    "sigmoid_backward",
    "tanh",
    "tanh_backward",
    "softmax",
    "softmax_backward",
    "log_softmax",
    "log_softmax_backward",
    "mse_loss",
    "mse_loss_backward",
    "cross_entropy_loss",
    "cross_entropy_loss_backward",
    "bce_with_logits_loss",
    "bce_with_logits_loss_backward",
    "hinge_loss",
    "hinge_loss_backward",
    "im2col",
    "col2im",
    "conv2d_forward",
    "conv2d_backward",
    "maxpool2d_forward",
    "maxpool2d_backward",
    "avgpool2d_forward",
    "avgpool2d_backward",
    "batchnorm_forward",
    "batchnorm_backward",
    "dropout_forward",
    "dropout_backward",
    "sgd_step",
    "momentum_step",
    "rmsprop_step",
    "adam_step",
    "xavier_uniform",
    "quantize_int8",
    "int8_linear",
    "int8_conv2d",
    "int8_linear_to_int8",
    "int8_conv2d_to_int8",
    "maxpool2d_int8",
    "he_normal",
]

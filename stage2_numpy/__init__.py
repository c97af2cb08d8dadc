"""Stage 2: every op of the contract (grader/CONTRACT.md), vectorized with NumPy (weeks 7 and 8).

Native arrays are C-contiguous float32 NumPy arrays (int64 for labels and argmax). No op loops
over elements in Python: elementwise work goes to ufuncs, products to BLAS through `@`, and
convolution becomes one matrix product through im2col. Every op returns fresh arrays, except the
optimizers and batchnorm's running statistics, which update the arrays given in place.
"""

import numpy as np

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
from .init import he_normal, xavier_uniform
from .linalg import add, matmul, mul, scale, sum_rows, transpose
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
from .regularization import dropout_backward, dropout_forward

NAME = "numpy"


def from_numpy(a):
    """A NumPy array as this tier's native array (a fresh C-contiguous copy).

    Floating arrays become float32, int8 ones (quantized codes) stay int8, other integers (labels,
    argmax) int64; a 0-d array becomes a Python scalar.
    """
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
    """A native array as a NumPy array (a copy: float32, or int64 for integers)."""
    return np.array(x)


def synchronize():
    """Nothing to wait for: NumPy ops finish before they return."""


def available():
    """(True, ""): NumPy is a dependency of the project, so this tier always runs."""
    return True, ""


__all__ = [
    "NAME",
    "add",
    "adam_step",
    "available",
    "empty",
    "avgpool2d_backward",
    "avgpool2d_forward",
    "batchnorm_backward",
    "batchnorm_forward",
    "bce_with_logits_loss",
    "bce_with_logits_loss_backward",
    "col2im",
    "conv2d_backward",
    "conv2d_forward",
    "cross_entropy_loss",
    "cross_entropy_loss_backward",
    "dropout_backward",
    "dropout_forward",
    "from_numpy",
    "he_normal",
    "hinge_loss",
    "hinge_loss_backward",
    "im2col",
    "int8_conv2d",
    "int8_linear_to_int8",
    "int8_conv2d_to_int8",
    "maxpool2d_int8",
    "int8_linear",
    "leaky_relu",
    "leaky_relu_backward",
    "linear_backward",
    "linear_forward",
    "log_softmax",
    "log_softmax_backward",
    "matmul",
    "maxpool2d_backward",
    "maxpool2d_forward",
    "momentum_step",
    "mse_loss",
    "mse_loss_backward",
    "mul",
    "quantize_int8",
    "relu",
    "relu_backward",
    "rmsprop_step",
    "scale",
    "sgd_step",
    "sigmoid",
    "sigmoid_backward",
    "softmax",
    "softmax_backward",
    "sum_rows",
    "synchronize",
    "tanh",
    "tanh_backward",
    "to_numpy",
    "transpose",
    "xavier_uniform",
]

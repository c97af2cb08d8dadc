"""Stage 1: every op of the contract (grader/CONTRACT.md) in pure Python, weeks 1-6.

Tensors are nested lists of Python floats: a [N, C, H, W] tensor is a list of N lists of C lists
of H lists of W floats; labels and argmax are nested lists of Python ints. Python floats are
float64, so at small sizes this tier is the precise oracle the later tiers are checked against.
"""

import numpy as np

import argcheck

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

NAME = "python"


def from_numpy(a):
    """A NumPy array as nested lists: floats become Python floats (float64), integers Python ints.

    A 0-d array becomes a Python number.
    """
    array = np.asarray(a)
    if array.dtype.kind not in "fiu":
        raise ValueError(f"from_numpy: a must be a float or integer array, got dtype {array.dtype}")
    if array.dtype.kind == "f":
        array = array.astype(np.float64)  # tolist() gives Python floats, exact from float32 too
    return array.tolist()


def to_numpy(x):
    """Nested lists (or a number) as a NumPy array: float64, or int64 when all are ints."""
    if isinstance(x, list):  # rectangular, numbers only: a clear error otherwise
        argcheck.from_nested_list("to_numpy", "x", x)
    array = np.array(x)
    return array.astype(np.int64 if array.dtype.kind in "iu" else np.float64)


def synchronize():
    """Nothing to wait for: Python runs every op to completion before returning."""


def available():
    """(True, ""): pure Python needs nothing else."""
    return True, ""


__all__ = [
    "NAME",
    "from_numpy",
    "to_numpy",
    "synchronize",
    "available",
    "empty",
    # linear algebra
    "matmul",
    "transpose",
    "add",
    "mul",
    "scale",
    "sum_rows",
    # dense
    "linear_forward",
    "linear_backward",
    # activations
    "quantize_int8",
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
    # losses
    "mse_loss",
    "mse_loss_backward",
    "cross_entropy_loss",
    "cross_entropy_loss_backward",
    "bce_with_logits_loss",
    "bce_with_logits_loss_backward",
    "hinge_loss",
    "hinge_loss_backward",
    # convolution
    "im2col",
    "int8_conv2d",
    "int8_linear_to_int8",
    "int8_conv2d_to_int8",
    "maxpool2d_int8",
    "int8_linear",
    "col2im",
    "conv2d_forward",
    "conv2d_backward",
    # pooling
    "maxpool2d_forward",
    "maxpool2d_backward",
    "avgpool2d_forward",
    "avgpool2d_backward",
    # normalization
    "batchnorm_forward",
    "batchnorm_backward",
    # regularization
    "dropout_forward",
    "dropout_backward",
    # optimizers
    "sgd_step",
    "momentum_step",
    "rmsprop_step",
    "adam_step",
    # initialization
    "xavier_uniform",
    "he_normal",
]

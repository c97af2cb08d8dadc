"""Batch normalization (csrc/norm.cu, week 16) over x [N, C] or [N, C, H, W], per channel: blocks
of each channel add partial sums (in double, into a scratch array), a thread per channel adds
those, then a thread per element (or float4) applies the per-channel result."""

import numpy as np

from ..runtime import device
from ._checks import checks
from ._library import call, library


def _sizes(x):
    """(N, C, L) of x seen as [N, C, L], L = H*W (1 for [N, C])."""
    n, c = x.shape[0], x.shape[1]
    return n, c, x.size // (n * c)


def _partials(channels):
    """Scratch for the library's per-block sums: 2 doubles for each of its blocks per channel."""
    return device.scratch((2 * library().S2C_CUDA_BATCHNORM_BLOCKS * channels,), np.float64)


def batchnorm_forward(x, gamma, beta, running_mean, running_var, training, momentum=0.1,
                      eps=1e-5):
    """y = gamma * (x - mean) * invstd + beta per channel -> (y (x's shape), (mean, invstd)).

    x [N, C] or [N, C, H, W]; gamma, beta, running_mean, running_var [C]. Training: the batch
    mean and biased variance, and the running statistics updated in place with the unbiased
    variance (as PyTorch). Evaluation: the running statistics, unchanged.
    """
    x, gamma, beta, running_mean, running_var, training, momentum, eps = (
        checks.batchnorm_forward(x, gamma, beta, running_mean, running_var, training, momentum,
                                 eps))  # fmt: skip
    c = x.shape[1]
    y, mean, invstd = device.empty(x.shape), device.empty((c,)), device.empty((c,))
    partials = _partials(c) if training else None  # evaluation reads the running statistics
    call("s2c_cuda_batchnorm_forward", x, gamma, beta, running_mean, running_var, y, mean, invstd,
         partials, *_sizes(x), training, momentum, eps)
    return y, (mean, invstd)


def batchnorm_backward(dy, x, gamma, saved):
    """Training-mode gradients (the batch statistics depend on x) -> (dx, dgamma [C], dbeta [C]).

    dy and x [N, C] or [N, C, H, W]; gamma [C]; saved = (mean, invstd) from batchnorm_forward.
    """
    dy, x, gamma, (mean, invstd) = checks.batchnorm_backward(dy, x, gamma, saved)
    c = x.shape[1]
    dx, dgamma, dbeta = device.empty(x.shape), device.empty((c,)), device.empty((c,))
    call("s2c_cuda_batchnorm_backward", dy, x, gamma, mean, invstd, dx, dgamma, dbeta,
         _partials(c), *_sizes(x))
    return dx, dgamma, dbeta

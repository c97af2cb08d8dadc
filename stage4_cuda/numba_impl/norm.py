"""Batch normalization (week 16) over x [N, C] or [N, C, H, W], per channel C.

Both directions are two launches: one block per channel reduces over its N*H*W values (a tree
in shared memory, as in reduce.py), then one thread per element applies the per-channel result.
x is seen as [N, C, L] with L = H*W (1 for [N, C]); element e of a channel is x[n, c, l] with
n = e // L, l = e % L.
"""

import math

from numba import cuda, float32

from ..runtime import device
from ..runtime.checks import checks
from ..runtime.device import flat
from ..runtime.launch import launch, launch_elementwise
from .reduce import ROW_THREADS, block_sum

ONE = float32(1)


@cuda.jit(device=True)
def _at(x, n, c, l, channels, length):
    """x[n, c, l] of a flat [N, C, L] array."""
    return x[(n * channels + c) * length + l]


@cuda.jit
def _statistics(x, channels, length, running_mean, running_var, momentum, eps, training,
                mean, invstd):
    # BEGIN SOLUTION week 16, task batchnorm_forward
    cache = cuda.shared.array(ROW_THREADS, float32)
    c, t = cuda.blockIdx.x, cuda.threadIdx.x
    count = x.size // channels
    if training:  # two passes, mean then squared deviations: stable, unlike E[x^2] - E[x]^2
        partial = float32(0)
        for e in range(t, count, ROW_THREADS):
            partial += _at(x, e // length, c, e % length, channels, length)
        m = block_sum(cache, partial) / float32(count)
        partial = float32(0)
        for e in range(t, count, ROW_THREADS):
            d = _at(x, e // length, c, e % length, channels, length) - m
            partial += d * d
        var = block_sum(cache, partial) / float32(count)
        if t == 0:
            running_mean[c] = (ONE - momentum) * running_mean[c] + momentum * m
            unbiased = var * float32(count / (count - 1))
            running_var[c] = (ONE - momentum) * running_var[c] + momentum * unbiased
    else:
        m, var = running_mean[c], running_var[c]
    if t == 0:
        mean[c] = m
        invstd[c] = ONE / math.sqrt(var + eps)
    # END SOLUTION


@cuda.jit
def _normalize(x, channels, length, gamma, beta, mean, invstd, y):
    # BEGIN SOLUTION week 16, task batchnorm_forward
    i = cuda.grid(1)
    if i < y.size:
        c = (i // length) % channels
        y[i] = (x[i] - mean[c]) * (gamma[c] * invstd[c]) + beta[c]
    # END SOLUTION


def _geometry(x):
    """(channels, length) of x seen as [N, C, L]."""
    return x.shape[1], x.size // (x.shape[0] * x.shape[1])


def batchnorm_forward(x, gamma, beta, running_mean, running_var, training, momentum=0.1,
                      eps=1e-5):
    """y = gamma * (x - mean) * invstd + beta per channel -> (y (x's shape), (mean, invstd)).

    x [N, C] or [N, C, H, W]; gamma, beta, running_mean, running_var [C]. Training: the batch
    mean and biased variance, and the running statistics updated in place with the unbiased
    variance (as PyTorch). Evaluation: the running statistics, unchanged.
    """
    checked = checks.batchnorm_forward(x, gamma, beta, running_mean, running_var, training,
                                       momentum, eps)
    x, gamma, beta, running_mean, running_var, training, momentum, eps = checked
    momentum, eps = float32(momentum), float32(eps)  # the kernel computes in float32
    c = x.shape[1]
    channels, length = _geometry(x)
    y, mean, invstd = device.empty(x.shape), device.empty((c,)), device.empty((c,))
    launch(_statistics, c, ROW_THREADS, flat(x), channels, length, running_mean, running_var,
           momentum, eps, training, mean, invstd)
    launch_elementwise(_normalize, x.size, flat(x), channels, length, gamma, beta, mean, invstd,
                       flat(y))
    return y, (mean, invstd)


@cuda.jit
def _gradient_sums(dy, x, channels, length, mean, invstd, dgamma, dbeta):
    # dbeta = sum(dy), dgamma = sum(dy * x_hat) over each channel's values.
    # BEGIN SOLUTION week 16, task batchnorm_backward
    cache = cuda.shared.array(ROW_THREADS, float32)
    c, t = cuda.blockIdx.x, cuda.threadIdx.x
    count = x.size // channels
    sum_dy, sum_dy_xhat = float32(0), float32(0)
    for e in range(t, count, ROW_THREADS):
        n, l = e // length, e % length
        g = _at(dy, n, c, l, channels, length)
        sum_dy += g
        sum_dy_xhat += g * (_at(x, n, c, l, channels, length) - mean[c]) * invstd[c]
    sum_dy = block_sum(cache, sum_dy)
    sum_dy_xhat = block_sum(cache, sum_dy_xhat)
    if t == 0:
        dbeta[c] = sum_dy
        dgamma[c] = sum_dy_xhat
    # END SOLUTION


@cuda.jit
def _input_gradient(dy, x, channels, length, gamma, mean, invstd, dgamma, dbeta, dx):
    # dx = gamma * invstd * (dy - mean(dy) - x_hat * mean(dy * x_hat)): the two means are the
    # gradient flowing through the batch mean and the batch variance.
    # BEGIN SOLUTION week 16, task batchnorm_backward
    i = cuda.grid(1)
    if i < dx.size:
        c = (i // length) % channels
        count = x.size // channels
        x_hat = (x[i] - mean[c]) * invstd[c]
        dx[i] = gamma[c] * invstd[c] * (dy[i] - dbeta[c] / count - x_hat * dgamma[c] / count)
    # END SOLUTION


def batchnorm_backward(dy, x, gamma, saved):
    """Training-mode gradients (the batch statistics depend on x) -> (dx, dgamma [C], dbeta [C]).

    dy and x [N, C] or [N, C, H, W]; gamma [C]; saved = (mean, invstd) from batchnorm_forward.
    """
    dy, x, gamma, (mean, invstd) = checks.batchnorm_backward(dy, x, gamma, saved)
    c = x.shape[1]
    channels, length = _geometry(x)
    dx, dgamma, dbeta = device.empty(x.shape), device.empty((c,)), device.empty((c,))
    launch(_gradient_sums, c, ROW_THREADS, flat(dy), flat(x), channels, length, mean, invstd,
           dgamma, dbeta)
    launch_elementwise(_input_gradient, x.size, flat(dy), flat(x), channels, length, gamma, mean,
                       invstd, dgamma, dbeta, flat(dx))
    return dx, dgamma, dbeta

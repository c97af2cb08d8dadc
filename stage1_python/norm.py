"""Batch normalization per channel, for x [N, C] or [N, C, H, W] (week 6).

Channel c's statistics are over every x[n][c] (and every h, w): M = N*H*W values (M = N for
[N, C]). Training normalizes with the batch statistics and updates the running ones in place;
evaluation normalizes with the running statistics.
"""

import functools
import math

from ._checks import checks, tensor_shape
from ._tensor import flatten, map_elements


def _channel_values(x, channel):
    """The M values of one channel of x [N, C] or [N, C, H, W], as a flat list."""
    return [value for sample in x for value in flatten(sample[channel])]


def _map_channels(fn, *tensors):
    """fn(channel, *elements) over same-shape tensors [N, C] or [N, C, H, W]: a new tensor."""
    return [
        [
            map_elements(functools.partial(fn, channel), *(t[i][channel] for t in tensors))
            for channel in range(len(tensors[0][i]))
        ]
        for i in range(len(tensors[0]))
    ]


def _channels(x):
    """x [N, C] or [N, C, H, W] -> (c, m) with m = N*H*W values per channel."""
    shape = tensor_shape(x)
    return shape[1], math.prod(shape) // shape[1]


def batchnorm_forward(x, gamma, beta, running_mean, running_var, training, momentum=0.1, eps=1e-5):
    """y = gamma * (x - mean) / sqrt(var + eps) + beta per channel -> (y, saved).

    x [N, C] or [N, C, H, W]; gamma, beta, running_mean, running_var [C]. Training uses the batch
    mean and biased variance and updates, in place, running = (1 - momentum) * running + momentum
    * batch statistic (the unbiased variance for running_var, as PyTorch). Evaluation uses the
    running statistics and leaves them alone. saved = (mean [C], invstd [C]), the statistics used,
    invstd = 1 / sqrt(var + eps).
    """
    x, gamma, beta, running_mean, running_var, training, momentum, eps = checks.batchnorm_forward(
        x, gamma, beta, running_mean, running_var, training, momentum, eps
    )
    c, m = _channels(x)
    # BEGIN SOLUTION week 6, task batchnorm_forward
    if training:
        mean, var = [], []
        for channel in range(c):
            values = _channel_values(x, channel)
            batch_mean = sum(values) / m
            batch_var = sum((v - batch_mean) ** 2 for v in values) / m  # biased: normalizes
            mean.append(batch_mean)
            var.append(batch_var)
            running_mean[channel] = (1 - momentum) * running_mean[channel] + momentum * batch_mean
            unbiased_var = batch_var * m / (m - 1)
            running_var[channel] = (1 - momentum) * running_var[channel] + momentum * unbiased_var
    else:
        mean, var = list(running_mean), list(running_var)
    # a negative running variance has no square root: NaN, as in PyTorch (math.sqrt would raise)
    invstd = [1.0 / math.sqrt(v + eps) if v + eps >= 0 else math.nan for v in var]
    y = _map_channels(
        lambda channel, v: gamma[channel] * (v - mean[channel]) * invstd[channel] + beta[channel],
        x,
    )
    return y, (mean, invstd)
    # END SOLUTION


def batchnorm_backward(dy, x, gamma, saved):
    """Training-mode gradients (the batch statistics depend on x) -> (dx, dgamma [C], dbeta [C]).

    dy and x [N, C] or [N, C, H, W]; gamma [C]; saved = (mean [C], invstd [C]) from the forward.
    """
    dy, x, gamma, (mean, invstd) = checks.batchnorm_backward(dy, x, gamma, saved)
    c, m = _channels(x)
    # BEGIN SOLUTION week 6, task batchnorm_backward
    dbeta, dgamma = [], []
    for channel in range(c):
        grads = _channel_values(dy, channel)
        values = _channel_values(x, channel)
        dbeta.append(sum(grads))
        dgamma.append(
            sum(
                g * (v - mean[channel]) * invstd[channel]
                for g, v in zip(grads, values, strict=True)
            )
        )

    def input_grad(channel, g, v):
        # x feeds y directly and through the batch mean and variance: the two sums remove the
        # parts of g that the mean (dbeta) and the variance (dgamma, along x_hat) absorb.
        x_hat = (v - mean[channel]) * invstd[channel]
        mean_part = dbeta[channel] / m
        var_part = x_hat * dgamma[channel] / m
        return gamma[channel] * invstd[channel] * (g - mean_part - var_part)

    dx = _map_channels(input_grad, dy, x)
    return dx, dgamma, dbeta
    # END SOLUTION

"""Batch normalization (week 13, csrc/norm.c), per channel, for x [N, C] and [N, C, H, W]."""

import math

from ._checks import checks, new_output
from ._native import call, pointer


def _channels(x):
    """(n, c, spatial) of x [N, C] or [N, C, H, W], spatial = H*W or 1."""
    n, c = x.shape[:2]
    return n, c, math.prod(x.shape[2:])


def batchnorm_forward(x, gamma, beta, running_mean, running_var, training, momentum=0.1, eps=1e-5):
    """y = gamma * (x - mean) / sqrt(var + eps) + beta per channel -> (y, (mean, invstd)).

    gamma, beta, running_mean, running_var [C]. Training normalizes with the batch mean and biased
    variance and updates running_mean and running_var in place (running = (1 - momentum) *
    running + momentum * batch statistic, the unbiased variance for running_var, as PyTorch);
    evaluation normalizes with the running statistics and leaves them alone. mean and invstd [C]
    are the statistics used, invstd = 1 / sqrt(var + eps).
    """
    op = "batchnorm_forward"
    x, gamma, beta, running_mean, running_var, training, momentum, eps = checks.batchnorm_forward(
        x, gamma, beta, running_mean, running_var, training, momentum, eps
    )
    n, c, spatial = _channels(x)
    y = new_output(op, x.shape)
    mean = new_output(op, (c,))
    invstd = new_output(op, (c,))
    call(
        "s2c_batchnorm_forward",
        *map(pointer, (x, gamma, beta, running_mean, running_var, y, mean, invstd)),
        n,
        c,
        spatial,
        int(training),
        momentum,
        eps,
    )
    return y, (mean, invstd)


def batchnorm_backward(dy, x, gamma, saved):
    """Training-mode gradients -> (dx [x's shape], dgamma [C], dbeta [C]); saved = (mean,
    invstd) from batchnorm_forward."""
    op = "batchnorm_backward"
    dy, x, gamma, (mean, invstd) = checks.batchnorm_backward(dy, x, gamma, saved)
    n, c, spatial = _channels(x)
    dx = new_output(op, x.shape)
    dgamma = new_output(op, (c,))
    dbeta = new_output(op, (c,))
    call(
        "s2c_batchnorm_backward",
        *map(pointer, (dy, x, gamma, mean, invstd, dx, dgamma, dbeta)),
        n,
        c,
        spatial,
    )
    return dx, dgamma, dbeta

"""Batch normalization (week 13, csrc/norm.c), per channel, for x [N, C] and [N, C, H, W]."""

import math

from . import _checks as checks
from ._native import call, pointer


def _channels(op, name, x):
    """Check x [N, C] or [N, C, H, W]; returns it with (n, c, spatial), spatial = H*W or 1."""
    x = checks.readable(op, name, x, ("[N, C]", "[N, C, H, W]"))
    n, c = x.shape[:2]
    return x, n, c, math.prod(x.shape[2:])


def batchnorm_forward(x, gamma, beta, running_mean, running_var, training, momentum=0.1, eps=1e-5):
    """y = gamma * (x - mean) / sqrt(var + eps) + beta per channel -> (y, (mean, invstd)).

    gamma, beta, running_mean, running_var [C]. Training normalizes with the batch mean and biased
    variance and updates running_mean and running_var in place (running = (1 - momentum) *
    running + momentum * batch statistic, the unbiased variance for running_var, as PyTorch);
    evaluation normalizes with the running statistics and leaves them alone. mean and invstd [C]
    are the statistics used, invstd = 1 / sqrt(var + eps).
    """
    op = "batchnorm_forward"
    x, n, c, spatial = _channels(op, "x", x)
    gamma = checks.shaped(op, "gamma", gamma, "[C]", (c,))
    beta = checks.shaped(op, "beta", beta, "[C]", (c,))
    running_mean = checks.in_place(op, "running_mean", running_mean, (c,))
    running_var = checks.in_place(op, "running_var", running_var, (c,))
    training = checks.flag(op, "training", training)
    momentum = checks.real(op, "momentum", momentum, 0, 1)
    eps = checks.real(op, "eps", eps, 0, low_open=True)
    if training and n * spatial < 2:
        checks.fail(
            op,
            "training needs more than one value per channel (N*H*W >= 2) for the unbiased "
            f"variance, got x with {n * spatial}",
        )
    if not training and running_var.min() < 0:
        checks.fail(op, f"running_var must be >= 0, got {running_var.min()}")
    y = checks.new_output(op, x.shape)
    mean = checks.new_output(op, (c,))
    invstd = checks.new_output(op, (c,))
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
    x, n, c, spatial = _channels(op, "x", x)
    dy = checks.same_shape(op, "dy", dy, "x", x.shape)
    gamma = checks.shaped(op, "gamma", gamma, "[C]", (c,))
    if not (isinstance(saved, (tuple, list)) and len(saved) == 2):
        wanted = f"the forward's (mean [C={c}], invstd [C={c}])"
        checks.fail(op, f"saved must be {wanted}, got {type(saved).__name__}")
    mean = checks.shaped(op, "saved[0] (mean)", saved[0], "[C]", (c,))
    invstd = checks.shaped(op, "saved[1] (invstd)", saved[1], "[C]", (c,))
    dx = checks.new_output(op, x.shape)
    dgamma = checks.new_output(op, (c,))
    dbeta = checks.new_output(op, (c,))
    call(
        "s2c_batchnorm_backward",
        *map(pointer, (dy, x, gamma, mean, invstd, dx, dgamma, dbeta)),
        n,
        c,
        spatial,
    )
    return dx, dgamma, dbeta

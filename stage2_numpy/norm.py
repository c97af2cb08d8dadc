"""Batch normalization per channel, for [N, C] and [N, C, H, W] inputs (week 8).

Training normalizes with the batch statistics and updates the running ones in place; evaluation
normalizes with the running statistics. The statistics of channel c run over every axis but C;
both ops view x as [N, C, L] (L = H*W, or 1 for [N, C]) to treat the two layouts alike.
"""

import numpy as np

from ._checks import checks


def batchnorm_forward(x, gamma, beta, running_mean, running_var, training, momentum=0.1,
                      eps=1e-5):
    """y = gamma * (x - mean) * invstd + beta per channel -> (y (x's shape), saved).

    x [N, C] or [N, C, H, W]; gamma, beta, running_mean, running_var [C].
    Training: batch mean and biased variance; running_mean and running_var are updated in place
    with the unbiased variance (as PyTorch): r = (1 - momentum) * r + momentum * batch statistic.
    Evaluation: the running statistics, unchanged.
    saved = (mean [C], invstd [C]), the statistics used, invstd = 1 / sqrt(var + eps).
    """
    x, gamma, beta, running_mean, running_var, training, momentum, eps = checks.batchnorm_forward(
        x, gamma, beta, running_mean, running_var, training, momentum, eps
    )
    c = x.shape[1]
    count = x.size // c  # values per channel
    # BEGIN SOLUTION week 8, task batchnorm_forward
    x3 = x.reshape(x.shape[0], c, -1)  # [N, C, L]
    if training:
        mean = x3.mean(axis=(0, 2))
        centered = x3 - mean[:, None]
        var = np.square(centered).mean(axis=(0, 2))  # two passes: stable, unlike E[x^2] - E[x]^2
        running_mean *= 1 - momentum
        running_mean += momentum * mean
        running_var *= 1 - momentum
        running_var += (momentum * count / (count - 1)) * var
    else:
        mean = running_mean.copy()  # saved must not change when the running statistics do
        var = running_var
        centered = x3 - mean[:, None]
    invstd = 1 / np.sqrt(var + eps)
    y = centered * (gamma * invstd)[:, None]  # scale and normalize in one pass
    y += beta[:, None]
    return y.reshape(x.shape), (mean, invstd)
    # END SOLUTION


def batchnorm_backward(dy, x, gamma, saved):
    """Training-mode gradients (the batch statistics depend on x) -> (dx, dgamma [C], dbeta [C]).

    dy and x [N, C] or [N, C, H, W]; gamma [C]; saved = (mean, invstd) from batchnorm_forward.
    """
    dy, x, gamma, (mean, invstd) = checks.batchnorm_backward(dy, x, gamma, saved)
    c = x.shape[1]
    # BEGIN SOLUTION week 8, task batchnorm_backward
    n = x.shape[0]
    count = x.size // c
    x3, dy3 = x.reshape(n, c, -1), dy.reshape(n, c, -1)  # [N, C, L]
    x_hat = (x3 - mean[:, None]) * invstd[:, None]
    dbeta = dy3.sum(axis=(0, 2))
    dgamma = np.einsum("ncl,ncl->c", dy3, x_hat)  # sum of dy * x_hat, without the product array
    # dx = gamma * invstd * (dy - mean(dy) - x_hat * mean(dy * x_hat)): the two means are the
    # gradient flowing through the batch mean and the batch variance.
    dx = dy3 - (dbeta / count)[:, None]
    dx -= x_hat * (dgamma / count)[:, None]
    dx *= (gamma * invstd)[:, None]
    return dx.reshape(x.shape), dgamma, dbeta
    # END SOLUTION

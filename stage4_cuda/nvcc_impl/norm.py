"""Batch normalization (csrc/norm.cu, week 16) over x [N, C] or [N, C, H, W], per channel: a block
per channel reduces, then a thread per element applies the per-channel result."""

from ..numba_impl import _device
from ..numba_impl._checks import checks
from ._library import call


def _sizes(x):
    """(N, C, L) of x seen as [N, C, L], L = H*W (1 for [N, C])."""
    n, c = x.shape[0], x.shape[1]
    return n, c, x.size // (n * c)


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
    y, mean, invstd = _device.empty(x.shape), _device.empty((c,)), _device.empty((c,))
    call("s2c_cuda_batchnorm_forward", x, gamma, beta, running_mean, running_var, y, mean, invstd,
         *_sizes(x), training, momentum, eps)
    return y, (mean, invstd)


def batchnorm_backward(dy, x, gamma, saved):
    """Training-mode gradients (the batch statistics depend on x) -> (dx, dgamma [C], dbeta [C]).

    dy and x [N, C] or [N, C, H, W]; gamma [C]; saved = (mean, invstd) from batchnorm_forward.
    """
    dy, x, gamma, (mean, invstd) = checks.batchnorm_backward(dy, x, gamma, saved)
    c = x.shape[1]
    dx, dgamma, dbeta = _device.empty(x.shape), _device.empty((c,)), _device.empty((c,))
    call("s2c_cuda_batchnorm_backward", dy, x, gamma, mean, invstd, dx, dgamma, dbeta, *_sizes(x))
    return dx, dgamma, dbeta

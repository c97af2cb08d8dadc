"""Layer norm over the last dimension and GELU (csrc/attention.cu, week 22): a block per row of
x seen as [rows, D] for layer norm's statistics and dx, a thread per feature for dgamma and
dbeta; GELU elementwise, the form a flag of the library's function."""

import math

from ..runtime import device
from ._checks import checks
from ._library import call


def _rows(x):
    """(rows, d) of x [N, D] or [N, T, D] seen as [rows, D]."""
    return math.prod(x.shape[:-1]), x.shape[-1]


def layernorm(x, gamma, beta, eps=1e-5):
    """y = gamma * (x - mean) * invstd + beta, row by row over the last axis -> (y, saved).

    x [N, D] or [N, T, D]; gamma, beta [D]. mean and the biased variance are each row's,
    invstd = 1 / sqrt(var + eps); saved = (mean, invstd), each of x's shape without D.
    """
    x, gamma, beta, eps = checks.layernorm(x, gamma, beta, eps)
    y, mean, invstd = device.empty(x.shape), device.empty(x.shape[:-1]), device.empty(x.shape[:-1])
    call("s2c_cuda_layernorm", x, gamma, beta, y, mean, invstd, *_rows(x), eps)
    return y, (mean, invstd)


def layernorm_backward(dy, x, gamma, saved):
    """Gradients of layernorm -> (dx (x's shape), dgamma [D], dbeta [D]).

    dy and x [N, D] or [N, T, D]; gamma [D]; saved = (mean, invstd) from layernorm.
    """
    dy, x, gamma, (mean, invstd) = checks.layernorm_backward(dy, x, gamma, saved)
    rows, d = _rows(x)
    dx, dgamma, dbeta = device.empty(x.shape), device.empty((d,)), device.empty((d,))
    call("s2c_cuda_layernorm_backward", dy, x, gamma, mean, invstd, dx, dgamma, dbeta, rows, d)
    return dx, dgamma, dbeta


def gelu(x, approximate="none"):
    """x * Phi(x) elementwise (Phi the normal distribution function), any shape; approximate
    "none" (erf) or "tanh" (PyTorch's tanh form)."""
    x, approximate = checks.gelu(x, approximate)
    y = device.empty(x.shape)
    call("s2c_cuda_gelu", x, y, x.size, approximate == "tanh")
    return y


def gelu_backward(x, dy, approximate="none"):
    """dy * gelu'(x) (x is the forward's input), of the form `approximate` names."""
    x, dy, approximate = checks.gelu_backward(x, dy, approximate)
    dx = device.empty(x.shape)
    call("s2c_cuda_gelu_backward", x, dy, dx, x.size, approximate == "tanh")
    return dx

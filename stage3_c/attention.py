"""Layer norm over the last dimension and GELU (week 22, csrc/attention.c).

C sees layer norm's x [N, D] or [N, T, D] as [rows, D]: rows = N (or N*T) vectors of D features,
each normalized with its own statistics. GELU is elementwise; C takes its form as a flag.
"""

import math

from ._checks import checks, new_output
from ._native import call, pointer


def _rows(x):
    """(rows, d) of x seen as [rows, D]."""
    return math.prod(x.shape[:-1]), x.shape[-1]


def layernorm(x, gamma, beta, eps=1e-5):
    """y = gamma * (x - mean) * invstd + beta, row by row over the last axis -> (y, saved).

    x [N, D] or [N, T, D]; gamma, beta [D]. mean and the biased variance are each row's,
    invstd = 1 / sqrt(var + eps); saved = (mean, invstd), each of x's shape without D.
    """
    op = "layernorm"
    x, gamma, beta, eps = checks.layernorm(x, gamma, beta, eps)
    y = new_output(op, x.shape)
    mean, invstd = new_output(op, x.shape[:-1]), new_output(op, x.shape[:-1])
    call("s2c_layernorm", *map(pointer, (x, gamma, beta, y, mean, invstd)), *_rows(x), eps)
    return y, (mean, invstd)


def layernorm_backward(dy, x, gamma, saved):
    """Gradients of layernorm -> (dx (x's shape), dgamma [D], dbeta [D]); saved = (mean, invstd)
    from layernorm."""
    op = "layernorm_backward"
    dy, x, gamma, (mean, invstd) = checks.layernorm_backward(dy, x, gamma, saved)
    d = x.shape[-1]
    dx, dgamma, dbeta = new_output(op, x.shape), new_output(op, (d,)), new_output(op, (d,))
    call("s2c_layernorm_backward", *map(pointer, (dy, x, gamma, mean, invstd, dx, dgamma, dbeta)),
         *_rows(x))  # fmt: skip
    return dx, dgamma, dbeta


def gelu(x, approximate="none"):
    """x * Phi(x) elementwise (Phi the normal distribution function), any shape; approximate
    "none" (erf) or "tanh" (PyTorch's tanh form)."""
    x, approximate = checks.gelu(x, approximate)
    y = new_output("gelu", x.shape)
    call("s2c_gelu", pointer(x), pointer(y), x.size, int(approximate == "tanh"))
    return y


def gelu_backward(x, dy, approximate="none"):
    """dy * gelu'(x) (x is the forward's input), of the form `approximate` names."""
    x, dy, approximate = checks.gelu_backward(x, dy, approximate)
    dx = new_output("gelu_backward", x.shape)
    call("s2c_gelu_backward", pointer(x), pointer(dy), pointer(dx), x.size,
         int(approximate == "tanh"))  # fmt: skip
    return dx

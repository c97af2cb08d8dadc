"""Layer norm over the last dimension, GELU and scaled dot-product attention (week 22,
csrc/attention.c).

C sees layer norm's x [N, D] or [N, T, D] as [rows, D]: rows = N (or N*T) vectors of D features,
each normalized with its own statistics. GELU is elementwise; C takes its form as a flag.
Attention's q [B, H, N, D] is [B*H, N, D] to C: every (batch, head) pair is one head of its own.
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


def attention(q, k, v, causal=False, scale=None):
    """Scaled dot-product attention -> (y [B, H, N, D], saved = (lse [B, H, N],)).

    q [B, H, N, D]; k, v [B, H, M, D]; scale None means 1 / sqrt(D). S = scale * q @ k^T, keys
    j > i masked with causal; lse = log(sum_j exp(S_ij)); y = exp(S - lse) @ v.
    """
    op = "attention"
    q, k, v, causal, scale = checks.attention(q, k, v, causal, scale)
    b, h, n, d = q.shape
    y, lse = new_output(op, q.shape), new_output(op, q.shape[:-1])
    call("s2c_attention", *map(pointer, (q, k, v, y, lse)), b * h, n, k.shape[2], d, int(causal),
         scale)  # fmt: skip
    return y, (lse,)


def attention_backward(dy, q, k, v, y, saved, causal=False, scale=None):
    """Gradients of attention -> (dq [B, H, N, D], dk [B, H, M, D], dv [B, H, M, D]); saved =
    (lse,) from attention, from which the scores' softmax is recomputed."""
    op = "attention_backward"
    dy, q, k, v, y, (lse,), causal, scale = checks.attention_backward(
        dy, q, k, v, y, saved, causal, scale
    )
    b, h, n, d = q.shape
    dq, dk, dv = new_output(op, q.shape), new_output(op, k.shape), new_output(op, k.shape)
    call("s2c_attention_backward", *map(pointer, (dy, q, k, v, y, lse, dq, dk, dv)), b * h, n,
         k.shape[2], d, int(causal), scale)  # fmt: skip
    return dq, dk, dv

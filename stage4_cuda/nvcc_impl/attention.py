"""Layer norm over the last dimension and GELU (csrc/attention.cu, week 22): a block per row of
x seen as [rows, D] for layer norm's statistics and dx, blocks of rows for dgamma and dbeta's
partial sums, then a thread per feature adding them; GELU elementwise, the form a flag of the
library's function. Scaled dot-product attention (csrc/attention/): the ladder's rungs, by name,
and its backward."""

import math

from ..runtime import device
from . import _checks
from ._checks import checks
from ._library import call, library
from ._scratch import shared_scratch

# The rungs of the attention ladder (csrc/attention/0N_NAME.cu, s2c_cuda_attention_NAME), slowest
# first; every rung writes the lse the backward reads.
ATTENTION_KERNELS = ("naive", "online", "flash1", "flash2", "flash2_regs")
BEST_ATTENTION = "flash2_regs"  # bench.attention_ladder measures it against the rest


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
    partial = shared_scratch(2 * library().s2c_cuda_layernorm_chunks(rows) * d)
    call("s2c_cuda_layernorm_backward", dy, x, gamma, mean, invstd, dx, dgamma, dbeta, partial,
         rows, d)  # fmt: skip
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


def scratch_floats(name, heads, n, m):
    """The floats of scratch rung `name` (or "backward") needs for `heads` slices of n queries
    and m keys (csrc/attention/attention.cuh): S for rungs 1 and 2; a flag per head for the
    others, with each query's running maximum and sum for rung 3 and its Dsum for the backward."""
    return {"naive": heads * n * m, "online": heads * n * m, "flash1": heads + 2 * heads * n,
            "flash2": heads, "flash2_regs": heads,
            "backward": heads + heads * n}[name]  # fmt: skip


MAX_D = 128  # the head dimension the tiles of rungs 3 and 4 and the backward hold


def _heads(op, q, k):
    """(heads, n, m, d) of q [B, H, N, D] and k [B, H, M, D] seen as [heads, N or M, D]; a
    ValueError naming D past MAX_D."""
    *_, n, d = q.shape
    if d > MAX_D:
        raise ValueError(f"{op}: the nvcc variant's tiles hold D <= {MAX_D}, got D = {d}")
    return math.prod(q.shape[:-2]), n, k.shape[len(k.shape) - 2], d


def attention(q, k, v, causal=False, scale=None, kernel="best"):
    """softmax(scale q k^T, causal: key j masked for query i when j > i) v -> (y, (lse,)).

    q [B, H, N, D], k and v [B, H, M, D] (D <= 128); scale None: 1 / sqrt(D). y [B, H, N, D];
    lse [B, H, N], each row's log-sum-exp of its scores (the backward's input). `kernel` picks a
    rung of ATTENTION_KERNELS by name or number 1-5.
    """
    q, k, v, causal, scale = checks.attention(q, k, v, causal, scale)
    name = _checks.kernel_name("attention", kernel, ATTENTION_KERNELS, BEST_ATTENTION)
    heads, n, m, d = _heads("attention", q, k)
    y, lse = device.empty(q.shape), device.empty(q.shape[:-1])
    scratch = shared_scratch(scratch_floats(name, heads, n, m))
    call(f"s2c_cuda_attention_{name}", q, k, v, y, lse, scratch, heads, n, m, d, causal, scale)
    return y, (lse,)


def attention_backward(dy, q, k, v, y, saved, causal=False, scale=None):
    """Gradients of attention -> (dq, dk, dv), of q's, k's and v's shapes: P recomputed tile by
    tile from q, k and saved = (lse,), never an N x M buffer; every sum in a fixed order."""
    dy, q, k, v, y, (lse,), causal, scale = checks.attention_backward(
        dy, q, k, v, y, saved, causal, scale
    )
    heads, n, m, d = _heads("attention_backward", q, k)
    dq, dk, dv = device.empty(q.shape), device.empty(k.shape), device.empty(v.shape)
    scratch = shared_scratch(scratch_floats("backward", heads, n, m))
    call("s2c_cuda_attention_backward", dy, q, k, v, y, lse, dq, dk, dv, scratch, heads, n, m, d,
         causal, scale)  # fmt: skip
    return dq, dk, dv

"""What a transformer block needs besides matmul and softmax (week 21): layer normalization over
the last dimension, the GELU activation and scaled dot-product attention, vectorized.

layernorm's statistics are each row's, over the last axis (D): NumPy's reductions with
`axis=-1, keepdims=True` give [..., 1] arrays that broadcast back over the row. gelu is
elementwise, x * Phi(x) with Phi the standard normal's distribution function, exactly (erf) or by
tanh. attention's matmuls are batched: np.matmul multiplies the last two axes of [B, H, N, D] and
[B, H, D, M] for every (batch, head) pair at once, so the score matrix is [B, H, N, M].
"""

import math

import numpy as np

from ._checks import checks

SQRT_HALF = math.sqrt(0.5)  # erf(x / sqrt(2)) = erf(x * SQRT_HALF)
NORMAL_DENSITY = 1.0 / math.sqrt(2.0 * math.pi)  # the standard normal density at 0
TANH_SCALE = math.sqrt(2.0 / math.pi)  # the tanh form: tanh(TANH_SCALE * (x + TANH_CUBIC * x^3))
TANH_CUBIC = 0.044715


def layernorm(x, gamma, beta, eps=1e-5):
    """y = gamma * (x - mean) * invstd + beta, row by row over the last axis -> (y, saved).

    x [N, D] or [N, T, D]; gamma, beta [D]. mean and the biased variance are each row's,
    invstd = 1 / sqrt(var + eps); saved = (mean, invstd), each of x's shape without D.
    """
    x, gamma, beta, eps = checks.layernorm(x, gamma, beta, eps)
    # BEGIN SOLUTION week 21, task layernorm
    mean = x.mean(axis=-1, keepdims=True)
    centered = x - mean
    var = np.square(centered).mean(axis=-1, keepdims=True)  # two passes: stable
    invstd = 1 / np.sqrt(var + eps)
    y = centered * invstd
    y *= gamma
    y += beta
    return y, (mean[..., 0], invstd[..., 0])
    # END SOLUTION


def layernorm_backward(dy, x, gamma, saved):
    """Gradients of layernorm -> (dx (x's shape), dgamma [D], dbeta [D]).

    dy and x [N, D] or [N, T, D]; gamma [D]; saved = (mean, invstd) from layernorm.
    """
    dy, x, gamma, (mean, invstd) = checks.layernorm_backward(dy, x, gamma, saved)
    # BEGIN SOLUTION week 21, task layernorm_backward
    d = x.shape[-1]
    invstd = invstd[..., None]
    x_hat = (x - mean[..., None]) * invstd
    dy2, x_hat2 = dy.reshape(-1, d), x_hat.reshape(-1, d)  # every row of every sequence
    dbeta = dy2.sum(axis=0)
    dgamma = np.einsum("rd,rd->d", dy2, x_hat2)  # sum of dy * x_hat, without the product array
    # g = dy * gamma is x_hat's gradient; dx = invstd * (g - mean(g) - x_hat * mean(g * x_hat)):
    # the two row means are the gradient flowing through the row's mean and variance.
    g = dy * gamma
    dx = g - g.mean(axis=-1, keepdims=True)
    dx -= x_hat * np.einsum("...d,...d->...", g, x_hat)[..., None] / d
    dx *= invstd
    return dx, dgamma, dbeta
    # END SOLUTION


def gelu(x, approximate="none"):
    """x * Phi(x) elementwise, x any shape; approximate "none": Phi(x) = (1 + erf(x / sqrt(2))) / 2
    exactly, "tanh": (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))) / 2 (as PyTorch's F.gelu)."""
    x, approximate = checks.gelu(x, approximate)
    # BEGIN SOLUTION week 21, task gelu
    if approximate == "tanh":
        return x * _tanh_form(x)[0]
    return 0.5 * x * (1 + _erf(x * SQRT_HALF))
    # END SOLUTION


def gelu_backward(x, dy, approximate="none"):
    """dy * gelu'(x), x (the forward's input) and dy one shape (any). Exact: gelu'(x) = Phi(x) +
    x * phi(x), phi the normal density. Tanh form: Phi(x) ~ s = (1 + tanh(u)) / 2 = sigmoid(2u),
    u = sqrt(2 / pi) * (x + 0.044715 * x^3), so gelu'(x) = s * (1 + 2x * (1 - s) * du/dx)."""
    x, dy, approximate = checks.gelu_backward(x, dy, approximate)
    # BEGIN SOLUTION week 21, task gelu_backward
    if approximate == "tanh":
        s, one_minus_s = _tanh_form(x)
        du = TANH_SCALE * (1 + 3 * TANH_CUBIC * (x * x))
        return dy * (s * (1 + 2 * x * one_minus_s * du))
    return dy * (0.5 * (1 + _erf(x * SQRT_HALF)) + x * NORMAL_DENSITY * np.exp(-0.5 * (x * x)))
    # END SOLUTION


def _tanh_form(x):
    """(s, 1 - s) for gelu's tanh form: s = (1 + tanh(u)) / 2 with u = sqrt(2 / pi) * (x +
    0.044715 * x^3). Computed as sigmoid(2u) = 1 / (1 + exp(-2u)), from exp(-|2u|), which never
    overflows: 1 + tanh(u) and 1 - tanh(u)^2 cancel to a few digits where tanh(u) is near -1 or 1
    (in float32, an error of 1e-6 in gelu' at x = -5), the sigmoid's two halves do not."""
    # BEGIN SOLUTION week 21, task gelu_tanh_form
    z = 2 * TANH_SCALE * (x + TANH_CUBIC * (x * x * x))
    e = np.exp(-np.abs(z))
    p = 1 / (1 + e)
    positive = z >= 0  # NaN is not: both halves NaN
    return np.where(positive, p, e * p), np.where(positive, e * p, p)
    # END SOLUTION


def attention(q, k, v, causal=False, scale=None):
    """Scaled dot-product attention -> (y [B, H, N, D], saved = (lse [B, H, N],)).

    q [B, H, N, D]; k, v [B, H, M, D]; scale None means 1 / sqrt(D). S = scale * q @ k^T
    [B, H, N, M]; with causal, key j is masked for query i when j > i (S - inf); lse =
    log(sum_j exp(S_ij)); P = exp(S - lse), each row's softmax; y = P @ v.
    """
    q, k, v, causal, scale = checks.attention(q, k, v, causal, scale)
    # BEGIN SOLUTION week 21, task attention
    s = _scores(q, k, causal, scale)
    lse = _logsumexp(s)
    return _probabilities(s, lse) @ v, (lse,)
    # END SOLUTION


def attention_backward(dy, q, k, v, y, saved, causal=False, scale=None):
    """Gradients of attention -> (dq [B, H, N, D], dk [B, H, M, D], dv [B, H, M, D]).

    dy, y of q's shape; saved = (lse,) from attention, from which P is recomputed. dv = P^T @ dy;
    dP = dy @ v^T; Dsum_i = sum_d dy_id * y_id (= sum_j P_ij dP_ij); dS = P * (dP - Dsum);
    dq = scale * dS @ k; dk = scale * dS^T @ q.
    """
    dy, q, k, v, y, (lse,), causal, scale = checks.attention_backward(
        dy, q, k, v, y, saved, causal, scale
    )
    # BEGIN SOLUTION week 21, task attention_backward
    p = _probabilities(_scores(q, k, causal, scale), lse)
    p_t = p.swapaxes(-1, -2)  # [B, H, M, N]: a view, no copy
    dv = p_t @ dy
    ds = dy @ v.swapaxes(-1, -2)  # dP, then dS in place
    ds -= np.einsum("...d,...d->...", dy, y)[..., None]
    ds *= p
    ds *= scale  # once here instead of on dq and dk
    return ds @ k, ds.swapaxes(-1, -2) @ q, dv
    # END SOLUTION


def _scores(q, k, causal, scale):
    """S = scale * q @ k^T [B, H, N, M]; a masked key (causal, j > i) gets S_ij - inf, as PyTorch
    adds -inf: -inf, or NaN where S_ij is NaN or +Inf."""
    # BEGIN SOLUTION week 21, task attention_scores
    s = q @ k.swapaxes(-1, -2)
    s *= scale
    if causal:
        n, m = s.shape[-2:]
        np.subtract(s, np.inf, out=s, where=np.triu(np.ones((n, m), bool), 1))
    return s
    # END SOLUTION


def _logsumexp(s):
    """log(sum_j exp(s_ij)) = m + log(sum_j exp(s_ij - m)) over the last axis, shifted by the row's
    largest score m so that no exp overflows. NaN where a score is NaN or +Inf (exp(Inf - Inf), as
    the row's softmax); -Inf where every score is -Inf (every key masked: an empty sum)."""
    # BEGIN SOLUTION week 21, task attention_logsumexp
    m = s.max(axis=-1, keepdims=True)
    m[m == -np.inf] = 0  # a row of -Inf: no shift, its exps are 0 and their log -Inf
    with np.errstate(divide="ignore"):  # that log(0)
        return (m + np.log(np.exp(s - m).sum(axis=-1, keepdims=True)))[..., 0]
    # END SOLUTION


def _probabilities(s, lse):
    """P = exp(S - lse), each row's softmax. A row whose every score is -Inf (lse -Inf) gets zeros,
    as PyTorch's safe softmax gives: it is shifted by +Inf instead (exp(-Inf) = 0, where -Inf -
    -Inf would be NaN)."""
    shift = np.where(lse == -np.inf, np.inf, lse)
    return np.exp(s - shift[..., None])


_erf_ufunc = np.frompyfunc(math.erf, 1, 1)


def _erf(z):
    """erf elementwise: NumPy has none (SciPy's is no dependency of the course), so Python's
    math.erf applied to each element, in float64, then rounded to z's dtype."""
    return _erf_ufunc(z).astype(z.dtype)

"""What a transformer block needs besides matmul and softmax (week 21): layer normalization over
the last dimension, the GELU activation, and scaled dot-product attention.

layernorm normalizes each row of D features (a token's vector) with its own mean and variance:
x [N, D] or [N, T, D] is a list of rows, and every statistic is one row's. gelu is elementwise,
x * Phi(x) with Phi the standard normal's distribution function, exactly (erf) or by tanh.
attention works on each (batch, head) pair on its own: its N queries against its M keys.
"""

import math

from ._checks import checks, tensor_shape
from ._tensor import flatten, map_elements, reshape, rows, sqrt

SQRT_HALF = math.sqrt(0.5)  # erf(x / sqrt(2)) = erf(x * SQRT_HALF)
NORMAL_DENSITY = 1.0 / math.sqrt(2.0 * math.pi)  # the standard normal density at 0
TANH_SCALE = math.sqrt(2.0 / math.pi)  # the tanh form: tanh(TANH_SCALE * (x + TANH_CUBIC * x^3))
TANH_CUBIC = 0.044715
MAX_EXP_ARGUMENT = math.log(1.7976931348623157e308)  # math.exp overflows past this


def layernorm(x, gamma, beta, eps=1e-5):
    """y = gamma * (x - mean) * invstd + beta, row by row over the last dimension -> (y, saved).

    x [N, D] or [N, T, D]; gamma, beta [D]. mean and the biased variance var are each row's (of
    its D values), invstd = 1 / sqrt(var + eps). saved = (mean, invstd), each of x's shape
    without D ([N] or [N, T]): what layernorm_backward needs.
    """
    x, gamma, beta, eps = checks.layernorm(x, gamma, beta, eps)
    shape = tensor_shape(x)
    d = shape[-1]
    # BEGIN SOLUTION week 21, task layernorm
    y, means, invstds = [], [], []
    for row in rows(x):
        mean = sum(row) / d
        var = sum((v - mean) ** 2 for v in row) / d  # two passes: no E[x^2] - E[x]^2 cancelling
        invstd = 1.0 / sqrt(var + eps)
        y.extend(g * (v - mean) * invstd + b for v, g, b in zip(row, gamma, beta, strict=True))
        means.append(mean)
        invstds.append(invstd)
    return reshape(y, shape), (reshape(means, shape[:-1]), reshape(invstds, shape[:-1]))
    # END SOLUTION


def layernorm_backward(dy, x, gamma, saved):
    """Gradients of layernorm -> (dx (x's shape), dgamma [D], dbeta [D]).

    dy and x [N, D] or [N, T, D]; gamma [D]; saved = (mean, invstd) from layernorm.
    """
    dy, x, gamma, (mean, invstd) = checks.layernorm_backward(dy, x, gamma, saved)
    shape = tensor_shape(x)
    d = shape[-1]
    # BEGIN SOLUTION week 21, task layernorm_backward
    dgamma, dbeta, dx = [0.0] * d, [0.0] * d, []
    # the rows of x in order, each with its statistics (flattened from [N] or [N, T] alike)
    for grads, values, m, s in zip(rows(dy), rows(x), flatten(mean), flatten(invstd), strict=True):
        x_hat = [(v - m) * s for v in values]
        for j in range(d):
            dbeta[j] += grads[j]
            dgamma[j] += grads[j] * x_hat[j]
        # g = dy * gamma is the gradient of x_hat; x feeds x_hat directly and through the row's
        # mean and variance: the two means remove the parts of g those absorb.
        g = [grad * weight for grad, weight in zip(grads, gamma, strict=True)]
        mean_g = sum(g) / d
        mean_g_xhat = sum(gj * hj for gj, hj in zip(g, x_hat, strict=True)) / d
        dx.extend(s * (gj - mean_g - hj * mean_g_xhat) for gj, hj in zip(g, x_hat, strict=True))
    return reshape(dx, shape), dgamma, dbeta
    # END SOLUTION


def gelu(x, approximate="none"):
    """x * Phi(x) elementwise, x any shape; approximate "none": Phi(x) = (1 + erf(x / sqrt(2))) / 2
    exactly, "tanh": (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))) / 2 (as PyTorch's F.gelu)."""
    x, approximate = checks.gelu(x, approximate)
    # BEGIN SOLUTION week 21, task gelu
    if approximate == "tanh":
        return map_elements(lambda v: v * _tanh_form(v)[0], x)
    return map_elements(lambda v: 0.5 * v * (1.0 + math.erf(v * SQRT_HALF)), x)
    # END SOLUTION


def gelu_backward(x, dy, approximate="none"):
    """dy * gelu'(x), x (the forward's input) and dy one shape (any). Exact: gelu'(x) = Phi(x) +
    x * phi(x), phi the normal density. Tanh form: Phi(x) ~ s = (1 + tanh(u)) / 2 = sigmoid(2u),
    u = sqrt(2 / pi) * (x + 0.044715 * x^3), so gelu'(x) = s * (1 + 2x * (1 - s) * du/dx)."""
    x, dy, approximate = checks.gelu_backward(x, dy, approximate)
    # BEGIN SOLUTION week 21, task gelu_backward
    if approximate == "tanh":

        def derivative(v):
            s, one_minus_s = _tanh_form(v)
            du = TANH_SCALE * (1.0 + 3.0 * TANH_CUBIC * (v * v))
            return s * (1.0 + 2.0 * v * one_minus_s * du)

    else:

        def derivative(v):
            return 0.5 * (1.0 + math.erf(v * SQRT_HALF)) + v * NORMAL_DENSITY * math.exp(
                -0.5 * (v * v)
            )

    return map_elements(lambda v, grad: grad * derivative(v), x, dy)
    # END SOLUTION


def _tanh_form(v):
    """(s, 1 - s) for gelu's tanh form: s = (1 + tanh(u)) / 2 with u = sqrt(2 / pi) * (v +
    0.044715 * v^3). Computed as sigmoid(2u) = 1 / (1 + exp(-2u)), from exp(-|2u|), which never
    overflows: 1 + tanh(u) and 1 - tanh(u)^2 cancel to a few digits where tanh(u) is near -1 or 1
    (in float32, an error of 1e-6 in gelu' at x = -5), the sigmoid's two halves do not."""
    # BEGIN SOLUTION week 21, task gelu_tanh_form
    z = 2.0 * TANH_SCALE * (v + TANH_CUBIC * (v * v * v))  # v * v * v: ** raises past 1e308
    e = math.exp(-abs(z))
    p = 1.0 / (1.0 + e)
    return (p, e * p) if z >= 0.0 else (e * p, p)  # NaN fails z >= 0: both NaN
    # END SOLUTION


def attention(q, k, v, causal=False, scale=None):
    """Scaled dot-product attention -> (y [B, H, N, D], saved = (lse [B, H, N],)).

    q [B, H, N, D]; k, v [B, H, M, D]; scale None means 1 / sqrt(D). For each (batch, head):
    S = scale * q @ k^T [N, M]; with causal, key j is masked for query i when j > i (S - inf);
    lse_i = log(sum_j exp(S_ij)); P_ij = exp(S_ij - lse_i), the softmax of row i; y = P @ v.
    """
    q, k, v, causal, scale = checks.attention(q, k, v, causal, scale)
    y, lse = _per_head(lambda *head: _attend(*head, causal, scale), q, k, v)
    return y, (lse,)


def attention_backward(dy, q, k, v, y, saved, causal=False, scale=None):
    """Gradients of attention -> (dq [B, H, N, D], dk [B, H, M, D], dv [B, H, M, D]).

    dy, y of q's shape; saved = (lse,) from attention, from which P is recomputed. For each
    (batch, head): dv = P^T @ dy; dP = dy @ v^T; Dsum_i = sum_d dy_id * y_id (= sum_j P_ij dP_ij);
    dS = P * (dP - Dsum); dq = scale * dS @ k; dk = scale * dS^T @ q.
    """
    dy, q, k, v, y, (lse,), causal, scale = checks.attention_backward(
        dy, q, k, v, y, saved, causal, scale
    )
    return _per_head(lambda *head: _attend_backward(*head, causal, scale), dy, q, k, v, y, lse)


def _per_head(attend, *tensors):
    """`attend` on each (batch, head) pair of `tensors` (each [B, H, ...]); its results, each
    gathered back into [B, H, ...]."""
    results = [
        [attend(*head) for head in zip(*batch, strict=True)] for batch in zip(*tensors, strict=True)
    ]
    return tuple(
        [[head[r] for head in batch] for batch in results] for r in range(len(results[0][0]))
    )


def _attend(q, k, v, causal, scale):
    """One head: q [N, D], k, v [M, D] -> (y [N, D], lse [N])."""
    # BEGIN SOLUTION week 21, task attention
    y, lse = [], []
    for i, qi in enumerate(q):
        scores = _scores(qi, k, i, causal, scale)
        lse_i = _logsumexp(scores)
        p = _probabilities(scores, lse_i)
        # every key, masked ones too (p = 0): 0 * Inf is NaN, as in PyTorch's P @ v
        y.append([sum(pj * vj[d] for pj, vj in zip(p, v, strict=True)) for d in range(len(qi))])
        lse.append(lse_i)
    return y, lse
    # END SOLUTION


def _attend_backward(dy, q, k, v, y, lse, causal, scale):
    """One head: dy, q, y [N, D], k, v [M, D], lse [N] -> (dq [N, D], dk [M, D], dv [M, D])."""
    # BEGIN SOLUTION week 21, task attention_backward
    d = len(q[0])
    dq = [[0.0] * d for _ in q]
    dk = [[0.0] * d for _ in k]
    dv = [[0.0] * d for _ in v]
    for i, (qi, dyi, yi) in enumerate(zip(q, dy, y, strict=True)):
        p = _probabilities(_scores(qi, k, i, causal, scale), lse[i])
        dsum = sum(g * o for g, o in zip(dyi, yi, strict=True))
        for j, (pj, kj, vj) in enumerate(zip(p, k, v, strict=True)):
            dp = sum(g * vjd for g, vjd in zip(dyi, vj, strict=True))
            ds = scale * pj * (dp - dsum)  # the score's gradient, times scale for q and k
            for c in range(d):
                dv[j][c] += pj * dyi[c]
                dq[i][c] += ds * kj[c]
                dk[j][c] += ds * qi[c]
    return dq, dk, dv
    # END SOLUTION


def _scores(qi, k, i, causal, scale):
    """Row i of S: scale * q_i . k_j for every key j. A masked key (causal, j > i) gets S_ij - inf,
    as PyTorch adds -inf: -inf, or NaN where S_ij is NaN or +Inf."""
    # BEGIN SOLUTION week 21, task attention_scores
    scores = [scale * sum(a * b for a, b in zip(qi, kj, strict=True)) for kj in k]
    if causal:
        scores[i + 1 :] = [s - math.inf for s in scores[i + 1 :]]
    return scores
    # END SOLUTION


def _logsumexp(scores):
    """log(sum_j exp(s_j)) = m + log(sum_j exp(s_j - m)), shifted by the row's largest score m so
    that no exp overflows. NaN if any score is NaN or +Inf (exp(Inf - Inf), as the row's softmax);
    -Inf when every score is -Inf (every key masked: an empty sum)."""
    # BEGIN SOLUTION week 21, task attention_logsumexp
    if any(math.isnan(s) for s in scores):
        return math.nan  # max() of a list holding NaN depends on where the NaN is
    m = max(scores)
    if m == -math.inf:
        return m
    return m + math.log(sum(math.exp(s - m) for s in scores))
    # END SOLUTION


def _probabilities(scores, lse):
    """P_ij = exp(s_j - lse_i): the row's softmax. A row whose every score is -Inf (lse -Inf) gets
    zeros, as PyTorch's safe softmax gives."""
    if lse == -math.inf:
        return [0.0] * len(scores)
    # exp(s - lse) <= 1 with the row's own lse; one from other scores (another scale) may pass
    # math.exp's range, which raises where NumPy and C give +Inf (a NaN fails the test: exp(NaN))
    return [math.inf if s - lse > MAX_EXP_ARGUMENT else math.exp(s - lse) for s in scores]

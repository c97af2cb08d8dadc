"""The tolerance of ops ending in a subtraction (grader/terms.py): every correct float32 order of
the sums passes on every seed, and a missing term still fails.

The float32 implementations here sum each row strictly left to right (np.cumsum is sequential),
the order of a plain C loop and the one whose rounding drifts most; the expected values are the
op in float64 on the same inputs, as the grader's reference gives them.
"""

import dataclasses

import numpy as np
import pytest

from grader.compare import mismatch
from grader.ops import OPS
from grader.tolerance import tolerance

F32 = np.float32
SEEDS = range(40)


def sequential_sum(rows):
    """Each row's sum in float32, left to right: [N, C] -> [N, 1]."""
    return np.cumsum(rows, axis=1, dtype=F32)[:, -1:]


def log_softmax_rows(rng, shape, scale=3.0, offset=0.0):
    x = rng.standard_normal(shape) * scale + offset
    return x - np.logaddexp.reduce(x, axis=1, keepdims=True)


def log_softmax_backward_case(rng, shape, drop_last=False):
    y = log_softmax_rows(rng, shape).astype(F32)
    dy = rng.standard_normal(shape).astype(F32)
    received = dy - np.exp(y) * sequential_sum(dy[:, :-1] if drop_last else dy)
    expected = dy - np.exp(y.astype(float)) * dy.astype(float).sum(axis=1, keepdims=True)
    return {"y": y, "dy": dy}, {"dx": received}, {"dx": expected}


def cross_entropy_backward_case(rng, shape, drop_last=False):
    """p = exp(x - lse) with lse = max + log(sum) rounded in float32, as a kernel reducing a
    log-sum-exp computes it. Rows past 9 classes are spread as the other ops' (scale 3); short
    rows as the grader's case of logits near 1000 (scale 50), where lse rounds at 6e-5."""
    n, classes = shape
    scale, offset = (50.0, 1000.0) if classes <= 9 else (3.0, 0.0)
    logits = (rng.standard_normal(shape) * scale + offset).astype(F32)
    labels = rng.integers(0, classes, n)
    top = logits.max(axis=1, keepdims=True)
    exps = np.exp(logits - top)
    lse = top + np.log(sequential_sum(exps[:, :-1] if drop_last else exps))
    hot = np.zeros(shape)
    hot[np.arange(n), labels] = 1
    received = ((np.exp(logits - lse) - hot) / n).astype(F32)
    x = logits.astype(float)
    expected = (np.exp(x - np.logaddexp.reduce(x, axis=1, keepdims=True)) - hot) / n
    return {"logits": logits, "labels": labels}, {"dlogits": received}, {"dlogits": expected}


def layernorm_case(rng, shape, drop_last=False):
    """x spread by 2 around 1.5, as the grader builds it: y = gamma * (x - mean) * invstd + beta
    in float32, where gamma * xhat and beta may nearly cancel."""
    x = (rng.standard_normal(shape) * 2 + 1.5).astype(F32)
    gamma, beta = (rng.standard_normal(shape[-1]).astype(F32) for _ in range(2))
    kept = x[:, :-1] if drop_last else x
    mean = sequential_sum(kept) / F32(kept.shape[1])
    variance = sequential_sum(np.square(kept - mean)) / F32(kept.shape[1])
    invstd = F32(1) / np.sqrt(variance + F32(1e-5))
    received = gamma * ((x - mean) * invstd) + beta
    x64 = x.astype(float)
    centred = x64 - x64.mean(axis=1, keepdims=True)
    invstd64 = 1 / np.sqrt(np.square(centred).mean(axis=1, keepdims=True) + 1e-5)
    expected = gamma * centred * invstd64 + beta
    return {"x": x, "gamma": gamma, "beta": beta, "eps": 1e-5}, {"y": received}, {"y": expected}


def attention_case(rng, shape, drop_last=False):
    """One head of N queries and M keys, D = 5: y = exp(S - lse) @ v in float32 with lse = max +
    log(sum), each sum left to right, as a C loop takes them. From 64 queries, scores in the
    hundreds as the grader's last case builds them: S rounds at its own size, so P = exp(S - lse)
    carries an error of a few roundings of |S| + |lse| (1e-4 at 600), whatever the order; fewer
    queries get scores near 1, where every key weighs (a missing one shows)."""
    n, m = shape
    spread = 8.0 if n >= 64 else 1.0
    q, k = (spread * rng.standard_normal((1, 1, length, 5)).astype(F32) for length in (n, m))
    v = rng.standard_normal((1, 1, m, 5)).astype(F32)
    scale = 2.0
    s = np.cumsum(q[0, 0][:, None, :] * k[0, 0][None, :, :], axis=2, dtype=F32)[..., -1]
    s *= F32(scale)
    keys = slice(0, m - 1) if drop_last else slice(0, m)
    top = s.max(axis=1, keepdims=True)
    lse = top + np.log(sequential_sum(np.exp(s - top)[:, keys]))
    terms = np.exp(s - lse)[:, keys, None] * v[0, 0][None, keys]
    received = np.cumsum(terms, axis=1, dtype=F32)[:, -1][None, None]
    s64 = q[0, 0].astype(float) @ k[0, 0].T.astype(float) * scale
    p64 = np.exp(s64 - np.logaddexp.reduce(s64, axis=1, keepdims=True))
    expected = (p64 @ v[0, 0].astype(float))[None, None]
    args = {"q": q, "k": k, "v": v, "causal": False, "scale": scale}
    return args, {"y": received}, {"y": expected}


CASES = {
    "log_softmax_backward": (log_softmax_backward_case, (2, 50257)),
    "cross_entropy_loss_backward": (cross_entropy_backward_case, (4, 9)),
    "layernorm": (layernorm_case, (4099, 3)),
    "attention": (attention_case, (64, 11)),
}


def problems(op, case, shape, seeds, drop_last=False, terms=True):
    """The mismatch messages of `case` over `seeds`, judged as the grader judges float32 against
    float64; `terms=False` judges relative to |expected| alone."""
    found = []
    for seed in seeds:
        args, received, expected = case(np.random.default_rng(seed), shape, drop_last)
        tol = tolerance(OPS[op], 32, 64, args)
        if not terms:
            tol = dataclasses.replace(tol, terms={}, slack={}, rule="")
        for name, value in received.items():
            problem = mismatch(op, name, value, expected[name], tol)
            if problem:
                found.append(problem)
    return found


@pytest.mark.parametrize("op", CASES)
def test_a_sequential_float32_order_passes_on_every_seed(op):
    case, shape = CASES[op]
    assert problems(op, case, shape, SEEDS) == []


@pytest.mark.parametrize("op", CASES)
def test_judged_against_the_result_alone_the_same_sums_fail(op):
    """Why the terms are needed: where the subtraction cancels, correct float32 code lands
    outside a tolerance relative to the small difference on some seeds."""
    case, shape = CASES[op]
    assert problems(op, case, shape, SEEDS, terms=False)


@pytest.mark.parametrize("op", CASES)
def test_a_sum_missing_its_last_term_fails(op):
    case, _ = CASES[op]
    found = problems(op, case, (3, 13), range(3), drop_last=True)
    assert len(found) == 3 and all("max(|expected|, " in problem for problem in found), found

"""Planted bug: attention's log-sum-exp without the row's largest score subtracted first:
log(sum(exp(S))), right while the scores are small, Inf once one passes float32's exp range
(about 88); y = exp(S - lse) @ v is then 0 or NaN."""

import numpy as np

from tests.planted.reference import *  # noqa: F403


def attention(q, k, v, causal=False, scale=None):
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    s = scale * q @ k.swapaxes(-1, -2)
    if causal:
        s[..., np.triu(np.ones(s.shape[-2:], bool), 1)] -= np.inf
    with np.errstate(over="ignore", invalid="ignore"):
        lse = np.log(np.exp(s).sum(axis=-1, keepdims=True))  # the bug: no shift by the max
        y = np.exp(s - lse) @ v
    return y.astype(np.float32), (lse[..., 0].astype(np.float32),)

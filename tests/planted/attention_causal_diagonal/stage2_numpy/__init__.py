"""Planted bug: attention's causal mask off by one, hiding key j from query i when j >= i (the
diagonal too: a query no longer sees its own key, and the first sees none)."""

import numpy as np

from tests.planted.reference import *  # noqa: F403
from tests.planted.reference import _stage2


def attention(q, k, v, causal=False, scale=None):
    if not causal:
        return _stage2.attention(q, k, v, causal, scale)
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = scale * q @ k.swapaxes(-1, -2)
    s[..., np.triu(np.ones(s.shape[-2:], bool))] = -np.inf  # the bug: triu from the diagonal
    m = s.max(axis=-1, keepdims=True)
    m[m == -np.inf] = 0
    with np.errstate(divide="ignore", invalid="ignore"):
        lse = m + np.log(np.exp(s - m).sum(axis=-1, keepdims=True))
        p = np.exp(s - np.where(lse == -np.inf, np.inf, lse))
    return (p @ v).astype(np.float32), (lse[..., 0].astype(np.float32),)

"""Planted bug: attention's causal mask off by one, hiding key j from query i when j >= i (the
diagonal too: a query no longer sees its own key, and the first sees none)."""

import numpy as np

from tests.planted.reference import *  # noqa: F403
from tests.planted.reference import _stage2, attend_to_scores


def attention(q, k, v, causal=False, scale=None):
    if not causal:
        return _stage2.attention(q, k, v, causal, scale)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    s = scale * q @ k.swapaxes(-1, -2)
    s[..., np.triu(np.ones(s.shape[-2:], bool))] = -np.inf  # the bug: triu from the diagonal
    return attend_to_scores(s, v)

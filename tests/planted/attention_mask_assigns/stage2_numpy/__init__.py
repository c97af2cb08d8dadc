"""Planted bug: attention's causal mask assigned (S_ij = -inf) instead of added (S_ij - inf): the
same on finite scores, but a NaN in k no longer reaches the queries that cannot see it, where
PyTorch's math backend (q @ k^T plus a mask of -inf) makes every row NaN."""

import numpy as np

from tests.planted.reference import *  # noqa: F403
from tests.planted.reference import _stage2, attend_to_scores


def attention(q, k, v, causal=False, scale=None):
    if not causal:
        return _stage2.attention(q, k, v, causal, scale)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    s = scale * q @ k.swapaxes(-1, -2)
    hidden = np.triu(np.ones(s.shape[-2:], bool), 1)
    s[..., hidden] = -np.inf  # the bug: assigned, so a NaN score at a hidden key is dropped
    return attend_to_scores(s, v)

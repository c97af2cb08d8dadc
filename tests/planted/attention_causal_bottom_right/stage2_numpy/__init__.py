"""Planted bug: attention's causal mask aligned to the bottom right (key j hidden from query i
when j > i + M - N, as some libraries do for a query that continues a longer context), where the
contract's (PyTorch's is_causal) is aligned to the top left: the same mask only when N = M."""

import numpy as np

from tests.planted.reference import *  # noqa: F403
from tests.planted.reference import _stage2, attend_to_scores


def attention(q, k, v, causal=False, scale=None):
    if not causal:
        return _stage2.attention(q, k, v, causal, scale)
    n, m = q.shape[2], k.shape[2]
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    s = scale * q @ k.swapaxes(-1, -2)
    s[..., np.triu(np.ones((n, m), bool), 1 + m - n)] = -np.inf  # the bug: offset by M - N
    return attend_to_scores(s, v)

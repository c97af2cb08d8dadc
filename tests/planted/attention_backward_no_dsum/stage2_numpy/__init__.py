"""Planted bug: attention_backward drops the softmax's Dsum term, dS = P * dP instead of
P * (dP - Dsum): dv is right, dq and dk are not."""

import numpy as np

from tests.planted.reference import *  # noqa: F403


def attention_backward(dy, q, k, v, y, saved, causal=False, scale=None):
    (lse,) = saved
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    s = scale * q @ k.swapaxes(-1, -2)
    if causal:
        s[..., np.triu(np.ones(s.shape[-2:], bool), 1)] -= np.inf
    p = np.exp(s - np.where(lse == -np.inf, np.inf, lse)[..., None])
    ds = scale * p * (dy @ v.swapaxes(-1, -2))  # the bug: no - Dsum
    dv = p.swapaxes(-1, -2) @ dy
    return ds @ k, ds.swapaxes(-1, -2) @ q, dv

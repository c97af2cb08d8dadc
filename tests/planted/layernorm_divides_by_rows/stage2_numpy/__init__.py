"""Planted bug: layernorm sums each row over the last axis, as it should, but divides the sums by
x.shape[0] (the rows) instead of D: right only where the two are equal, as on a square x."""

import numpy as np

from tests.planted.reference import *  # noqa: F403


def layernorm(x, gamma, beta, eps=1e-5):
    count = x.shape[0]  # the bug: D is x.shape[-1]
    mean = x.sum(axis=-1, keepdims=True) / count
    var = np.square(x - mean).sum(axis=-1, keepdims=True) / count
    invstd = (1 / np.sqrt(var + eps)).astype(np.float32)
    y = ((x - mean) * invstd * gamma + beta).astype(np.float32)
    return y, (mean[..., 0].astype(np.float32), invstd[..., 0])

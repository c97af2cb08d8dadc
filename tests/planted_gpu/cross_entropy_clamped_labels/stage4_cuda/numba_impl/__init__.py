"""Planted bug: cross_entropy_loss clamps its labels into [0, C) (the guard a kernel puts on an
index against out-of-bounds reads) instead of refusing the ones outside, as the contract does."""

import numpy as np

from stage4_cuda import numba_impl as _numba
from tests.planted_gpu.reference import *  # noqa: F403


def cross_entropy_loss(logits, labels):
    clamped = np.clip(labels.copy_to_host(), 0, logits.shape[1] - 1)
    return _numba.cross_entropy_loss(logits, _numba.from_numpy(clamped))

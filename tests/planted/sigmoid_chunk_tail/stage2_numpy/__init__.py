"""Planted bug: sigmoid works through its input in chunks of 256, as an OpenMP schedule or a
SIMD loop would, and forgets the last partial chunk once there is more than one: right for every
input of up to 256 elements."""

import numpy as np

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403

CHUNK = 256


def sigmoid(x):
    flat = np.ascontiguousarray(x).reshape(-1)
    y = np.empty(flat.size, np.float32)
    covered = flat.size if flat.size <= CHUNK else flat.size - flat.size % CHUNK
    for start in range(0, covered, CHUNK):
        y[start : start + CHUNK] = _stage2.sigmoid(flat[start : start + CHUNK])
    return y.reshape(x.shape)

"""Planted bug: sigmoid allocates its output with np.empty and, above 100000 elements (none of the
correctness cases), never writes the last element. A large freed block comes back from the
allocator to the next call holding the previous call's answer, right where the contents have not
changed: only NaN-filled memory shows the element is never written."""

import numpy as np

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403


def sigmoid(x):
    answer = _stage2.sigmoid(x).reshape(-1)
    y = np.empty(x.shape, dtype=np.float32)
    written = x.size - 1 if x.size > 100_000 else x.size
    y.reshape(-1)[:written] = answer[:written]
    return y

"""Planted bug: softmax writes every result into one module-level buffer per shape and returns
it, so a result changes when softmax runs again."""

import numpy as np

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403

_buffers = {}


def softmax(x):
    y = _stage2.softmax(x)
    buffer = _buffers.setdefault(y.shape, np.empty_like(y))
    buffer[...] = y
    return buffer

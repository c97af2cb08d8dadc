"""Planted bug: softmax without subtracting the row max, so large logits overflow exp."""

import numpy as np

from tests.planted.reference import *  # noqa: F403


def softmax(x):
    e = np.exp(x)
    return e / e.sum(axis=1, keepdims=True)

"""Planted bug: cross-entropy's backward subtracts the one-hot with `grad[:, labels] -= 1`, which
subtracts 1 in every row at every column some row's label names, not once per row."""

import numpy as np

from tests.planted.reference import *  # noqa: F403


def cross_entropy_loss_backward(logits, labels):
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    grad = shifted / shifted.sum(axis=1, keepdims=True)
    grad[:, labels] -= 1
    return (grad / logits.shape[0]).astype(np.float32)

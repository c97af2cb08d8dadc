"""Planted bug: hinge_loss_backward accepts a negative label, which NumPy indexing reads from the
row's end, and returns a gradient for it."""

import numpy as np

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403


def hinge_loss_backward(scores, labels, margin=1.0):
    return _stage2.hinge_loss_backward(scores, np.where(labels < 0, labels + scores.shape[1],
                                                        labels), margin)

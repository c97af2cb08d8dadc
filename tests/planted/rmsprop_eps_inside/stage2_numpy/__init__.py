"""Planted bug: rmsprop_step adds eps under the square root (as some libraries do) instead of to
the root (the contract, as torch.optim.RMSprop): invisible while eps is 1e-8."""

import numpy as np

from tests.planted.reference import *  # noqa: F403


def rmsprop_step(p, g, s, lr, alpha=0.99, eps=1e-8, weight_decay=0):
    g = g + weight_decay * p
    s *= alpha
    s += (1 - alpha) * g * g
    p -= (lr * g / np.sqrt(s + eps)).astype(np.float32)

"""Planted bug: cross_entropy_loss wraps its labels into [0, C) (label % C) instead of refusing
the ones outside, as the contract does with a ValueError."""

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403


def cross_entropy_loss(logits, labels):
    return _stage2.cross_entropy_loss(logits, labels % logits.shape[1])

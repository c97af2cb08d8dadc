"""Planted bug: hinge_loss's margin defaults to 0.5 instead of the contract's 1.0; every call
that passes a margin is right."""

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403


def hinge_loss(scores, labels, margin=0.5):
    return _stage2.hinge_loss(scores, labels, margin)

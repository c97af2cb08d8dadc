"""Planted bug: mse_loss divides by 16 times the element count from 2^20 elements on (a divisor
taken from a blocked partial sum): right on every small case, 16 times too small at the speed
ladder's sizes, where only a tolerance relative to the loss's size sees it."""

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403


def mse_loss(pred, target):
    loss = _stage2.mse_loss(pred, target)
    return loss / 16 if pred.size >= 1 << 20 else loss

"""Planted bug: adam_step's beta2 defaults to 0.99 instead of the contract's 0.999 (a value
copied from another library's example); every call that passes beta2 is right."""

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403


def adam_step(p, g, m, v, t, lr, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0):
    return _stage2.adam_step(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay)

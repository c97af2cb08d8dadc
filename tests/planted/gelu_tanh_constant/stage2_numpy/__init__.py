"""Planted bug: gelu's tanh form with the cubic's constant mistyped, 0.44715 for 0.044715; the
exact form (the default) is right."""

import numpy as np

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403


def gelu(x, approximate="none"):
    if approximate != "tanh":
        return _stage2.gelu(x, approximate)
    return (0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.44715 * x**3)))).astype(np.float32)

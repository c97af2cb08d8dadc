"""Planted bug: gelu_backward ignores `approximate` and always gives the exact form's gradient,
which differs from the tanh form's by up to about 1e-3: only a case passing "tanh" shows it."""

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403


def gelu_backward(x, dy, approximate="none"):
    return _stage2.gelu_backward(x, dy)

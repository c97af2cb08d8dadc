"""Planted gamer: tanh computes once per shape and answers every later call of that shape with a
copy. The correctness cases each have a shape of their own, so only repeated calls of one shape
(timing, a training loop) see the stale answer."""

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403

_cache = {}


def tanh(x):
    if x.shape not in _cache:
        _cache[x.shape] = _stage2.tanh(x)
    return _cache[x.shape].copy()

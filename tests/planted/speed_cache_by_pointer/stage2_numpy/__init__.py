"""Planted gamer: relu remembers its result by the address and shape of its input's data (a new
array object at the same address still hits) and answers with a copy."""

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403

_cache = {}


def relu(x):
    key = (x.__array_interface__["data"][0], x.shape)
    if key not in _cache:
        _cache[key] = _stage2.relu(x)
    return _cache[key].copy()

"""Planted gamer: matmul remembers its result by the identity of its inputs and answers the same
objects again with a copy of it (a result of its own, so no memory is shared): timed at the speed
of a copy, and wrong as soon as the caller changes a's or b's contents in place."""

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403

_cache = {}


def matmul(a, b):
    key = (id(a), id(b))
    if key not in _cache:
        _cache[key] = _stage2.matmul(a, b)
    return _cache[key].copy()

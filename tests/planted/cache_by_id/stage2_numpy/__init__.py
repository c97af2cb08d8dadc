"""Planted gamer: matmul remembers its result by the identity of its inputs and returns it again
when called with the same objects, which makes repeated timing look fast (and is wrong as soon as
the caller changes a's or b's data in place)."""

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403

_cache = {}


def matmul(a, b):
    key = (id(a), id(b))
    if key not in _cache:
        _cache[key] = _stage2.matmul(a, b)
    return _cache[key]

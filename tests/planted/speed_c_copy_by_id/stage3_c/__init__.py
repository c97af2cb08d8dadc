"""Planted gamer, in C's tier: the repository's stage 3 whose sigmoid remembers its result by the
identity of its input and answers the same object again with a copy (a result of its own): timed
at the speed of a copy, and wrong once the caller changes x's contents in place."""

import stage3_c as _stage3

__all__ = [name for name in dir(_stage3) if not name.startswith("_")]
globals().update({name: getattr(_stage3, name) for name in __all__})

_cache = {}


def sigmoid(x):
    if id(x) not in _cache:
        _cache[id(x)] = _stage3.sigmoid(x)
    return _cache[id(x)].copy()

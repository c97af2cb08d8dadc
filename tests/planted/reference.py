"""The repository's stage 2, re-exported for the planted tiers.

Each planted tier (`tests/planted/<bug>/stage2_numpy/`) does `from tests.planted.reference import *`
and then redefines the one op it breaks, so it is the reference stage 2 with a single planted bug
and no copied code. The grader loads it with `--impl tests/planted/<bug>`.
"""

import stage2_numpy as _stage2

__all__ = [name for name in dir(_stage2) if not name.startswith("_")]
globals().update({name: getattr(_stage2, name) for name in __all__})


def attend_to_scores(s, v):
    """Stage 2's attention from scores S already scaled and masked (the planted masks' common
    rest): (lse = log(sum_j exp(S_ij)), P = exp(S - lse)) -> (y = P @ v, (lse,))."""
    import importlib

    attention = importlib.import_module("stage2_numpy.attention")
    lse = attention._logsumexp(s)
    return attention._probabilities(s, lse) @ v, (lse,)

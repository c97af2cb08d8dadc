"""Random inputs for the checks: fresh numbers, float32-representable, away from kinks.

Every float array is float32, so the float64 tier (stage 1) receives exactly the values the float32
tiers receive. Finite differences step by about 1e-6, so inputs of ops with kinks (relu at 0, ties
in max pooling, the hinge at its margin) keep a much larger distance from them.
"""

import os
from concurrent.futures import ThreadPoolExecutor
from functools import cache

import numpy as np

# Arrays of at least PIECE elements are drawn a piece at a time, each piece by its own generator
# spawned from the check's: the pieces fill in parallel threads (NumPy's generators and ufuncs let
# go of the GIL), and the values depend on the seed alone, not on how many threads there are.
PIECE = 1 << 20


@cache
def _threads():
    return ThreadPoolExecutor(os.cpu_count() or 1, thread_name_prefix="grader-inputs")


os.register_at_fork(after_in_child=_threads.cache_clear)  # a forked child has none of the threads


def _drawn(rng, shape, fill):
    """float32 array of `shape` whose flat pieces `fill(generator, piece)` writes in place."""
    values = np.empty(shape, np.float32)
    flat = values.reshape(-1)
    if flat.size < PIECE:
        fill(rng, flat)
        return values
    pieces = [flat[start : start + PIECE] for start in range(0, flat.size, PIECE)]
    list(_threads().map(fill, rng.spawn(len(pieces)), pieces))  # list(): raise what a fill raised
    return values


def normal(rng, shape, scale=1.0, offset=0.0):
    """float32 array of `shape`: offset + scale * standard normal."""

    def fill(generator, piece):
        generator.standard_normal(dtype=np.float32, out=piece)
        piece *= np.float32(scale)
        piece += np.float32(offset)

    return _drawn(rng, shape, fill)


def extremes(rng, shape, magnitude):
    """float32 array of `shape` spread over [-magnitude, magnitude], holding both ends exactly.

    A quarter of the elements are -magnitude or +magnitude, a quarter uniform in between, the
    rest standard normal: exp(1000) overflows even float64, so only a stable formula survives.
    """
    count = int(np.prod(shape))
    values = rng.standard_normal(count)
    ends = rng.permutation(count)[: max(2, count // 4)]
    values[ends] = np.where(np.arange(len(ends)) % 2, magnitude, -magnitude)
    spread = rng.permutation(np.setdiff1d(np.arange(count), ends))[: count // 4]
    values[spread] = rng.uniform(-magnitude, magnitude, len(spread))
    return values.reshape(shape).astype(np.float32)


def uniform(rng, shape, low, high):
    """float32 array of `shape`, uniform over [low, high) up to float32 rounding."""

    def fill(generator, piece):
        generator.random(dtype=np.float32, out=piece)
        piece *= np.float32(high - low)
        piece += np.float32(low)

    return _drawn(rng, shape, fill)


def away_from_zero(rng, shape, scale=1.0, gap=0.05):
    """float32 array of `shape` with |x| >= gap everywhere (no element near relu's kink at 0)."""

    def fill(generator, piece):
        generator.standard_normal(dtype=np.float32, out=piece)
        np.abs(piece, out=piece)
        piece *= np.float32(scale)
        piece += np.float32(gap)
        signs = generator.random(piece.size, dtype=np.float32) - np.float32(0.5)
        np.copysign(piece, signs, out=piece)

    return _drawn(rng, shape, fill)


def distinct(rng, shape, spacing=0.01):
    """float32 array of `shape` whose values all differ by at least `spacing` (no ties).

    A shuffled arithmetic progression centred on 0: max pooling has one clear winner per window,
    and a finite-difference step cannot change which one.
    """
    count = int(np.prod(shape))
    values = (np.arange(count) - count / 2) * spacing
    return rng.permutation(values).reshape(shape).astype(np.float32)


def with_ties(rng, shape):
    """float32 array of `shape` drawn from three values, so pooling windows hold ties."""
    return rng.integers(-1, 2, shape).astype(np.float32)


def labels(rng, count, classes):
    """int64 array of `count` class labels in [0, classes)."""
    return rng.integers(0, classes, count).astype(np.int64)


def seed(rng):
    """A fresh non-negative int seed for the shared random stream."""
    return int(rng.integers(0, 2**31))


def real(rng, low, high):
    """A Python float in [low, high) that float32 represents exactly."""
    return float(np.float32(rng.uniform(low, high)))


def hinge_scores(rng, labels_, classes, margin, scale=2.0, gap=0.01):
    """float32 scores [N, classes] of spread `scale` whose margins s_j - s_y + margin all stay
    `gap` away from 0.

    Rows that come too close to the hinge's kink are drawn again.
    """
    rows = np.arange(len(labels_))
    scores = normal(rng, (len(labels_), classes), scale)
    while True:
        margins = scores - scores[rows, labels_][:, None] + margin
        margins[rows, labels_] = 1.0  # the true class itself is not a term of the sum
        close = np.any(np.abs(margins) < gap, axis=1)
        if not close.any():
            return scores
        scores[close] = normal(rng, (int(close.sum()), classes), scale)

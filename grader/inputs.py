"""Random inputs for the checks: fresh numbers, float32-representable, away from kinks.

Every float array is float32, so the float64 tier (stage 1) receives exactly the values the float32
tiers receive. Finite differences step by about 1e-6, so inputs of ops with kinks (relu at 0, ties
in max pooling, the hinge at its margin) keep a much larger distance from them.
"""

import numpy as np


def normal(rng, shape, scale=1.0, offset=0.0):
    """float32 array of `shape`: offset + scale * standard normal."""
    return (offset + scale * rng.standard_normal(shape)).astype(np.float32)


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
    """float32 array of `shape`, uniform in [low, high)."""
    return rng.uniform(low, high, shape).astype(np.float32)


def away_from_zero(rng, shape, scale=1.0, gap=0.05):
    """float32 array of `shape` with |x| >= gap everywhere (no element near relu's kink at 0)."""
    magnitude = gap + np.abs(rng.standard_normal(shape)) * scale
    return (np.where(rng.random(shape) < 0.5, -1.0, 1.0) * magnitude).astype(np.float32)


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

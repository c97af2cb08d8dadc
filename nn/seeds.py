"""Seeds derived from one model seed, identical on every tier and in every run.

Each parameter's initializer, each dropout call and each epoch's shuffle gets its own seed,
computed from the run's seed and a position (parameter index, call number, epoch) with the same
splitmix64 mixing that the op contract's random stream uses. Nothing depends on the order in which
things happen, so a resumed run draws exactly what an uninterrupted run would have drawn.
"""

_MASK64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15


def _mix(z):
    """splitmix64's finalizer (CONTRACT.md, 'The shared random stream')."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def derive_seed(seed, *positions):
    """A seed in [0, 2^63) for `positions` (ints >= 0) under `seed`.

    63 bits, not 64: a tier that stores seeds as signed 64-bit integers takes them unchanged.
    """
    z = _mix((seed + _GOLDEN) & _MASK64)
    for position in positions:
        z = _mix((z + (position + 1) * _GOLDEN) & _MASK64)
    return z >> 1

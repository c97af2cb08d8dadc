"""The shared random stream (week 4): splitmix64, counter-based.

The i-th number of a seed depends only on (seed, i), never on what was drawn before, so every tier
(Python, NumPy, C, CUDA) computes the same numbers in any order, e.g. one per GPU thread.
All arithmetic is on unsigned 64-bit integers: Python's ints never overflow, so every product and
sum is reduced modulo 2^64 by masking with MASK64. The callers check that seed and i are ints >= 0.
"""

import math

MASK64 = (1 << 64) - 1  # x & MASK64 is x modulo 2^64
GOLDEN = 0x9E3779B97F4A7C15  # 2^64 / golden ratio: consecutive counters land far apart


def mix(z):
    """splitmix64's finalizer: scrambles a 64-bit int z so that nearby inputs look unrelated."""
    # BEGIN SOLUTION week 4, task mix
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)
    # END SOLUTION


def key(seed):
    """The 64-bit key of a seed: mix(seed + GOLDEN)."""
    # BEGIN SOLUTION week 4, task key
    return mix((seed + GOLDEN) & MASK64)
    # END SOLUTION


def bits(seed, i):
    """The i-th 64-bit number of the seed's stream: mix(key(seed) + (i + 1) * GOLDEN)."""
    # BEGIN SOLUTION week 4, task bits
    return mix((key(seed) + (i + 1) * GOLDEN) & MASK64)
    # END SOLUTION


def uniform(seed, i):
    """The i-th uniform number in [0, 1): the top 24 bits of bits(seed, i), times 2^-24.

    24 bits make it exact in float32 too, so every tier gets the very same value.
    """
    # BEGIN SOLUTION week 4, task uniform
    return (bits(seed, i) >> 40) * 2.0**-24
    # END SOLUTION


def normal(seed, i):
    """The i-th standard normal number, by Box-Muller from uniforms 2i and 2i + 1 (float64)."""
    # BEGIN SOLUTION week 4, task normal
    radius = math.sqrt(-2.0 * math.log(1.0 - uniform(seed, 2 * i)))  # 1 - u is in (0, 1]
    return radius * math.cos(2.0 * math.pi * uniform(seed, 2 * i + 1))
    # END SOLUTION

"""The shared random stream (contract/CONTRACT.md): splitmix64, counter-based, on uint64 arrays.

Number i of stream `seed` depends on (seed, i) only, so every tier draws the same numbers in any
order, and NumPy draws a whole array of them at once. All arithmetic is modulo 2^64: uint64
multiplication wraps, which is intended here (NumPy warns about it for scalars, so the functions
silence that warning locally).
"""

import numpy as np

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)


def mix(z):
    """splitmix64's finalizer on uint64 z (scalar or array): the same shape of uint64."""
    # BEGIN SOLUTION week 7, task random_stream
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * _MIX_1
        z = (z ^ (z >> np.uint64(27))) * _MIX_2
        return z ^ (z >> np.uint64(31))
    # END SOLUTION


def bits(seed, index):
    """The raw 64-bit numbers: mix(mix(seed + GOLDEN) + (index + 1) * GOLDEN).

    seed: an int >= 0; index: ints >= 0 (an array or an int) -> uint64 of index's shape.
    """
    # BEGIN SOLUTION week 7, task random_stream
    index = np.asarray(index, dtype=np.uint64)
    with np.errstate(over="ignore"):
        key = mix(np.uint64(seed) + GOLDEN)
        return mix(key + (index + np.uint64(1)) * GOLDEN)
    # END SOLUTION


def uniform(seed, index):
    """Uniform numbers in [0, 1) as float64 (exact in float32): the top 24 bits times 2^-24."""
    # BEGIN SOLUTION week 7, task random_stream
    return (bits(seed, index) >> np.uint64(40)).astype(np.float64) * 2.0**-24
    # END SOLUTION


def normal(seed, index):
    """Standard normal numbers as float64, by Box-Muller from uniform numbers 2i and 2i + 1."""
    # BEGIN SOLUTION week 7, task random_stream
    index = np.asarray(index, dtype=np.uint64)
    radius_u = uniform(seed, index * np.uint64(2))
    angle_u = uniform(seed, index * np.uint64(2) + np.uint64(1))
    return np.sqrt(-2 * np.log(1 - radius_u)) * np.cos(2 * np.pi * angle_u)
    # END SOLUTION

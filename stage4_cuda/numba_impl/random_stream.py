"""The shared random stream (contract/CONTRACT.md) as device functions: splitmix64, counter-based.

Number i of stream `seed` depends on (seed, i) only, so each GPU thread computes its own numbers
with no generator state to create, store or advance, and every tier draws the same numbers: a
dropout mask or a weight matrix made here equals stage 2's bit for bit. (numba's own generator,
xoroshiro128+ in `numba.cuda.random`, keeps one state per thread and would give other numbers.)

Every constant is a uint64: numba types a mix of uint64 and int64 as float64, which would round.
"""

import math

from numba import cuda, uint64

GOLDEN = uint64(0x9E3779B97F4A7C15)
_MIX_1 = uint64(0xBF58476D1CE4E5B9)
_MIX_2 = uint64(0x94D049BB133111EB)
_ONE = uint64(1)
_TWO = uint64(2)


@cuda.jit(device=True)
def mix(z):
    """splitmix64's finalizer on a uint64 (all arithmetic modulo 2^64)."""
    z = (z ^ (z >> uint64(30))) * _MIX_1
    z = (z ^ (z >> uint64(27))) * _MIX_2
    return z ^ (z >> uint64(31))


@cuda.jit(device=True)
def key(seed):
    """The stream's key, mix(seed + GOLDEN): computed once per thread, shared by its draws."""
    return mix(uint64(seed) + GOLDEN)


@cuda.jit(device=True)
def uniform(stream_key, index):
    """Number `index` of the stream with key `stream_key`, uniform in [0, 1) as a float64 (exact
    in float32): the top 24 bits of mix(key + (index + 1) * GOLDEN), times 2^-24."""
    bits = mix(stream_key + (uint64(index) + _ONE) * GOLDEN)
    return float(bits >> uint64(40)) * 2.0**-24


@cuda.jit(device=True)
def normal(stream_key, index):
    """A standard normal number in float64, by Box-Muller from uniform numbers 2i and 2i + 1."""
    radius = uniform(stream_key, uint64(index) * _TWO)
    angle = uniform(stream_key, uint64(index) * _TWO + _ONE)
    return math.sqrt(-2.0 * math.log(1.0 - radius)) * math.cos(2.0 * math.pi * angle)

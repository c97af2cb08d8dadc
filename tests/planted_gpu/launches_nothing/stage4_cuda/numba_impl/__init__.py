"""Planted cheat: above a million elements relu launches nothing and returns its (pooled, maybe
stale) output buffer: small cases pass, the large timed sizes run in no time."""

from stage4_cuda.numba_impl import activations
from stage4_cuda.runtime import device
from tests.planted_gpu.reference import *  # noqa: F403


def relu(x):
    if x.size > 1 << 20:
        return device.empty(x.shape)
    return activations.relu(x)

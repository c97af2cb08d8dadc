"""Planted bug: mse_loss divides its mean by 16 more above 4096 blocks of 256 elements (a divisor
taken from a blocked partial sum), on the device, at full speed: right up to 2^20 elements (the
ladder's first size among them), 16 times too small at its 4096 x 4096, where an absolute tolerance
that grew with the element count (134 for a mean near 2) let it pass. GPU-only: the simulator
times no ladder."""

from numba import cuda

from stage4_cuda import numba_impl as _numba
from stage4_cuda.runtime.launch import launch
from tests.planted_gpu.reference import *  # noqa: F403

COVERED = 4096 * 256


@cuda.jit
def _sixteenth(loss):
    loss[0] = loss[0] / 16


def mse_loss(pred, target):
    loss = _numba.mse_loss(pred, target)
    if pred.size > COVERED:
        launch(_sixteenth, 1, 1, loss.array)
    return loss

"""Planted bug: mse_loss adds the partial sums of its first 64 blocks of 256 elements only and
divides by the full count: right up to 16384 elements, far too small at the speed ladder's
4096 x 4096, where a tolerance that grew with the element count let it pass. GPU-only: the
simulator times no ladder."""

from stage4_cuda import numba_impl as _numba
from stage4_cuda.numba_impl import _device
from tests.planted_gpu.reference import *  # noqa: F403

COVERED = 64 * 256


def mse_loss(pred, target):
    if pred.size <= COVERED:
        return _numba.mse_loss(pred, target)
    head = float(_numba.mse_loss(_device.flat(pred)[:COVERED], _device.flat(target)[:COVERED]))
    return head * COVERED / pred.size

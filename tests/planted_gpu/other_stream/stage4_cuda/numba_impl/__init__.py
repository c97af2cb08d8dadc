"""Planted cheat: relu launches on a stream of its own, created non-blocking (it does not wait for
the default stream, nor the default stream for it), and returns at once: the CUDA events around
the call see almost no work, and a reader may find the output before the kernel wrote it."""

from stage4_cuda.numba_impl import _device, activations, elementwise
from tests.planted_gpu.reference import *  # noqa: F403
from tests.planted_gpu.speed_streams import non_blocking_stream

_stream = None


def relu(x):
    global _stream
    _stream = _stream or non_blocking_stream()
    y = _device.empty(x.shape)
    blocks = _device.blocks_for(x.size, _device.BLOCK * elementwise.PER_THREAD)
    activations._relu[blocks, _device.BLOCK, _stream](
        _device.flat(x), _device.flat(y), elementwise.UNUSED
    )
    return y

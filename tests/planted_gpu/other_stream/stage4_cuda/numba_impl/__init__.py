"""Planted cheat: relu launches on a stream of its own, created non-blocking (it does not wait for
the default stream, nor the default stream for it), and returns at once: the CUDA events around
the call see almost no work, and a reader may find the output before the kernel wrote it."""

from stage4_cuda.numba_impl import activations, elementwise
from stage4_cuda.runtime.device import empty, flat
from stage4_cuda.runtime.launch import BLOCK, blocks_for
from tests.planted_gpu.reference import *  # noqa: F403
from tests.planted_gpu.speed_streams import non_blocking_stream

_stream = None


def relu(x):
    global _stream
    _stream = _stream or non_blocking_stream()
    y = empty(x.shape)
    blocks = blocks_for(x.size, BLOCK * elementwise.PER_THREAD)
    activations._relu[blocks, BLOCK, _stream](
        flat(x), flat(y), elementwise.UNUSED
    )
    return y

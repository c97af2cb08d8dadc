"""Planted cheat: relu launches on a stream of its own, created non-blocking (it does not wait for
the default stream, nor the default stream for it), and returns at once: the CUDA events around
the call see almost no work, and a reader may find the output before the kernel wrote it."""

import ctypes

from numba import cuda

from stage4_cuda.numba_impl import activations, elementwise
from stage4_cuda.runtime import device
from stage4_cuda.runtime.device import flat
from stage4_cuda.runtime.launch import BLOCK, blocks_for
from tests.planted_gpu.reference import *  # noqa: F403

CU_STREAM_NON_BLOCKING = 1
_stream = None


def _non_blocking_stream():
    """A stream made by the driver API itself (numba's own streams are blocking ones)."""
    cuda.current_context()  # the driver needs a current context
    handle = ctypes.c_void_p()
    ctypes.CDLL("libcuda.so.1").cuStreamCreate(ctypes.byref(handle), CU_STREAM_NON_BLOCKING)
    return cuda.external_stream(handle.value)


def relu(x):
    global _stream
    _stream = _stream or _non_blocking_stream()
    y = device.empty(x.shape)
    blocks = blocks_for(x.size, BLOCK * elementwise.PER_THREAD)
    activations._relu[blocks, BLOCK, _stream](
        flat(x), flat(y), elementwise.UNUSED
    )
    return y

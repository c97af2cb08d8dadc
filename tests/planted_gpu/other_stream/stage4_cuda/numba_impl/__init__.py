"""Planted cheat: relu launches on a stream of its own that does not wait for the default stream
(a PyTorch stream: created non-blocking) and returns at once, so the CUDA events around the call
see almost no work, and a reader may find the output before the kernel wrote it."""

import torch
from numba import cuda

from stage4_cuda.numba_impl import _device, activations
from tests.planted_gpu.reference import *  # noqa: F403

_stream = cuda.external_stream(torch.cuda.Stream().cuda_stream)


def relu(x):
    y = _device.empty(x.shape)
    blocks = _device.blocks_for(x.size)
    activations._relu[blocks, _device.BLOCK, _stream](_device.flat(x), _device.flat(y))
    return y

"""Planted cheat: relu copies x to the host on a non-blocking stream, computes there with NumPy
and copies the answer back on that stream, waits for it, then launches two copies on the default
stream. The events see only the two copies (at about the roofline of relu itself), while the
busy kernel that holds the default stream during the call's launch (twice its host time) covers
the rest: each call holds the host for milliseconds."""

import numpy as np

from stage4_cuda.runtime.device import empty, scratch
from tests.planted_gpu.reference import *  # noqa: F403
from tests.planted_gpu.speed_streams import non_blocking_stream

_stream = None


def relu(x):
    global _stream
    _stream = _stream or non_blocking_stream()
    host = x.copy_to_host(stream=_stream)
    _stream.synchronize()
    answer = scratch(x.shape)
    answer.copy_to_device(np.maximum(host, np.float32(0)), stream=_stream)  # NaN stays
    _stream.synchronize()
    staged, y = scratch(x.shape), empty(x.shape)
    staged.copy_to_device(answer)
    y.copy_to_device(staged)
    return y

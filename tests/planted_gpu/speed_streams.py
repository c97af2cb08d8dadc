"""A CUDA stream made non-blocking (it neither waits for the default stream nor makes it wait),
for the planted GPU tiers that hide work from the timer's events."""

import ctypes

from numba import cuda

CU_STREAM_NON_BLOCKING = 1


def non_blocking_stream():
    """A stream made by the driver API itself (numba's own streams are blocking ones)."""
    cuda.current_context()  # the driver needs a current context
    handle = ctypes.c_void_p()
    ctypes.CDLL("libcuda.so.1").cuStreamCreate(ctypes.byref(handle), CU_STREAM_NON_BLOCKING)
    return cuda.external_stream(handle.value)

"""Pinned host memory, streams and events of the nvcc library (csrc/streams.cu): the pieces a
double-buffered host-to-device pipeline (nn/host_pipeline.py) and an all-reduce on a stream of its
own (nn/distributed/) are made of. Given code, not exercises.

- pinned_empty(shape, dtype): a NumPy array in page-locked host memory, freed with the array.
- Stream(): a non-blocking stream (it waits neither for the library's kernels nor numba's).
  DEFAULT (None) stands for the default streams, where the kernels of both variants run.
- Event(timing=False): `record(stream)`, `wait(stream)` (work queued there afterwards waits for
  it), `synchronize()` (the host waits), `elapsed_ms(later)` (with timing=True).
- upload(destination, source, stream): device array <- host array of the same size, queued on
  `stream`; returns at once when `source` is pinned.
"""

import numpy as np

from . import _library
from ._library import call, ffi

DEFAULT = None  # the default streams (csrc/streams.cu)


def pinned_empty(shape, dtype=np.float32):
    """An uninitialized NumPy array of `shape` in page-locked memory (cudaMallocHost)."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    made = ffi.new("void **")
    call("s2c_cuda_host_alloc", made, count * dtype.itemsize)
    lib = _library.library()
    # ffi.gc frees the memory once nothing holds it; the buffer, and so the array, holds it
    memory = ffi.gc(ffi.cast("char *", made[0]), lib.s2c_cuda_host_free)
    return np.frombuffer(ffi.buffer(memory, count * dtype.itemsize), dtype).reshape(shape)


def stream_handle(stream):
    """`stream` as the library takes it: NULL for the default streams, else its cudaStream_t."""
    return ffi.NULL if stream is None else stream.handle


class Stream:
    """A non-blocking CUDA stream; `handle` is its cudaStream_t (NCCL takes it)."""

    def __init__(self):
        made = ffi.new("void **")
        call("s2c_cuda_stream_create", made)
        self.handle = ffi.gc(made[0], _library.library().s2c_cuda_stream_destroy)

    @property
    def address(self):
        """The cudaStream_t as an integer, for another library's binding."""
        return int(ffi.cast("uintptr_t", self.handle))

    def synchronize(self):
        call("s2c_cuda_stream_synchronize", self.handle)


class Event:
    """A CUDA event; with `timing`, two of them give the milliseconds between them."""

    def __init__(self, timing=False):
        made = ffi.new("void **")
        call("s2c_cuda_event_create", made, int(timing))
        self.handle = ffi.gc(made[0], _library.library().s2c_cuda_event_destroy)

    def record(self, stream=DEFAULT):
        """Mark this point of `stream` (the default streams when None)."""
        call("s2c_cuda_event_record", self.handle, stream_handle(stream))
        return self

    def wait(self, stream=DEFAULT):
        """Work queued on `stream` from now on starts after this event."""
        call("s2c_cuda_stream_wait_event", stream_handle(stream), self.handle)

    def synchronize(self):
        """The host waits until the event has happened."""
        call("s2c_cuda_event_synchronize", self.handle)

    def elapsed_ms(self, later):
        """Milliseconds from this event to `later` (both recorded with timing=True)."""
        milliseconds = ffi.new("float *")
        call("s2c_cuda_event_elapsed", self.handle, later.handle, milliseconds)
        return float(milliseconds[0])


def upload(destination, source, stream=DEFAULT):
    """destination (a C-contiguous device array) <- source (a C-contiguous host array of the same
    bytes), queued on `stream`."""
    source = np.ascontiguousarray(source)
    if source.nbytes != destination.nbytes:
        raise ValueError(f"upload: source holds {source.nbytes} bytes, destination "
                         f"{destination.nbytes}")  # fmt: skip
    host = ffi.cast("void *", source.ctypes.data)
    call("s2c_cuda_copy_to_device", destination, host, source.nbytes, stream_handle(stream))

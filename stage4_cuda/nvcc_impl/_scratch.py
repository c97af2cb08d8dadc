"""The nvcc variant's one scratch buffer: device memory for what an op computes on the way and does
not return (a conv rung's transforms, the backward's partial sums, the partial tiles of a product
split along k). The library's kernels run in order on one stream, so one buffer serves every op in
turn; it grows when an op needs more. A recorded step keeps each call's view, and with it the
buffer that view points into."""

from ..runtime import device
from ._library import check_status, ffi, library

_buffer = None


def scratch_for(function, *args):
    """The shared scratch an op needs: `function(*args, &floats)` of the library says how many
    floats (s2c_cuda_conv2d_scratch, s2c_cuda_linear_scratch); None when it needs none. Called
    directly, not through `call`: a size computed on the host has no place in a recorded step,
    whose every call is made again at each step."""
    floats = ffi.new("int64_t *")
    check_status(function, getattr(library(), function)(*args, floats))
    return shared_scratch(floats[0])


def shared_scratch(floats):
    """A view of `floats` floats of the shared buffer (grown first when smaller); None for 0."""
    global _buffer
    if floats == 0:
        return None
    if _buffer is None or _buffer.size < floats:
        _buffer = None  # freed before the larger one is allocated
        _buffer = device.scratch((floats,))
    return _buffer[:floats]

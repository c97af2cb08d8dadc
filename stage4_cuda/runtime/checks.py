"""The argument checks made before any launch, in both variants: argcheck's (one vocabulary, one
message format for every tier), over device arrays. Given to learners: no solution region here.

A kernel trusts its arguments: a wrong size makes it read or write memory it does not own, and on
a GPU that is silent garbage or a crash of the whole context. So `checks.<op>(...)` checks every
argument on its metadata, read through `__cuda_array_interface__` (numba, CuPy, PyTorch; the
simulator's device arrays describe their host memory with `__array_interface__`), never copying an
array to the host. What is particular to the GPU is here: a host NumPy array where a device array
is expected is a TypeError naming the argument (a silent copy would hide a host round trip in every
step), a strided view is refused (the kernels index flat memory), and the range of labels and argmax
indices is found on the device by `_min_max`, the one value a check reads back.
"""

import numpy as np
from numba import cuda

import argcheck
from argcheck import arrays

from .device import SIMULATOR, as_device, scratch
from .launch import BLOCK, blocks_for, launch

MIN_MAX_BLOCKS = 4 if SIMULATOR else 1024  # the first level's blocks, at most


@cuda.jit
def _min_max(low_in, high_in, out):
    """out[0, block] = the min of low_in, out[1, block] = the max of high_in, over the block's
    share (a grid-stride loop), then a shared-memory tree. Launched twice: on the values (low_in
    and high_in both the values), then as one block on the first launch's out[0] and out[1]: one
    block alone would run on one multiprocessor, far from streaming a large argmax."""
    low = cuda.shared.array(BLOCK, np.int64)
    high = cuda.shared.array(BLOCK, np.int64)
    t = cuda.threadIdx.x
    lowest, highest = low_in[0], high_in[0]
    for i in range(cuda.grid(1), low_in.size, cuda.gridsize(1)):
        lowest = min(lowest, low_in[i])
        highest = max(highest, high_in[i])
    low[t], high[t] = lowest, highest
    cuda.syncthreads()
    step = cuda.blockDim.x // 2
    while step > 0:
        if t < step:
            low[t] = min(low[t], low[t + step])
            high[t] = max(high[t], high[t + step])
        cuda.syncthreads()
        step //= 2
    if t == 0:
        out[0, cuda.blockIdx.x] = low[0]
        out[1, cuda.blockIdx.x] = high[0]


range_kernel = _min_max  # the one kernel a check launches (recording.py does not record it)


class DeviceArrays:
    """argcheck's adapter for this tier: C-contiguous numba device arrays, float32 data and
    integer indices."""

    native = "device arrays"
    float_dtype = "float32"

    @staticmethod
    def describe(op, name, x):
        if isinstance(x, np.ndarray):
            argcheck.fail_type(op, f"{name} must be a device array, got a host NumPy array (copy "
                                   "it to the GPU once, with from_numpy)")  # fmt: skip
        device = as_device(x)
        if device is None:
            return None
        if not device.is_c_contiguous():
            argcheck.fail(op, f"{name} must be C-contiguous (not a view with strides)")
        return argcheck.from_interface(argcheck.interface_of(device))

    readable = staticmethod(as_device)  # described, so a device array: a view, no copy
    copy_indices = staticmethod(as_device)  # a kernel reads them: no host thread changes them
    index_array = staticmethod(lambda x: x)

    @staticmethod
    def index_range(x):
        """(lowest, highest) value, from one small kernel: two ints come back, which waits for
        the GPU (the one sync such an op makes)."""
        values = x.reshape(x.size)
        blocks = min(blocks_for(values.size, BLOCK * 16), MIN_MAX_BLOCKS)  # 16 values a thread
        partial, extremes = scratch((2, blocks), np.int64), scratch((2, 1), np.int64)
        launch(_min_max, blocks, BLOCK, values, values, partial)
        launch(_min_max, 1, BLOCK, partial[0], partial[1], extremes)
        low, high = (int(v) for v in extremes.copy_to_host()[:, 0])
        return low, high


TIER = DeviceArrays()
checks = argcheck.bind(TIER)


def integers(op, name, x, n=None):
    """An integer device array outside the contract (row offsets, labels to count), of n rows
    when given; returns it."""
    info = arrays.describe(TIER, op, name, x)
    if info.kind not in ("i", "u"):
        argcheck.fail_type(op, f"{name} must be an integer array, got {info.dtype}")
    if n is not None and info.shape != (n,):
        got = argcheck.format_shape(info.shape)
        argcheck.fail(op, f"{name} must have shape [N={n}], got {got}")
    return as_device(x)


def kernel_name(op, kernel, names, best):
    """The rung of a kernel ladder that `kernel` names: "best" (`best`), a name in `names`, or
    its number 1..len(names)."""
    if kernel == "best":
        return best
    if argcheck.is_int(kernel) and 1 <= kernel <= len(names):
        return names[kernel - 1]
    if kernel in names:
        return kernel
    argcheck.fail(op, f"kernel must be 'best', one of {names} or 1..{len(names)}, got {kernel!r}")

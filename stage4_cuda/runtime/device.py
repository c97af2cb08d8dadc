"""Device arrays: the currency both variants of stage 4 share.

The currency is numba's device array: float32 data, int64 labels and argmax, as `from_numpy`
makes them. An op accepts anything exposing `__cuda_array_interface__` (CuPy arrays, PyTorch CUDA
tensors) and views it as a numba device array without a copy. A host NumPy array where a device
array is expected is an error naming the argument (checks.py): a silent copy would hide a host
round trip inside every training step (use `from_numpy` once instead).

Every output comes from `empty(shape, dtype)`, which the ops of both variants look up here at
call time (`device.empty(...)`): the grader replaces it for a graded call by one that fills each
new array with NaN (grader/poison.py), so an element a kernel forgets to write shows up as NaN
instead of whatever the memory held before.

Importing this module sets numba up: on a GPU, arrays come from a caching allocator
(allocator.py); under NUMBA_ENABLE_CUDASIM=1, the simulator's shared arrays get a lock
(simulator.py).
"""

import os

import numpy as np
from numba import cuda

SIMULATOR = bool(cuda.config.ENABLE_CUDASIM)

if SIMULATOR:
    from .simulator import lock_shared_arrays

    lock_shared_arrays()
elif os.environ.get("S2C_CACHING_ALLOCATOR", "1") != "0":
    # Before the first allocation creates the context: arrays come from a caching allocator.
    # S2C_CACHING_ALLOCATOR=0 (make sanitize) gives each array its own cuMemAlloc, so that
    # compute-sanitizer's memcheck sees a write past an array's end (a pooled block may hide it).
    from .allocator import CachingMemoryManager

    cuda.set_memory_manager(CachingMemoryManager)


def empty(shape, dtype=np.float32):
    """A new device array for an op's output: the hook every op allocates its results through."""
    return cuda.device_array(shape, dtype=dtype)


def scratch(shape, dtype=np.float32):
    """A device array for intermediate results an op does not return (never poisoned: the op
    writes it whole before reading it)."""
    return cuda.device_array(shape, dtype=dtype)


def as_device(x):
    """`x` as a numba device array (a view, no copy), or None when it is not on the device."""
    if cuda.devicearray.is_cuda_ndarray(x):  # the simulator's fake device arrays too
        return x
    if not SIMULATOR and hasattr(x, "__cuda_array_interface__"):
        return cuda.as_cuda_array(x)
    return None


def flat(x):
    """A C-contiguous device array as 1-D (a view): elementwise kernels index it with one i."""
    return x.reshape(x.size)


class DeviceScalar:
    """A loss that stays on the device until someone reads it: one float32 on the GPU.

    `float(loss)` copies it to the host (and so waits for the GPU); `loss.array` is the device
    array of one element holding it, for code that keeps computing on the device;
    `__cuda_array_interface__` lets CuPy or PyTorch view that array without a copy.
    """

    def __init__(self, array):
        self.array = array

    def __float__(self):
        return float(self.array.copy_to_host()[0])

    def __repr__(self):
        return f"DeviceScalar({float(self):.8g})"

    @property
    def __cuda_array_interface__(self):
        if SIMULATOR:  # its "device" memory is host memory, described by NumPy's interface
            return {**self.array.__array_interface__, "version": 3}
        return self.array.__cuda_array_interface__


def from_numpy(a):
    """A NumPy array copied to the device: floating data as float32, int8 codes as int8, other
    integers (labels, argmax) as int64; a 0-d array becomes a Python scalar."""
    a = np.asarray(a)
    if a.ndim == 0:
        return a.item()
    if a.dtype.kind == "f":
        return cuda.to_device(np.ascontiguousarray(a, dtype=np.float32))
    if a.dtype == np.int8:  # quantized codes keep their width
        return cuda.to_device(np.ascontiguousarray(a))
    if a.dtype.kind in "iu":
        return cuda.to_device(np.ascontiguousarray(a, dtype=np.int64))
    raise ValueError(f"from_numpy: a must hold floats or integers, got {a.dtype}")


def to_numpy(x):
    """A device array (or a DeviceScalar loss, or a Python scalar) copied to a NumPy array."""
    if isinstance(x, DeviceScalar):
        return np.array(float(x), dtype=np.float32)  # 0-d, like the losses of the CPU tiers
    if hasattr(x, "copy_to_host"):
        return x.copy_to_host()
    if hasattr(x, "__cuda_array_interface__"):
        return cuda.as_cuda_array(x).copy_to_host()
    return np.array(x)


def synchronize():
    """Wait until every kernel launched so far has finished (timing needs it)."""
    cuda.synchronize()

"""Device arrays, output allocation and kernel launches: what every op of this tier shares.

The currency is numba's device array. An op accepts anything exposing `__cuda_array_interface__`
(CuPy arrays, PyTorch CUDA tensors) and views it as a numba device array without a copy. A host
NumPy array where a device array is expected is an error naming the argument: a silent copy would
hide a host round trip inside every training step (use `from_numpy` once instead).

Every output comes from `empty(shape, dtype)`, which the ops look up here at call time
(`_device.empty(...)`): the grader replaces it for a graded call by one that fills each new array
with NaN (grader/poison.py), so an element a kernel forgets to write shows up as NaN instead of
whatever the memory held before.
"""

import math
import os
import sys
import threading
import traceback
import warnings

import numpy as np
from numba import cuda

SIMULATOR = bool(cuda.config.ENABLE_CUDASIM)


def _lock_simulator_shared_arrays():
    """Make the simulator's shared arrays shared by every thread of a block, always.

    numba-cuda 0.30's simulator makes a block's shared array when its first thread reaches the
    `cuda.shared.array` line, without a lock: two threads arriving together can each make one, and
    then they do not share it (a tiled matmul read tiles nobody wrote, now and then). This is the
    same allocation (keyed by the calling file and line, as there) under a lock, which also
    accepts an `alignment` (the simulator's own refuses one).
    """
    from numba.core import types
    from numba.cuda.simulator import kernelapi
    from numba.np import numpy_support

    lock = threading.Lock()

    def array(self, shape, dtype, alignment=None):
        # `alignment` (which numba's simulator refuses) only lets the GPU's compiler emit wide
        # loads; NumPy's arrays here need none.
        if shape == 0:  # dynamic shared memory: numba's own code
            return unlocked(self, shape, dtype)
        if isinstance(dtype, types.Type):  # numba's float32, as opposed to NumPy's
            dtype = numpy_support.as_dtype(dtype)
        caller = traceback.extract_stack(sys._getframe())[-2][0:2]
        with lock:
            if caller not in self._allocations:
                self._allocations[caller] = np.empty(shape, dtype)
            return self._allocations[caller]

    unlocked = kernelapi.FakeCUDAShared.array
    kernelapi.FakeCUDAShared.array = array


if SIMULATOR:
    _lock_simulator_shared_arrays()
elif os.environ.get("S2C_CACHING_ALLOCATOR", "1") != "0":
    # Before the first allocation creates the context: arrays come from a caching allocator.
    # S2C_CACHING_ALLOCATOR=0 (make sanitize) gives each array its own cuMemAlloc, so that
    # compute-sanitizer's memcheck sees a write past an array's end (a pooled block may hide it).
    from ._pool import CachingMemoryManager

    cuda.set_memory_manager(CachingMemoryManager)

# Threads per block of the elementwise kernels: 256 fills a multiprocessor's schedulers on a GPU.
# The simulator runs one Python thread per CUDA thread (about 0.4 ms each), so it gets one warp.
BLOCK = 32 if SIMULATOR else 256


def blocks_for(n, block=BLOCK):
    """The number of blocks of `block` threads that cover n elements, one thread each."""
    return max(1, math.ceil(n / block))


# --- stubs of the exercises -------------------------------------------------------------------

_STUB_MESSAGES = {}  # kernel -> the NotImplementedError message of its stub, or None


def _stub_message(kernel):
    """The message of an exercise stub (`raise NotImplementedError("week ...")`) in the kernel's
    body, or in the body of its per-element function (elementwise.py), or None for a written
    kernel. `make exercises` replaces a body by such a stub; a kernel cannot raise on the GPU, so
    the launch raises it on the host instead."""
    if kernel not in _STUB_MESSAGES:
        functions = (kernel, getattr(kernel, "element", None))
        constants = [c for f in functions if f is not None for c in f.py_func.__code__.co_consts]
        _STUB_MESSAGES[kernel] = next(
            (c for c in constants if isinstance(c, str) and ": not implemented yet (" in c), None
        )
    return _STUB_MESSAGES[kernel]


# Called with (kernel, blocks, threads, args) after each launch, when set: a step's recording
# (recording.py).
recorder = None


def launch(kernel, blocks, threads, *args):
    """kernel[blocks, threads](*args), after checking that the kernel is not an exercise stub."""
    message = _stub_message(kernel)
    if message is not None:
        raise NotImplementedError(message)
    run(kernel[blocks, threads], *args)
    if recorder is not None:
        recorder(kernel, blocks, threads, args)


def run(configured, *args):
    """A configured kernel (kernel[blocks, threads]) on `args`."""
    if not SIMULATOR:
        configured(*args)
        return
    # The simulator computes with NumPy scalars, which warn where the GPU silently wraps (the
    # random stream's uint64 products) or overflows to inf (exp of a large float32): as on the GPU,
    # those are not errors.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)
        configured(*args)


def launch_elementwise(kernel, n, *args):
    """Launch `kernel` with one thread per element of n (the kernel checks i < n)."""
    launch(kernel, blocks_for(n), BLOCK, *args)


# --- arrays -----------------------------------------------------------------------------------

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

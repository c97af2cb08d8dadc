"""Device arrays, output allocation and kernel launches: what every op of this tier shares.

The currency is numba's device array. An op accepts anything exposing `__cuda_array_interface__`
(CuPy arrays, PyTorch CUDA tensors) and views it as a numba device array without a copy. A host
NumPy array where a device array is expected is an error naming the argument: a silent copy would
hide a host round trip inside every training step (use `from_numpy` once instead).

Every output comes from `empty(shape, dtype)`; inside `poisoned_outputs()` it fills each new array
with NaN (integers with their most negative value), so an element a kernel forgets to write shows
up as NaN instead of whatever the memory held before: the grader wraps each graded call in it.
"""

import math
import warnings
from contextlib import contextmanager

import numpy as np
from numba import cuda

SIMULATOR = bool(cuda.config.ENABLE_CUDASIM)

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
    body, or None for a written kernel. `make exercises` replaces a kernel's body by such a stub;
    a kernel cannot raise on the GPU, so the launch raises it on the host instead."""
    if kernel not in _STUB_MESSAGES:
        constants = kernel.py_func.__code__.co_consts
        _STUB_MESSAGES[kernel] = next(
            (c for c in constants if isinstance(c, str) and ": not implemented yet (" in c), None
        )
    return _STUB_MESSAGES[kernel]


def launch(kernel, blocks, threads, *args):
    """kernel[blocks, threads](*args), after checking that the kernel is not an exercise stub."""
    message = _stub_message(kernel)
    if message is not None:
        raise NotImplementedError(message)
    if not SIMULATOR:
        kernel[blocks, threads](*args)
        return
    # The simulator computes with NumPy scalars, which warn where the GPU silently wraps (the
    # random stream's uint64 products) or overflows to inf (exp of a large float32): as on the GPU,
    # those are not errors.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)
        kernel[blocks, threads](*args)


def launch_elementwise(kernel, n, *args):
    """Launch `kernel` with one thread per element of n (the kernel checks i < n)."""
    launch(kernel, blocks_for(n), BLOCK, *args)


# --- arrays -----------------------------------------------------------------------------------

_poison = False


@contextmanager
def poisoned_outputs():
    """Within the block, `empty` fills every output with NaN (integer ones with their minimum)."""
    global _poison
    before, _poison = _poison, True
    try:
        yield
    finally:
        _poison = before


def empty(shape, dtype=np.float32):
    """A new device array for an op's output: the hook every op allocates its results through."""
    out = cuda.device_array(shape, dtype=dtype)
    if _poison and out.size:
        value = np.nan if np.dtype(dtype).kind == "f" else np.iinfo(dtype).min
        launch_elementwise(_fill, out.size, out.reshape(out.size), out.dtype.type(value))
    return out


def scratch(shape, dtype=np.float32):
    """A device array for intermediate results an op does not return (never poisoned: the op
    writes it whole before reading it)."""
    return cuda.device_array(shape, dtype=dtype)


@cuda.jit
def _fill(out, value):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = value


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
    """A loss that stays on the device: a 0-d float32 device array until someone reads it.

    `float(loss)` copies it to the host (and so waits for the GPU); `loss.array` is the 0-d device
    array, for code that keeps summing on the device; `__cuda_array_interface__` lets CuPy or
    PyTorch view it without a copy.
    """

    def __init__(self, array):
        self.array = array

    def __float__(self):
        return float(self.array.copy_to_host())

    def __repr__(self):
        return f"DeviceScalar({float(self):.8g})"

    @property
    def __cuda_array_interface__(self):
        return self.array.__cuda_array_interface__

"""Argument checks made before any launch (given to learners: they sit outside the regions).

A kernel trusts its arguments: a wrong size makes it read or write memory it does not own, and on
a GPU that is silent garbage or a crash of the whole context. So every op checks device-ness,
dtype, rank, shapes, matching dimensions, scalar ranges and sizes here, and a failed check raises
`ValueError("<op>: <argument> must ..., got ...")`, with the messages of the other tiers.
Arrays are read through `__cuda_array_interface__` (numba, CuPy, PyTorch), never copied to the
host; only the range of labels and argmax indices needs a value from the device (see `indices`).
"""

import math
import numbers

import numpy as np
from numba import cuda

from ._device import as_device, launch, scratch

MAX_ELEMENTS = 2**31 - 1  # the most elements of an array an op allocates: int32 thread indices
MAX_INT = 2**31 - 1  # the largest int argument (k, stride, padding)
SEED_LIMIT = 2**64  # seeds of the shared random stream are unsigned 64-bit ints


def fail(op, message):
    """Raise the ValueError every check raises: `<op>: <message>`."""
    raise ValueError(f"{op}: {message}")


def format_shape(shape):
    """(2, 3) -> "[2, 3]"."""
    return "[" + ", ".join(str(size) for size in shape) + "]"


def _rank_of(layout):
    """ "[N, C, H, W]" -> 4."""
    return len(layout.split(","))


def _device_array(op, name, x, role=""):
    """`x` as a numba device array, or a ValueError saying it must be one."""
    device = as_device(x)
    if device is None:
        fail(
            op,
            f"{name} must be a device array{role} (copy a NumPy array to the GPU once, with "
            f"from_numpy), got {type(x).__name__}",
        )
    return device


def readable(op, name, x, layout=None, dtype=np.float32):
    """Check an input array on the device; return it as a numba device array.

    `layout` ("[N, C, H, W]", or a tuple of alternatives) fixes the rank; without it any rank
    goes. float32 data by default; `dtype=np.int64` asks for int64 (labels, argmax, as from_numpy
    makes them). The kernels index flat memory, so the array must be C-contiguous.
    """
    x = _device_array(op, name, x)
    if x.dtype != dtype:
        fail(op, f"{name} must be {np.dtype(dtype)}, got {x.dtype}")
    if layout is not None:
        layouts = (layout,) if isinstance(layout, str) else layout
        if x.ndim not in [_rank_of(option) for option in layouts]:
            fail(op, f"{name} must have shape {' or '.join(layouts)}, got {format_shape(x.shape)}")
    if x.size == 0 or x.ndim == 0:
        fail(op, f"{name} must not have a zero-size dimension, got {format_shape(x.shape)}")
    if not x.is_c_contiguous():
        fail(op, f"{name} must be C-contiguous (not a view with strides)")
    return x


def in_place(op, name, x, shape=None):
    """Check an array the op updates in place (parameters, optimizer state, running statistics):
    a float32 C-contiguous device array, of `shape` when given."""
    x = _device_array(op, name, x, " (it is updated in place)")
    if x.dtype != np.float32:
        fail(op, f"{name} must be float32 (it is updated in place), got {x.dtype}")
    if shape is not None and x.shape != tuple(shape):
        fail(op, f"{name} must have shape {format_shape(shape)}, got {format_shape(x.shape)}")
    return readable(op, name, x)


def same_shape(op, name, x, reference_name, reference_shape, dtype=np.float32):
    """Check an input array of the shape of argument `reference_name`; return it."""
    x = readable(op, name, x, dtype=dtype)
    if x.shape != tuple(reference_shape):
        fail(
            op,
            f"{name} must have {reference_name}'s shape {format_shape(reference_shape)}, "
            f"got {format_shape(x.shape)}",
        )
    return x


def shaped(op, name, x, layout, expected, dtype=np.float32):
    """Check an input array whose whole shape is known: `layout` "[N, K, OH, OW]" names the
    dimensions, `expected` gives their sizes."""
    x = readable(op, name, x, layout, dtype)
    if x.shape != tuple(expected):
        names = [dim.strip() for dim in layout.strip("[]").split(",")]
        wanted = ", ".join(f"{dim}={size}" for dim, size in zip(names, expected, strict=True))
        fail(op, f"{name} must have shape [{wanted}], got {format_shape(x.shape)}")
    return x


@cuda.jit
def _min_max(values, out):
    """out[0] = min(values), out[1] = max(values), by one block striding over the array."""
    low = cuda.shared.array(32, np.int64)
    high = cuda.shared.array(32, np.int64)
    t = cuda.threadIdx.x
    low[t] = values[0]
    high[t] = values[0]
    for i in range(t, values.size, 32):
        low[t] = min(low[t], values[i])
        high[t] = max(high[t], values[i])
    cuda.syncthreads()
    if t == 0:
        for i in range(1, 32):
            low[0] = min(low[0], low[i])
            high[0] = max(high[0], high[i])
        out[0] = low[0]
        out[1] = high[0]


def indices(op, name, x, layout, expected, limit, what):
    """Check int64 indices (labels, argmax) of a known shape, each in [0, limit).

    The range needs the values: one small kernel finds the minimum and maximum on the device and
    two ints come back, which waits for the GPU (the one sync such an op makes).
    """
    x = shaped(op, name, x, layout, expected, dtype=np.int64)
    extremes = scratch(2, np.int64)
    launch(_min_max, 1, 32, x.reshape(x.size), extremes)
    low, high = (int(v) for v in extremes.copy_to_host())
    if low < 0 or high >= limit:
        fail(op, f"{name} must hold {what} in [0, {limit}), got {low if low < 0 else high}")
    return x


def labels(op, name, x, n, classes):
    """Integer class labels [N=n] on the device, each in [0, classes)."""
    return indices(op, name, x, "[N]", (n,), classes, f"class indices (C={classes})")


def is_int(value):
    """True for ints (Python's or NumPy's), never for bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def integer(op, name, value, minimum, maximum=MAX_INT):
    """Check an int argument in [minimum, maximum]; return it as a Python int."""
    if not (is_int(value) and minimum <= value <= maximum):
        fail(op, f"{name} must be an int in [{minimum}, {maximum}], got {value!r}")
    return int(value)


def seed(op, value):
    """A seed of the shared random stream: an int in [0, 2^64)."""
    return integer(op, "seed", value, 0, SEED_LIMIT - 1)


def real(op, name, value, low=None, high=None, low_open=False, high_open=False):
    """Check a finite number argument, optionally within bounds; return it as a float32.

    `low` and `high` are inclusive unless `low_open` / `high_open`. The result is a NumPy
    float32 so that a kernel receiving it computes in float32 (a Python float is float64 there).
    """
    number = isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))
    try:
        ok = number and math.isfinite(value)
    except OverflowError:  # an int too large for a float
        ok = False
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value < high if high_open else value <= high
    if not ok:
        lower = "" if low is None else f"{low} {'<' if low_open else '<='} "
        upper = "" if high is None else f" {'<' if high_open else '<='} {high}"
        condition = f" with {lower}{name}{upper}" if lower or upper else ""
        fail(op, f"{name} must be a finite number{condition}, got {value!r}")
    return np.float32(value)


def kernel_name(op, kernel, names, best):
    """The rung of a kernel ladder that `kernel` names: "best" (`best`), a name in `names`, or
    its number 1..len(names)."""
    if kernel == "best":
        return best
    if is_int(kernel) and 1 <= kernel <= len(names):
        return names[kernel - 1]
    if kernel in names:
        return kernel
    fail(op, f"kernel must be 'best', one of {names} or 1..{len(names)}, got {kernel!r}")


def flag(op, name, value):
    """Check a True/False flag (Python's bool or NumPy's)."""
    if not isinstance(value, (bool, np.bool_)):
        fail(op, f"{name} must be True or False, got {value!r}")
    return bool(value)


def shape_argument(op, name, shape, layout=None):
    """Check a shape passed as an argument (`x_shape`, an init's `shape`): a tuple of ints >= 1,
    of the rank of `layout` ("[N, C, H, W]") when given, small enough to allocate."""
    rank = None if layout is None else _rank_of(layout)
    valid = (
        isinstance(shape, (tuple, list))
        and len(shape) >= 1
        and (rank is None or len(shape) == rank)
        and all(is_int(size) and 1 <= size <= MAX_INT for size in shape)
    )
    if not valid:
        wanted = "a tuple of ints >= 1" if layout is None else f"a tuple {layout} of ints >= 1"
        fail(op, f"{name} must be {wanted}, got {shape!r}")
    shape = tuple(int(size) for size in shape)
    if math.prod(shape) > MAX_ELEMENTS:
        fail(op, f"{name} {format_shape(shape)} has more than {MAX_ELEMENTS} elements")
    return shape


def window_output(op, axis, size, window, stride, padding=0):
    """A sliding window's output size along `axis`: (size + 2*padding - window) // stride + 1,
    which must be >= 1."""
    out = (size + 2 * padding - window) // stride + 1
    if out < 1:
        fail(
            op,
            f"the output {axis} must be >= 1, got ({size} + 2*{padding} - {window}) // {stride} "
            f"+ 1 = {out} (input {axis} {size}, window {window}, stride {stride}, "
            f"padding {padding})",
        )
    return out

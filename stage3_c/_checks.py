"""Argument checks made before any call into C (given to learners: they sit outside the regions).

C trusts its arguments: a wrong size or a bad index makes it read or write memory it does not own.
So every wrapper checks dtype, rank, shapes, matching dimensions, scalar ranges and sizes here,
and a failed check raises `ValueError("<op>: <argument> must ..., got ...")`. Arrays the C code only
reads are copied when they are not C-contiguous and aligned (a transposed view, a negative
stride); arrays it updates in place must already be float32, C-contiguous, aligned and writeable.
Shapes are written as in the docstrings: `[N, C, H, W]`.
"""

import math
import numbers

import numpy as np

from . import _memory

# The most elements of any array an op allocates (an output or a C scratch buffer), and the
# largest int argument (k, stride, padding): far beyond the course's sizes, and small enough that
# no size computed from them overflows int64 in C.
MAX_ELEMENTS = 2**31 - 1
MAX_INT = 2**31 - 1
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


def readable(op, name, x, layout=None, dtype=np.float32):
    """Check an input array; return it C-contiguous and aligned (a copy only when it is not).

    `layout` ("[N, C, H, W]", or a tuple of alternatives) fixes the rank; without it any rank
    goes. float32 data by default; `dtype=np.int64` accepts any integer dtype (labels, argmax)
    and returns int64.
    """
    integers = dtype == np.int64
    kind = "an integer" if integers else "a float32"
    if not isinstance(x, np.ndarray):
        fail(op, f"{name} must be {kind} NumPy array, got {type(x).__name__}")
    dtype_ok = np.issubdtype(x.dtype, np.integer) if integers else x.dtype == np.float32
    if not dtype_ok:
        fail(op, f"{name} must be {'an integer dtype' if integers else 'float32'}, got {x.dtype}")
    if layout is not None:
        layouts = (layout,) if isinstance(layout, str) else layout
        if x.ndim not in [_rank_of(option) for option in layouts]:
            fail(op, f"{name} must have shape {' or '.join(layouts)}, got {format_shape(x.shape)}")
    if x.size == 0:
        fail(op, f"{name} must not have a zero-size dimension, got {format_shape(x.shape)}")
    if integers and x.dtype != np.int64:
        if x.min() < np.iinfo(np.int64).min or x.max() > np.iinfo(np.int64).max:
            fail(op, f"{name} holds values outside int64")
        x = x.astype(np.int64)
    return np.require(x, requirements=["C_CONTIGUOUS", "ALIGNED"])


def in_place(op, name, x, shape=None):
    """Check an array the C code updates in place (parameters, optimizer state, running
    statistics): float32, of `shape` when given, C-contiguous, aligned and writeable."""
    if not isinstance(x, np.ndarray):
        fail(op, f"{name} must be a float32 NumPy array (updated in place), got {type(x).__name__}")
    if x.dtype != np.float32:
        fail(op, f"{name} must be float32 (it is updated in place), got {x.dtype}")
    if shape is not None and x.shape != tuple(shape):
        fail(op, f"{name} must have shape {format_shape(shape)}, got {format_shape(x.shape)}")
    if x.size == 0:
        fail(op, f"{name} must not have a zero-size dimension, got {format_shape(x.shape)}")
    if not (x.flags.c_contiguous and x.flags.aligned and x.flags.writeable):
        fail(
            op,
            f"{name} is updated in place, so it must be a C-contiguous, aligned, writeable array "
            "(not a view with strides, not read-only)",
        )
    return x


def same_shape(op, name, x, reference_name, reference_shape, dtype=np.float32):
    """Check an input array of the shape of argument `reference_name`; return it readable."""
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
    dimensions, `expected` gives their sizes. Returns it readable."""
    x = readable(op, name, x, layout, dtype)
    if x.shape != tuple(expected):
        names = [dim.strip() for dim in layout.strip("[]").split(",")]
        wanted = ", ".join(f"{dim}={size}" for dim, size in zip(names, expected, strict=True))
        fail(op, f"{name} must have shape [{wanted}], got {format_shape(x.shape)}")
    return x


def labels(op, name, x, n, classes):
    """Integer class labels [N=n], each in [0, classes); returned as int64."""
    x = shaped(op, name, x, "[N]", (n,), dtype=np.int64)
    low, high = int(x.min()), int(x.max())
    if low < 0 or high >= classes:
        bad = low if low < 0 else high
        fail(op, f"{name} must hold class indices in [0, C={classes}), got {bad}")
    return x


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
    """Check a finite number argument, optionally within bounds; return it as a float.

    `low` and `high` are inclusive unless `low_open` / `high_open`: `real(op, "p", p, 0, 1,
    high_open=True)` accepts 0 <= p < 1.
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
    return float(value)


def flag(op, name, value):
    """Check a True/False flag (Python's bool or NumPy's)."""
    if not isinstance(value, (bool, np.bool_)):
        fail(op, f"{name} must be True or False, got {value!r}")
    return bool(value)


def shape_argument(op, name, shape, layout=None):
    """Check a shape passed as an argument (`x_shape`, an init's `shape`): a tuple of ints >= 1.

    `layout` ("[N, C, H, W]") fixes the rank; without it any rank >= 1 goes. The shape must also
    be small enough to allocate (MAX_ELEMENTS).
    """
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
    check_elements(op, name, shape)
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


def check_elements(op, what, shape):
    """Refuse to allocate more than MAX_ELEMENTS elements for `what` (a ValueError, not a crash
    or an out-of-memory kill)."""
    count = math.prod(shape)
    if count > MAX_ELEMENTS:
        fail(
            op,
            f"{what} would have {count} elements (shape {format_shape(shape)}), more than the "
            f"{MAX_ELEMENTS} this tier allocates",
        )


def new_output(op, shape, dtype=np.float32):
    """A new output array from the tier's allocation hook (_memory.py), which pre-fills it."""
    check_elements(op, "the output", shape)
    return _memory.empty(shape, dtype)

"""Argument checks shared by the ops of this tier (given to learners: they sit outside the regions).

Every failed check raises `ValueError("<op>: <argument> must ..., got ...")`, naming the op, the
argument and what was expected. Shapes are written as in the docstrings: `[N, C, H, W]`.
The checks run on every call of the training loop, so each costs a few attribute look-ups and,
for labels only, one pass over the data (their range).
"""

import math
import numbers

import numpy as np

NCHW = ("N", "C", "H", "W")


def fail(op, message):
    """Raise the ValueError every check raises: `<op>: <message>`."""
    raise ValueError(f"{op}: {message}")


def layout(dims):
    """("N", "K") -> "[N, K]"."""
    return "[" + ", ".join(dims) + "]"


def check_float(op, name, x, dims=None):
    """Check that `x` is a float32 array with no zero-size dimension; return it C-contiguous.

    `dims` names the dimensions, e.g. ("N", "K"), and fixes the rank; None accepts any rank >= 1.
    A non-contiguous input is copied once here, so the ops (and their outputs) are C-contiguous.
    """
    if not isinstance(x, np.ndarray):
        fail(op, f"{name} must be a float32 NumPy array, got {type(x).__name__}")
    if x.dtype != np.float32:
        fail(op, f"{name} must be float32, got {x.dtype}")
    if dims is not None and x.ndim != len(dims):
        fail(op, f"{name} must be {len(dims)}-D {layout(dims)}, got shape {x.shape}")
    if x.ndim == 0 or x.size == 0:
        fail(op, f"{name} must have at least one element in every dimension, got shape {x.shape}")
    return np.ascontiguousarray(x)


def check_dim(op, name, x, dims, axis, size, why):
    """Check that dimension `axis` of `x` (named by `dims`) has `size`; `why` says where from."""
    if x.shape[axis] != size:
        fail(op, f"{name} must have shape {layout(dims)} with {dims[axis]} = {size} ({why}), "
                 f"got {x.shape}")


def check_like(op, name, x, ref_name, ref):
    """Check that `x` is float32 with `ref`'s shape (e.g. dy like y); return it C-contiguous."""
    x = check_float(op, name, x)
    if x.shape != ref.shape:
        fail(op, f"{name} must have {ref_name}'s shape {ref.shape}, got {x.shape}")
    return x


def check_vector(op, name, x, length, why):
    """Check that `x` is a float32 [length] vector (`why` says where the length comes from)."""
    x = check_float(op, name, x)
    if x.shape != (length,):
        fail(op, f"{name} must have shape [{length}] ({why}), got {x.shape}")
    return x


def check_in_place(op, name, x, shape=None, why=""):
    """Check an array the op updates in place: float32, C-contiguous, writeable (, `shape`).

    Converting it would update a copy and leave the caller's array unchanged, so it is refused.
    `why` says where `shape` comes from, e.g. "p's shape".
    """
    if not isinstance(x, np.ndarray) or x.dtype != np.float32:
        got = x.dtype if isinstance(x, np.ndarray) else type(x).__name__
        fail(op, f"{name} must be a float32 NumPy array (it is updated in place), got {got}")
    if shape is not None and x.shape != shape:
        fail(op, f"{name} must have shape {shape} ({why}), got {x.shape}")
    if x.ndim == 0 or x.size == 0:
        fail(op, f"{name} must have at least one element in every dimension, got shape {x.shape}")
    if not (x.flags.c_contiguous and x.flags.writeable):
        fail(op, f"{name} must be a C-contiguous, writeable array (it is updated in place)")


def check_labels(op, labels, n, classes):
    """Check integer class labels [N] with values in [0, classes); return them C-contiguous."""
    if not isinstance(labels, np.ndarray) or labels.dtype.kind not in "iu":
        got = labels.dtype if isinstance(labels, np.ndarray) else type(labels).__name__
        fail(op, f"labels must be an integer array [N], got {got}")
    if labels.shape != (n,):
        fail(op, f"labels must have shape [N] with N = {n} (the rows of the scores), "
                 f"got {labels.shape}")
    low, high = labels.min(), labels.max()
    if low < 0 or high >= classes:
        bad = low if low < 0 else high
        fail(op, f"labels must be class indices in [0, {classes}), got {bad}")
    return np.ascontiguousarray(labels)


def check_int(op, name, value, minimum):
    """Check that `value` is an int >= minimum (bool is refused); return it as a Python int."""
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        fail(op, f"{name} must be an int >= {minimum}, got {value!r}")
    if value < minimum:
        fail(op, f"{name} must be an int >= {minimum}, got {value}")
    return int(value)


def check_seed(op, seed):
    """Check a seed of the shared random stream: an int in [0, 2^64); return it as a Python int."""
    seed = check_int(op, "seed", seed, 0)
    if seed >= 2**64:
        fail(op, f"seed must be below 2^64 (the stream works on 64-bit integers), got {seed}")
    return seed


def check_real(op, name, value, low=-math.inf, high=math.inf, high_open=False):
    """Check that `value` is a finite number in [low, high] (or [low, high) when `high_open`).

    Returns it as a Python float, so `array * value` stays float32 (a NumPy float64 would not).
    """
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        fail(op, f"{name} must be a number, got {value!r}")
    closing = ")" if high_open else "]"
    if not (math.isfinite(value) and low <= value <= high) or (high_open and value == high):
        fail(op, f"{name} must be a finite number in [{low}, {high}{closing}, got {value!r}")
    return float(value)


def check_flag(op, name, value):
    """Check that `value` is a bool (NumPy's too); return it as a Python bool."""
    if not isinstance(value, bool | np.bool_):
        fail(op, f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_shape(op, name, shape, rank=None):
    """Check a shape argument: a tuple (or list) of ints >= 1, of length `rank` when given."""
    if not isinstance(shape, tuple | list) or not shape or not all(
        isinstance(size, numbers.Integral) and not isinstance(size, bool) and size >= 1
        for size in shape
    ):
        fail(op, f"{name} must be a non-empty tuple of ints >= 1, got {shape!r}")
    if rank is not None and len(shape) != rank:
        fail(op, f"{name} must have {rank} entries {layout(NCHW)}, got {shape!r}")
    return tuple(int(size) for size in shape)


def _output_size(op, axis, size, kernel, kernel_name, stride, padding):
    """(size + 2*padding - kernel) // stride + 1, which must be >= 1."""
    out = (size + 2 * padding - kernel) // stride + 1
    if out < 1:
        limit = f"{axis} + 2*padding = {size + 2 * padding}" if padding else f"{axis} = {size}"
        fail(op, f"{kernel_name} = {kernel} must be at most {limit}: the output would be empty "
                 f"(O{axis} = {out})")
    return out


def conv_output(op, x_shape, kh, kw, stride, padding, kernel_names=("kh", "kw")):
    """Check the convolution's geometry; return (OH, OW).

    `kernel_names` name kh and kw in messages (conv2d takes them from w's shape).
    """
    kh = check_int(op, kernel_names[0], kh, 1)
    kw = check_int(op, kernel_names[1], kw, 1)
    stride = check_int(op, "stride", stride, 1)
    padding = check_int(op, "padding", padding, 0)
    oh = _output_size(op, "H", x_shape[2], kh, kernel_names[0], stride, padding)
    ow = _output_size(op, "W", x_shape[3], kw, kernel_names[1], stride, padding)
    return oh, ow


def pool_output(op, x_shape, k, stride):
    """Check the pooling geometry (square window `k`, no padding); return (OH, OW)."""
    k = check_int(op, "k", k, 1)
    stride = check_int(op, "stride", stride, 1)
    oh = _output_size(op, "H", x_shape[2], k, "k", stride, 0)
    ow = _output_size(op, "W", x_shape[3], k, "k", stride, 0)
    return oh, ow


def check_channels(op, x):
    """Check a batchnorm input: float32 [N, C] or [N, C, H, W]; return it C-contiguous."""
    x = check_float(op, "x", x)
    if x.ndim not in (2, 4):
        fail(op, f"x must be 2-D [N, C] or 4-D {layout(NCHW)}, got shape {x.shape}")
    return x

"""Argument checks shared by the ops of this tier (given to learners: they sit outside the regions).

Every failed check raises `ValueError("<op>: <argument> must ..., got ...")`, naming the op, the
argument and what was expected. Shapes are written as in the docstrings: `[N, C, H, W]`.
A tensor here is a nested Python list: a `[N, C]` tensor is a list of N lists of C numbers.
"""

import math
import numbers


def fail(op, message):
    """Raise the ValueError every check raises: `<op>: <message>`."""
    raise ValueError(f"{op}: {message}")


def format_shape(shape):
    """(2, 3) -> "[2, 3]"."""
    return "[" + ", ".join(str(size) for size in shape) + "]"


def is_number(value):
    """True for ints and floats (bool is an int in Python, but never a number here)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def is_int(value):
    """True for ints (Python's or NumPy's), never for bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def tensor_shape(op, name, x, integers=False):
    """The shape of the nested list `x` as a tuple of ints.

    Checks that `x` is a list, rectangular (every list at one depth has the same length), with no
    zero-size dimension, holding numbers (ints only when `integers`, e.g. labels and argmax).
    """
    kind = "ints" if integers else "numbers"
    if not isinstance(x, list):
        fail(op, f"{name} must be a nested list of {kind}, got {type(x).__name__}")
    shape = []
    node = x
    while isinstance(node, list):  # the first element at each depth gives the expected length
        if not node:
            fail(
                op,
                f"{name} must not have a zero-size dimension, got an empty list at depth "
                f"{len(shape)}",
            )
        shape.append(len(node))
        node = node[0]
    _check_nesting(op, name, x, tuple(shape), 0, name, integers)
    return tuple(shape)


def _check_nesting(op, name, node, shape, depth, path, integers):
    """Check that `node`, found at `path` and `depth`, matches `shape` all the way down."""
    if len(node) != shape[depth]:
        fail(
            op,
            f"{name} must be a rectangular nested list of shape {format_shape(shape)}, "
            f"but {path} has {len(node)} elements instead of {shape[depth]}",
        )
    if depth == len(shape) - 1:
        accepted = is_int if integers else is_number
        for index, value in enumerate(node):
            if not accepted(value):
                kind = "an int" if integers else "a number"
                fail(
                    op,
                    f"{name} must be a nested list of shape {format_shape(shape)}, but "
                    f"{path}[{index}] is not {kind}: got {type(value).__name__}",
                )
        return
    for index, child in enumerate(node):
        if not isinstance(child, list):
            fail(
                op,
                f"{name} must be a rectangular nested list of shape {format_shape(shape)}, "
                f"but {path}[{index}] is a {type(child).__name__}, not a list",
            )
        _check_nesting(op, name, child, shape, depth + 1, f"{path}[{index}]", integers)


def expect_tensor(op, name, x, dims=None, integers=False, hint="", **known):
    """Check `x` and return its shape; `dims` names its dimensions, e.g. "N, C, H, W".

    Dimensions given in `known` must have that size: `expect_tensor(op, "w", w, "K, C, R, S", C=3)`
    fails with "w must have shape [K, C=3, R, S], got [8, 2, 3, 3]". `hint` follows the shape in the
    message. Without `dims` any rank >= 1 is accepted.
    """
    shape = tensor_shape(op, name, x, integers)
    if dims is None:
        return shape
    names = [dim.strip() for dim in dims.split(",")]
    matches = len(shape) == len(names) and all(
        size == known[dim] for size, dim in zip(shape, names, strict=True) if dim in known
    )
    if not matches:
        wanted = ", ".join(f"{dim}={known[dim]}" if dim in known else dim for dim in names)
        fail(op, f"{name} must have shape [{wanted}]{hint}, got {format_shape(shape)}")
    return shape


def expect_same_shape(op, name, x, reference_name, reference_shape, integers=False):
    """Check that `x` has the shape of the argument `reference_name`; return it."""
    shape = tensor_shape(op, name, x, integers)
    if shape != tuple(reference_shape):
        fail(
            op,
            f"{name} must have {reference_name}'s shape {format_shape(reference_shape)}, "
            f"got {format_shape(shape)}",
        )
    return shape


def expect_labels(op, name, labels, n, classes):
    """Check integer class labels: shape [N=n], each in [0, classes)."""
    expect_tensor(op, name, labels, "N", integers=True, N=n)
    for index, label in enumerate(labels):
        if not 0 <= label < classes:
            fail(op, f"{name}[{index}] must be a class index in [0, C={classes}), got {label}")


def expect_int(op, name, value, minimum, maximum=None):
    """Check an int argument in [minimum, maximum]; return it as a Python int."""
    in_range = is_int(value) and value >= minimum and (maximum is None or value <= maximum)
    if not in_range:
        bounds = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        fail(op, f"{name} must be an int {bounds}, got {value!r}")
    return int(value)


def expect_seed(op, seed):
    """A seed of the shared random stream: an int in [0, 2^64)."""
    return expect_int(op, "seed", seed, 0, 2**64 - 1)


def expect_real(op, name, value, low=None, high=None, low_open=False, high_open=False):
    """Check a finite number argument, optionally within bounds; return it as a float.

    `low`/`high` are inclusive unless `low_open`/`high_open`, e.g.
    `expect_real(op, "p", p, 0, 1, high_open=True)` for 0 <= p < 1.
    """
    in_range = is_number(value) and math.isfinite(value)
    if in_range and low is not None:
        in_range = value > low if low_open else value >= low
    if in_range and high is not None:
        in_range = value < high if high_open else value <= high
    if not in_range:
        bounds = ""
        if low is not None:
            bounds += f"{low} {'<' if low_open else '<='} "
        if low is not None or high is not None:
            bounds += name
        if high is not None:
            bounds += f" {'<' if high_open else '<='} {high}"
        condition = f" with {bounds}" if bounds else ""
        fail(op, f"{name} must be a finite number{condition}, got {value!r}")
    return float(value)


def expect_bool(op, name, value):
    """Check a True/False flag."""
    if not isinstance(value, bool):
        fail(op, f"{name} must be True or False, got {value!r}")
    return value


def expect_shape_argument(op, name, shape, dims=None):
    """Check a shape passed as an argument (`x_shape`, an init's `shape`): a tuple of ints >= 1.

    `dims` (e.g. "N, C, H, W") fixes the rank; without it any rank >= 1 is accepted.
    """
    rank = None if dims is None else len(dims.split(","))
    valid = (
        isinstance(shape, (tuple, list))
        and len(shape) >= 1
        and (rank is None or len(shape) == rank)
        and all(is_int(size) and size >= 1 for size in shape)
    )
    if not valid:
        wanted = "a tuple of ints >= 1" if dims is None else f"a tuple [{dims}] of ints >= 1"
        fail(op, f"{name} must be {wanted}, got {shape!r}")
    return tuple(int(size) for size in shape)


def output_size(op, axis, size, kernel, stride, padding=0):
    """A window's output size along `axis`, (size + 2*padding - kernel) // stride + 1, >= 1."""
    out = (size + 2 * padding - kernel) // stride + 1
    if out < 1:
        fail(
            op,
            f"the output {axis} must be >= 1, got ({size} + 2*{padding} - {kernel}) // "
            f"{stride} + 1 = {out} (input {axis} {size}, kernel {kernel}, stride {stride}, "
            f"padding {padding})",
        )
    return out

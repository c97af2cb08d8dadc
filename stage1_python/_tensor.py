"""Small helpers for tensors stored as nested lists (given to learners, like the checks).

A `[N, C, H, W]` tensor is a list of N lists of C lists of H lists of W numbers. These helpers build
and walk such lists; the ops' math lives in the solution regions of the other files.
"""

import math


def sqrt(value):
    """math.sqrt, but NaN for a negative or NaN value (as NumPy and C give) instead of raising."""
    return math.sqrt(value) if value >= 0.0 else math.nan


def full(shape, value):
    """A new nested list of `shape` (a tuple) filled with `value`; every row a distinct list."""
    if len(shape) == 1:
        return [value] * shape[0]
    return [full(shape[1:], value) for _ in range(shape[0])]


def zeros(shape):
    """A new nested list of `shape` filled with 0.0."""
    return full(shape, 0.0)


def map_elements(fn, *tensors):
    """`fn` applied to the matching elements of same-shape nested lists: a new nested list.

    `map_elements(f, x)` is `f(x[i][j]...)` everywhere, `map_elements(f, x, dy)` is
    `f(x[i][j]..., dy[i][j]...)`. Numbers (rank 0) are accepted too: `fn` is applied to them.
    """
    first = tensors[0]
    if not isinstance(first, list):
        return fn(*tensors)
    if not isinstance(first[0], list):  # the innermost rows: call fn directly, no recursion
        return [fn(*values) for values in zip(*tensors, strict=True)]
    return [map_elements(fn, *children) for children in zip(*tensors, strict=True)]


def flatten(x):
    """The elements of a nested list (or a single number) in row-major order, as a flat list."""
    if not isinstance(x, list):
        return [x]
    if not isinstance(x[0], list):
        return list(x)
    return [value for child in x for value in flatten(child)]


def reshape(values, shape):
    """The flat row-major list `values` as a nested list of `shape` (prod(shape) values)."""
    if len(shape) == 1:
        return list(values)
    step = math.prod(shape[1:])
    return [
        reshape(values[start : start + step], shape[1:]) for start in range(0, len(values), step)
    ]


def rows(x):
    """The innermost lists of a nested list, in row-major order (x itself when it is 1-D).

    They are the caller's own lists, so writing into them updates `x` in place (optimizers).
    """
    if not isinstance(x[0], list):
        yield x
        return
    for child in x:
        yield from rows(child)


def planes(x):
    """The `[H, W]` planes of an `[N, C, H, W]` tensor, image by image, channel by channel."""
    for image in x:
        yield from image

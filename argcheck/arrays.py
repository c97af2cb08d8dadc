"""Checks of array arguments, made on their metadata (metadata.py), the same for every tier.

A tier hands its arrays in through an adapter (see `Tier` in signatures.py) that reads their
metadata and converts them for its op bodies; the checks here decide and word every refusal.
The order is fixed, so a call with several faults gets the same message everywhere: the kind of
object, a zero-size dimension, rank 0, the dtype, the rank, then the sizes.
"""

from .errors import fail, fail_type, format_shape, type_name
from .metadata import interface_of


def describe(tier, op, name, x):
    """The ArrayInfo of `x`, an array of `tier` with at least one dimension and no zero-size one.

    An object that is no array is a TypeError; an array of another tier (a NumPy array given to
    stage 1, a list given to stage 2) gets a hint saying what this tier takes.
    """
    info = tier.describe(op, name, x)
    if info is None:
        interface = interface_of(x)  # a NumPy scalar has one too, of shape ()
        foreign = isinstance(x, list) or bool(interface and interface["shape"])
        hint = f" (this tier's arrays are {tier.native}: use from_numpy)" if foreign else ""
        fail_type(op, f"{name} must be an array, got {type_name(x)}{hint}")
    if 0 in info.shape:
        fail(op, f"{name} must not have a zero-size dimension, got size 0 at axis "
                 f"{info.shape.index(0)}")  # fmt: skip
    if not info.shape:
        fail(op, f"{name} must have at least one dimension, got a 0-d array")
    return info


def _check_dtype(tier, op, name, info, integers):
    """Floats of the tier's float dtype, or (`integers`) any integer dtype."""
    if integers:
        if info.kind not in ("i", "u"):
            fail_type(op, f"{name} must be an integer array, got {info.dtype}")
    elif info.kind != "f":
        fail_type(op, f"{name} must be a float array, got {info.dtype}")
    elif info.dtype != tier.float_dtype:
        fail_type(op, f"{name} must be {tier.float_dtype}, got {info.dtype}")


def _check_shape(op, name, shape, dims, hint, known):
    """`dims` ("N, K", or a tuple of alternatives) fixes the rank; dimensions named in `known`
    must have that size: dims "K, C, R, S" with C=3 reads "w must have shape [K, C=3, R, S]"."""
    if dims is None:
        return
    options = (dims,) if isinstance(dims, str) else dims
    for option in options:
        names = [dim.strip() for dim in option.split(",")]
        if len(names) == len(shape):
            sizes_ok = all(
                size == known[dim] for size, dim in zip(shape, names, strict=True) if dim in known
            )
            wanted = ", ".join(f"{dim}={known[dim]}" if dim in known else dim for dim in names)
            if sizes_ok:
                return
            fail(op, f"{name} must have shape [{wanted}]{hint}, got {format_shape(shape)}")
    wanted = " or ".join(f"[{option}]" for option in options)
    fail(op, f"{name} must have shape {wanted}{hint}, got {format_shape(shape)}")


def array(tier, op, name, x, dims=None, hint="", **known):
    """A float array the op reads; returns (x converted by the tier, its shape)."""
    info = describe(tier, op, name, x)
    _check_dtype(tier, op, name, info, integers=False)
    _check_shape(op, name, info.shape, dims, hint, known)
    return tier.readable(x), info.shape


def like(tier, op, name, x, reference_name, reference_shape):
    """A float array of the shape of argument `reference_name`; returns x converted."""
    info = describe(tier, op, name, x)
    _check_dtype(tier, op, name, info, integers=False)
    if info.shape != tuple(reference_shape):
        fail(op, f"{name} must have {reference_name}'s shape {format_shape(reference_shape)}, "
                 f"got {format_shape(info.shape)}")  # fmt: skip
    return tier.readable(x)


def in_place(tier, op, name, x, reference=None, dims=None, **known):
    """A float array the op updates in place (parameters, optimizer state, running statistics):
    of the shape of `reference` (an (argument name, shape) pair) or of `dims` and `known` when
    given, and C-contiguous, aligned and writeable, since a converted copy would leave the
    caller's array unchanged (a nested list always is). Returns x itself, never a copy."""
    info = describe(tier, op, name, x)
    _check_dtype(tier, op, name, info, integers=False)
    _check_shape(op, name, info.shape, dims, "", known)
    if reference is not None and info.shape != tuple(reference[1]):
        fail(op, f"{name} must have {reference[0]}'s shape {format_shape(reference[1])}, "
                 f"got {format_shape(info.shape)}")  # fmt: skip
    problems = [
        word
        for word, ok in (
            ("not C-contiguous", info.contiguous),
            ("unaligned", info.aligned),
            ("read-only", info.writeable),
        )
        if not ok
    ]
    if problems:
        fail(op, f"{name} is updated in place, so it must be a C-contiguous, aligned, writeable "
                 f"array, got one that is {' and '.join(problems)}")  # fmt: skip
    return x


def indices(tier, op, name, x, dims, limit, meaning, **known):
    """An integer array whose values index something (labels, argmax): shape `dims` with `known`
    sizes, every value in [0, limit). `meaning` says what a value is, e.g. "class indices in
    [0, C=10)". Returns the tier's private copy (C reads it after the check: a caller's thread
    must not be able to change it in between)."""
    info = describe(tier, op, name, x)
    _check_dtype(tier, op, name, info, integers=True)
    _check_shape(op, name, info.shape, dims, "", known)
    x = tier.copy_indices(x)  # validated, then used: the same private copy
    low, high = tier.index_range(x)
    if low < 0 or high >= limit:
        fail(op, f"{name} must hold {meaning}, got {low if low < 0 else high}")
    return tier.index_array(x)

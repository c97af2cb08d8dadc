"""What the checks know of an array: its metadata, read the same way for every tier's arrays.

An `ArrayInfo` holds the shape, the dtype (by NumPy's name: "float32", "int64", ...) and the
memory layout. Arrays that describe themselves through NumPy's `__array_interface__` or CUDA's
`__cuda_array_interface__` (NumPy arrays, numba device arrays, CuPy arrays, ...) are read by
`from_interface`; stage 1's nested lists by `from_nested_list`. The checks then never look at the
array itself, so one check gives one message in every tier. Only index arrays (labels, argmax)
are read for their values: each tier computes their range its own way (see arrays.indices).
"""

import functools
import numbers
import sys
from typing import NamedTuple

from .errors import fail, fail_type
from .scalars import is_bool

# typestr kind and size -> NumPy's dtype name
_KINDS = {"f": "float", "i": "int", "u": "uint", "c": "complex", "b": "bool"}


class ArrayInfo(NamedTuple):
    """An array's metadata (a named tuple: the checks build one per argument on every call).

    `dtype` is NumPy's name ("float32", "int64", "bool"), with " (big-endian)" added when the
    bytes are not in the machine's order. `kind` is NumPy's kind letter: "f" float, "i"/"u"
    integer, "b" bool, "c" complex, "O" object and others. A nested list is laid out by Python,
    so it is contiguous, aligned and writeable.
    """

    shape: tuple
    dtype: str
    kind: str
    contiguous: bool = True
    aligned: bool = True
    writeable: bool = True


@functools.cache  # a handful of typestrs, met on every call
def _dtype_name(typestr):
    """'<f4' -> ('float32', 'f', 4); '>f4' -> ('float32 (big-endian)', 'f', 4); '|O8' ->
    ('object', 'O', 8): the dtype's name, kind and item size."""
    order, kind, size = typestr[0], typestr[1], int(typestr[2:] or 0)
    if kind == "b":
        name = "bool"
    elif kind in _KINDS:
        name = f"{_KINDS[kind]}{8 * size}"
    else:
        name = {"O": "object", "U": "str", "S": "bytes", "V": "void"}.get(kind, typestr)
    native = "<" if sys.byteorder == "little" else ">"
    if order not in (native, "|", "="):
        name += " (big-endian)" if order == ">" else " (little-endian)"
    return name, kind, max(size, 1)


def _c_contiguous(shape, strides, itemsize):
    """Whether `strides` (in bytes; None means C order) lay `shape` out in C order."""
    if strides is None:
        return True
    expected = itemsize
    for size, stride in zip(reversed(shape), reversed(strides), strict=True):
        if size > 1 and stride != expected:
            return False
        expected *= size
    return True


def interface_of(x):
    """The array interface dict of `x` (CUDA's first), or None when `x` has none."""
    for attribute in ("__cuda_array_interface__", "__array_interface__"):
        interface = getattr(x, attribute, None)
        if isinstance(interface, dict):
            return interface
    return None


def from_interface(interface):
    """The ArrayInfo of an array described by an (array or CUDA array) interface dict."""
    shape = tuple(interface["shape"])
    dtype, kind, itemsize = _dtype_name(interface["typestr"])
    pointer, read_only = interface.get("data") or (0, False)
    return ArrayInfo(
        shape=shape,
        dtype=dtype,
        kind=kind,
        contiguous=_c_contiguous(shape, interface.get("strides"), itemsize),
        aligned=(pointer or 0) % itemsize == 0,
        writeable=not read_only,
    )


def _element_kind(value):
    """A Python value's dtype kind in a nested list: "b" bool, "i" int, "f" float, or None."""
    if is_bool(value):
        return "b"
    if isinstance(value, numbers.Integral):
        return "i"
    if isinstance(value, numbers.Real):
        return "f"
    return None


def from_nested_list(op, name, x):
    """The ArrayInfo of stage 1's nested list `x`, whose dtype is what `numpy.array(x)` would
    give: int64 when every element is an int, float64 when any is a float, bool when all are.

    A ragged list is a ValueError, an element that is not a number (or bools mixed with numbers)
    a TypeError, both naming the first bad element. A zero-size dimension ends the walk: the
    caller refuses it (axes after it are unknown, as `[]` does not say what it would hold).
    """
    shape = []
    node = x
    while isinstance(node, list):  # the first element at each depth gives the expected length
        shape.append(len(node))
        if not node:
            return ArrayInfo(shape=tuple(shape), dtype="float64", kind="f")
        node = node[0]
    kinds = set()
    _walk(op, name, x, tuple(shape), 0, name, kinds)
    if "b" in kinds and len(kinds) > 1:
        fail_type(op, f"{name} must hold numbers, got bools mixed with numbers")
    kind = "b" if kinds == {"b"} else "f" if "f" in kinds else "i"
    return ArrayInfo(shape=tuple(shape), dtype={"b": "bool", "f": "float64", "i": "int64"}[kind],
                     kind=kind)  # fmt: skip


def _walk(op, name, node, shape, depth, path, kinds):
    """Check that `node`, found at `path`, matches `shape` all the way down; collect the kinds
    of its elements into `kinds`."""
    if len(node) != shape[depth]:
        fail(
            op,
            f"{name} must be a rectangular nested list, but {path} has {len(node)} elements "
            f"instead of {shape[depth]}",
        )
    last = depth == len(shape) - 1
    for index, child in enumerate(node):
        where = f"{path}[{index}]"
        if not last:
            if not isinstance(child, list):
                fail(op, f"{name} must be a rectangular nested list, but {where} is a "
                         f"{type(child).__name__}, not a list")  # fmt: skip
            _walk(op, name, child, shape, depth + 1, where, kinds)
            continue
        kind = _element_kind(child)
        if kind is None:
            fail_type(op, f"{name} must hold numbers, but {where} is {type(child).__name__}")
        kinds.add(kind)


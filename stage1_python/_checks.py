"""The argument checks of this tier: argcheck's (one vocabulary, one message format for every
tier), over nested lists. Given to learners: the checks sit outside the solution regions.

A tensor here is a nested Python list: a `[N, C]` tensor is a list of N lists of C floats; its
dtype is what `numpy.array` would make of it (float64 for floats, int64 for ints).
`checks.<op>(...)` checks an op's arguments and returns them (lists as they are, scalars as
Python ints, floats and bools).
"""

import argcheck


def _flat(x):
    """The elements of a nested list, in row-major order."""
    if not isinstance(x, list):
        yield x
        return
    for item in x:
        yield from _flat(item)


class NestedLists:
    """argcheck's adapter for this tier: nested lists of floats, of ints for indices."""

    native = "nested lists"
    float_dtype = "float64"
    int8_dtype = "int64"  # int8 codes are Python ints: their range is checked value by value

    @staticmethod
    def describe(op, name, x):
        return argcheck.from_nested_list(op, name, x) if isinstance(x, list) else None

    readable = copy_indices = index_array = staticmethod(lambda x: x)

    @staticmethod
    def index_range(x):
        values = [int(value) for value in _flat(x)]
        return min(values), max(values)


checks = argcheck.bind(NestedLists())


def tensor_shape(x):
    """The shape of a tensor the checks accepted (the lengths of its first lists): (2, 3) for a
    [2, 3] tensor."""
    sizes = []
    while isinstance(x, list):
        sizes.append(len(x))
        x = x[0]
    return tuple(sizes)

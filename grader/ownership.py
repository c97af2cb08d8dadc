"""Results a caller may keep: each in memory of its own, and C-contiguous.

A result that shares memory with an input (a view such as `a.T`, or the input itself) changes when
the caller later writes into that input; one that shares memory with an earlier result (a buffer
kept at module level and returned on every call) changes when the op runs again. Neither shows in
the values of a single call, so the grader looks at where the native values live:

- NumPy arrays (stages 2 and 3): the byte range `np.byte_bounds` gives, in host memory;
- device arrays (stage 4): the range behind `__cuda_array_interface__`'s data pointer;
- nested lists (stage 1): every list object, by identity (Python floats cannot be changed, so
  sharing one is harmless, but a shared row list is shared data).

Two values overlap when they hold a range of the same kind in common.
"""

import numpy as np

from .crossing import ContractError


def regions(value):
    """The memory `value` occupies: a list of (kind, start, end) ranges, end exclusive."""
    if isinstance(value, np.ndarray):
        if value.size == 0:
            return []
        low, high = np.lib.array_utils.byte_bounds(value)
        return [("host", low, high)]
    interface = getattr(value, "__cuda_array_interface__", None)
    if interface is not None:
        start = interface["data"][0]
        return [("device", start, start + _span(interface))] if start else []
    if isinstance(value, list):
        found = [("list", id(value), id(value) + 1)]
        for item in value:
            found += regions(item)
        return found
    if isinstance(value, tuple):
        return [region for item in value for region in regions(item)]
    return []  # numbers and strings: nothing a caller could change


def _span(interface):
    """Bytes from the first element to one past the last, for a device array's interface."""
    shape, itemsize = interface["shape"], np.dtype(interface["typestr"]).itemsize
    if not all(shape):
        return 0
    strides = interface.get("strides") or _c_strides(shape, itemsize)
    return sum((n - 1) * abs(s) for n, s in zip(shape, strides, strict=True)) + itemsize


def _c_strides(shape, itemsize):
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def overlaps(first, second):
    """True when two lists of regions (see `regions`) share memory.

    Lists are matched by identity through a set (a stage 1 tensor holds thousands of them);
    array ranges, a few per value, pair by pair.
    """
    lists = {start for kind, start, _ in first if kind == "list"}
    if any(kind == "list" and start in lists for kind, start, _ in second):
        return True
    return any(
        kind == other_kind and start < other_end and other_start < end
        for kind, start, end in first
        if kind != "list"
        for other_kind, other_start, other_end in second
    )


def layout_problem(value):
    """Why a native result is not C-contiguous, or None (lists have no layout)."""
    if isinstance(value, np.ndarray):
        if not value.flags.c_contiguous:
            return f"is not C-contiguous (strides {value.strides} for shape {value.shape})"
        return None
    interface = getattr(value, "__cuda_array_interface__", None)
    if interface is not None and interface.get("strides") is not None:
        itemsize = np.dtype(interface["typestr"]).itemsize
        if tuple(interface["strides"]) != _c_strides(interface["shape"], itemsize):
            return f"is not C-contiguous (strides {tuple(interface['strides'])})"
    return None


def native_leaves(value, structure):
    """{output name: native value} of a result already checked against `structure`
    (tiers.to_numpy_tree): 'saved.mean' for the parts of a tuple output."""
    if not structure:
        return {}
    if len(structure) == 1 and isinstance(structure[0], str):
        return {structure[0]: value}
    leaves = {}
    for item, entry in zip(value, structure, strict=True):
        if isinstance(entry, str):
            leaves[entry] = item
        else:
            name, subnames = entry
            leaves.update({f"{name}.{k}": v for k, v in native_leaves(item, subnames).items()})
    return leaves


class Ownership:
    """What one check's graded results must not share: its inputs, and every earlier result.

    The check keeps the earlier results alive (`results`), so their memory cannot be freed and
    legitimately reused by a later call.
    """

    def __init__(self):
        self.results = []  # (name, native value, regions) of this check's earlier results

    def check(self, leaves, inputs):
        """Raise ContractError naming every way `leaves` (this call's results) break the rules.

        `inputs` is {argument name: native value} of the same call.
        """
        problems = []
        current = [(name, value, regions(value)) for name, value in leaves.items()]
        for position, (name, value, where) in enumerate(current):
            layout = layout_problem(value)
            if layout:
                problems.append(f"{name} {layout}: results are C-contiguous arrays")
            for input_name, native in inputs.items():
                if overlaps(where, regions(native)):
                    problems.append(
                        f"{name} shares memory with the input {input_name} (a view or the input "
                        "itself: writing into one changes the other; return a new array)"
                    )
            for other, _, other_where in current[:position]:
                if overlaps(where, other_where):
                    problems.append(f"{name} shares memory with the output {other}")
            for earlier, _, earlier_where in self.results:
                if overlaps(where, earlier_where):
                    problems.append(
                        f"{name} shares memory with {earlier} returned by an earlier call (a "
                        "buffer reused across calls: the earlier result changes when the op "
                        "runs again; allocate each result)"
                    )
                    break
        self.results += current
        if problems:
            raise ContractError("; ".join(problems))

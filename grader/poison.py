"""Pre-filling outputs with NaN, for ops that allocate their own results.

The contract's ops return fresh arrays, so the grader cannot hand them a NaN-filled output
buffer. Instead, while a graded op runs, the tier's allocation hook `empty(shape, dtype)`
(CONTRACT.md, "The tier interface") returns outputs filled with NaN (integer ones with their most
negative value), made by the tier's own `from_numpy`: nested lists on stage 1, NumPy arrays on
stages 2-3, device memory on a GPU. An element the op forgets to write then reads as NaN and fails
the comparison, instead of holding whatever the memory held before, which may even be the right
answer left over from an earlier call.

Code that bypasses the hook and calls NumPy itself (a learner's `np.empty_like(x)` in stage 2) is
covered as well: `numpy.empty` and `numpy.empty_like` are poisoned the same way.

A NaN in a result may also have been computed (an overflow). To tell the two apart, the grader
calls the op once more with allocations filled with a marker value instead (`marker=True`): an
element that is NaN after the first call and the marker after the second was never written.
"""

import sys
from contextlib import contextmanager

import numpy as np

MARKER = 1e38  # a float32-representable value no op of the contract computes from its inputs


def _fill(array, marker):
    if array.dtype.kind == "f":
        array.fill(MARKER if marker else np.nan)
    elif array.dtype.kind in "iu":
        limits = np.iinfo(array.dtype)
        array.fill(limits.max if marker else limits.min)
    return array


def holds_poison(array):
    """Elements of an output that still hold the first call's fill: NaN, or an integer's minimum."""
    if array.dtype.kind in "iu":
        return array == np.iinfo(array.dtype).min
    return np.isnan(array)


def holds_marker(array):
    """Elements of an output that still hold the marker of a `marker=True` call."""
    if array.dtype.kind in "iu":
        return array == np.iinfo(array.dtype).max
    return array == array.dtype.type(MARKER)


@contextmanager
def poisoned_allocations(tier, enabled=True, marker=False):
    """Within the block, `tier`'s allocation hook and NumPy's empty allocations are poisoned (see
    above); with `marker`, filled with the marker instead of NaN."""
    if not enabled:
        yield
        return
    # The ops look the hook up in its own module at call time (`_memory.empty(...)`): replace it
    # there, and on the tier module that re-exports it.
    real_hook = tier.empty
    owners = [tier, sys.modules[real_hook.__module__]]
    real_empty, real_empty_like = np.empty, np.empty_like

    def poisoned_hook(shape, dtype=np.float32):
        return tier.from_numpy(_fill(real_empty(shape, dtype), marker))

    def empty(*args, **kwargs):
        return _fill(real_empty(*args, **kwargs), marker)

    def empty_like(*args, **kwargs):
        return _fill(real_empty_like(*args, **kwargs), marker)

    for owner in owners:
        owner.empty = poisoned_hook
    np.empty, np.empty_like = empty, empty_like
    try:
        yield
    finally:
        np.empty, np.empty_like = real_empty, real_empty_like
        for owner in owners:
            owner.empty = real_hook

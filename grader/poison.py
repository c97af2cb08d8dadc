"""Pre-filling outputs with NaN, for ops that allocate their own results.

The contract's ops return fresh arrays, so the grader cannot hand them a NaN-filled output
buffer. Instead, while a graded op runs, `numpy.empty` and `numpy.empty_like` return arrays filled
with NaN (integer arrays with their most negative value): an element the op forgets to write then
reads as NaN and fails the comparison, instead of holding whatever the memory held before, which
may even be the right answer left over from an earlier call. Tiers that allocate through
`np.empty` (NumPy code, the C tier's wrappers) are covered; stage 1 builds lists and has nothing
to leave unwritten.

A NaN in a result may also have been computed (an overflow). To tell the two apart, the grader
calls the op once more with allocations filled with a marker value instead (`marker=True`): an
element that is NaN after the first call and the marker after the second was never written.
"""

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
def poisoned_allocations(enabled=True, marker=False):
    """Within the block, np.empty and np.empty_like return poisoned arrays (see above); with
    `marker`, filled with the marker instead of NaN."""
    if not enabled:
        yield
        return
    real_empty, real_empty_like = np.empty, np.empty_like

    def empty(*args, **kwargs):
        return _fill(real_empty(*args, **kwargs), marker)

    def empty_like(*args, **kwargs):
        return _fill(real_empty_like(*args, **kwargs), marker)

    np.empty, np.empty_like = empty, empty_like
    try:
        yield
    finally:
        np.empty, np.empty_like = real_empty, real_empty_like

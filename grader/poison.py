"""Pre-filling outputs with NaN, for ops that allocate their own results.

The contract's ops return fresh arrays, so the grader cannot hand them a NaN-filled output
buffer. Instead, while a graded op runs, `numpy.empty` and `numpy.empty_like` return arrays filled
with NaN (integer arrays with their most negative value): an element the op forgets to write then
reads as NaN and fails the comparison, instead of holding whatever the memory held before, which
may even be the right answer left over from an earlier call. Tiers that allocate through
`np.empty` (NumPy code, the C tier's wrappers) are covered; stage 1 builds lists and has nothing
to leave unwritten.
"""

from contextlib import contextmanager

import numpy as np


def _fill(array):
    if array.dtype.kind == "f":
        array.fill(np.nan)
    elif array.dtype.kind in "iu":
        array.fill(np.iinfo(array.dtype).min)
    return array


@contextmanager
def poisoned_allocations(enabled=True):
    """Within the block, np.empty and np.empty_like return poisoned arrays (see above)."""
    if not enabled:
        yield
        return
    real_empty, real_empty_like = np.empty, np.empty_like

    def empty(*args, **kwargs):
        return _fill(real_empty(*args, **kwargs))

    def empty_like(*args, **kwargs):
        return _fill(real_empty_like(*args, **kwargs))

    np.empty, np.empty_like = empty, empty_like
    try:
        yield
    finally:
        np.empty, np.empty_like = real_empty, real_empty_like

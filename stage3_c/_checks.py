"""The argument checks made before any call into C: argcheck's (one vocabulary, one message format
for every tier), over NumPy arrays. Given to learners: they sit outside the solution regions.

C trusts its arguments: a wrong size or a bad index makes it read or write memory it does not own.
So `checks.<op>(...)` checks dtype, rank, shapes, matching dimensions, scalar ranges and sizes
(argcheck.MAX_ELEMENTS, argcheck.MAX_INT keep every size C computes inside int64) and returns the
arguments as C reads them: arrays C only reads are copied when they are not C-contiguous and
aligned (a transposed view, a negative stride); arrays it updates in place must already be
float32, C-contiguous, aligned and writeable; index arrays (labels, argmax) are always copied
before they are validated, since cffi releases the GIL during the C call and another thread could
change the caller's array between the check and the C code's read.
"""

import numpy as np

import argcheck

from . import _memory


class CArrays:
    """argcheck's adapter for this tier: NumPy arrays laid out as C reads them."""

    native = "NumPy arrays"
    float_dtype = "float32"

    @staticmethod
    def describe(op, name, x):
        return argcheck.from_interface(x.__array_interface__) if isinstance(x, np.ndarray) else None

    @staticmethod
    def readable(x):
        return np.require(x, requirements=["C_CONTIGUOUS", "ALIGNED"])

    @staticmethod
    def copy_indices(x):
        return np.array(x, order="C", copy=True)  # private: no other thread holds it

    @staticmethod
    def index_range(x):
        return int(x.min()), int(x.max())

    @staticmethod
    def index_array(x):
        return x.astype(np.int64, copy=False)  # in range, so int64 holds every value


checks = argcheck.bind(CArrays())


def new_output(op, shape, dtype=np.float32):
    """A new output array (its size was checked with the arguments) from the tier's allocation
    hook (_memory.py), which pre-fills it."""
    return _memory.empty(shape, dtype)

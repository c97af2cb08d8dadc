"""The argument checks of this tier: argcheck's (one vocabulary, one message format for every
tier), over NumPy arrays. Given to learners: the checks sit outside the solution regions.

`checks.<op>(...)` checks an op's arguments and returns them converted: arrays C-contiguous and
aligned (a copy only when they are not: NumPy may sum an unaligned array's products in another
order, so an unaligned copy of an input would change the result's last bits), scalars as Python
ints, floats and bools.
"""

import numpy as np

import argcheck


class NumpyArrays:
    """argcheck's adapter for this tier: float32 NumPy arrays, integer arrays as indices."""

    native = "NumPy arrays"
    float_dtype = "float32"

    @staticmethod
    def describe(op, name, x):
        return argcheck.from_interface(x.__array_interface__) if isinstance(x, np.ndarray) else None

    @staticmethod
    def readable(x):
        return np.require(x, requirements=["C_CONTIGUOUS", "ALIGNED"])

    copy_indices = staticmethod(np.ascontiguousarray)  # NumPy reads them under the GIL
    index_array = staticmethod(lambda x: x)

    @staticmethod
    def index_range(x):
        return int(x.min()), int(x.max())


checks = argcheck.bind(NumpyArrays())

"""The argument checks of the nvcc variant: the runtime's (runtime/checks.py, as in the numba
variant: the same device arrays, the same messages), except where the range of labels and argmax
indices is found.

That range is the one value a check reads back from the GPU. The runtime finds it with two numba
launches, two scratch arrays and a copy, a large share of a training step's host time when each
step checks six index arrays. Here an int64 array (what `from_numpy` makes
and the kernels read) takes one call of this library (csrc/checks.cu). The call is made directly,
not through `_library.call`, so that a recorded step does not record it: a check runs once, when
its op is first called, not at every launch of the recording.
"""

import numpy as np

import argcheck

from ..runtime.checks import DeviceArrays, integers, kernel_name  # noqa: F401 (re-exported)
from ._library import check_status, ffi, library, pointer


class LibraryArrays(DeviceArrays):
    """The runtime's adapter, with index_range from this library for int64 arrays."""

    @staticmethod
    def index_range(x):
        """(lowest, highest) value of the device array x, as Python ints."""
        if x.dtype != np.int64:  # another library's int32 labels, say: numba's kernel reads any
            return DeviceArrays.index_range(x)
        extremes = ffi.new("int64_t[2]")
        values = ffi.cast("int64_t *", pointer(x))
        status = library().s2c_cuda_index_range(values, x.size, extremes)
        check_status("s2c_cuda_index_range", status)
        return int(extremes[0]), int(extremes[1])


TIER = LibraryArrays()
checks = argcheck.bind(TIER)

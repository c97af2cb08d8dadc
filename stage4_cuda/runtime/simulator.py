"""A fix for numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1), installed by device.py when it runs.

numba-cuda 0.30's simulator makes a block's shared array when its first thread reaches the
`cuda.shared.array` line, without a lock: two threads arriving together can each make one, and
then they do not share it (a tiled matmul read tiles nobody wrote, now and then).
"""

import sys
import threading
import traceback

import numpy as np


def lock_shared_arrays():
    """Make the simulator's shared arrays shared by every thread of a block, always: the same
    allocation (keyed by the calling file and line, as there) under a lock, which also accepts an
    `alignment` (the simulator's own refuses one)."""
    from numba.core import types
    from numba.cuda.simulator import kernelapi
    from numba.np import numpy_support

    lock = threading.Lock()

    def array(self, shape, dtype, alignment=None):
        # `alignment` (which numba's simulator refuses) only lets the GPU's compiler emit wide
        # loads; NumPy's arrays here need none.
        if shape == 0:  # dynamic shared memory: numba's own code
            return unlocked(self, shape, dtype)
        if isinstance(dtype, types.Type):  # numba's float32, as opposed to NumPy's
            dtype = numpy_support.as_dtype(dtype)
        caller = traceback.extract_stack(sys._getframe())[-2][0:2]
        with lock:
            if caller not in self._allocations:
                self._allocations[caller] = np.empty(shape, dtype)
            return self._allocations[caller]

    unlocked = kernelapi.FakeCUDAShared.array
    kernelapi.FakeCUDAShared.array = array

"""Planted cheat: matmul in half precision (float16 operands, as tensor cores would take them):
fast, and wrong by about 1e-3, far beyond float32's rounding."""

import numpy as np
from numba import cuda

from tests.planted_gpu.reference import *  # noqa: F403


def matmul(a, b, kernel="best"):
    half = a.copy_to_host().astype(np.float16) @ b.copy_to_host().astype(np.float16)
    return cuda.to_device(half.astype(np.float32))

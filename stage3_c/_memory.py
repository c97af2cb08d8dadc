"""The tier's allocation hook: `empty(shape, dtype)`, where every op gets its outputs.

The C kernels write into arrays the Python wrapper allocates (`_checks.new_output`), always here,
through `_memory.empty(...)` (looked up at call time), so that the grader can swap the hook and
pre-fill every output with NaN: an element the C code forgets then fails (CONTRACT.md, "The tier
interface"). Outside the grader the outputs are pre-filled too, so a forgotten element is visible
in any test.
"""

import numpy as np


def empty(shape, dtype=np.float32):
    """A new C-contiguous array of `shape` and `dtype` for an output: NaN, or -1 for integers."""
    return np.full(shape, -1 if np.dtype(dtype).kind in "iu" else np.nan, dtype=dtype)

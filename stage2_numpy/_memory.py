"""The tier's allocation hook: `empty(shape, dtype)`, where an op gets an output it fills in.

Given to learners, like the checks. An op that writes its output piece by piece allocates it here,
calling `_memory.empty(...)` (looked up at call time), so that the grader can swap the hook and
pre-fill every output with NaN: an element the op forgets then fails (CONTRACT.md, "The tier
interface"). An output NumPy computes whole (`a @ b`, `np.maximum(x, 0)`) needs no hook.
"""

import numpy as np


def empty(shape, dtype=np.float32):
    """A new C-contiguous array of `shape` and `dtype` for an output; its contents are undefined."""
    return np.empty(shape, dtype)

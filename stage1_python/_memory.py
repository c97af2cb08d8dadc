"""The tier's allocation hook: `empty(shape, dtype)`, where an op gets an output it fills in.

Given to learners, like the checks. An op that writes its output element by element allocates it
here, calling `_memory.empty(...)` (looked up at call time), so that the grader can swap the hook
and pre-fill every output with NaN: an element the op forgets then fails (CONTRACT.md, "The tier
interface"). An output built whole (a list comprehension) needs no hook.
"""

import numpy as np

from ._tensor import full


def empty(shape, dtype=np.float32):
    """A new nested list of `shape` for an output: 0.0 everywhere, or 0 for an integer dtype.

    Python lists have no uninitialized memory, so the elements start at zero. `dtype` is what
    NumPy takes for one (float, int, np.float32, np.int64), as in every tier; only its kind
    matters here: Python floats are float64, Python ints unbounded.
    """
    return full(tuple(shape), 0 if np.dtype(dtype).kind in "iu" else 0.0)

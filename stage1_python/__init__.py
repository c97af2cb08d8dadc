"""Stage 1: every op of the contract (contract/CONTRACT.md) in pure Python, weeks 1-6.

Tensors are nested lists of Python floats: a [N, C, H, W] tensor is a list of N lists of C lists
of H lists of W floats; labels and argmax are nested lists of Python ints. Python floats are
float64, so at small sizes this tier is the precise oracle the later tiers are checked against.
"""

import numpy as np

import argcheck
from contract import export_ops

from ._memory import empty  # noqa: F401 (the interface, which export_ops exports)

NAME = "python"


def from_numpy(a):
    """A NumPy array as nested lists: floats become Python floats (float64), integers Python ints.

    A 0-d array becomes a Python number.
    """
    array = np.asarray(a)
    if array.dtype.kind not in "fiu":
        raise ValueError(f"from_numpy: a must be a float or integer array, got dtype {array.dtype}")
    if array.dtype.kind == "f":
        array = array.astype(np.float64)  # tolist() gives Python floats, exact from float32 too
    return array.tolist()


def to_numpy(x):
    """Nested lists (or a number) as a NumPy array: float64, or int64 when all are ints."""
    if isinstance(x, list):  # rectangular, numbers only: a clear error otherwise
        argcheck.from_nested_list("to_numpy", "x", x)
    array = np.array(x)
    return array.astype(np.int64 if array.dtype.kind in "iu" else np.float64)


def synchronize():
    """Nothing to wait for: Python runs every op to completion before returning."""


def available():
    """(True, ""): pure Python needs nothing else."""
    return True, ""


# The interface and every op of the contract, each from the module that holds it (contract/ops.py).
__all__ = export_ops(globals())

"""Stage 2: every op of the contract (contract/CONTRACT.md), vectorized with NumPy (weeks 7 and 8).

Native arrays are C-contiguous float32 NumPy arrays (int64 for labels and argmax). No op loops
over elements in Python: elementwise work goes to ufuncs, products to BLAS through `@`, and
convolution becomes one matrix product through im2col. Every op returns fresh arrays, except the
optimizers and batchnorm's running statistics, which update the arrays given in place.
"""

import numpy as np

from contract import export_ops

from ._memory import empty  # noqa: F401 (the interface, which export_ops exports)

NAME = "numpy"


def from_numpy(a):
    """A NumPy array as this tier's native array (a fresh C-contiguous copy).

    Floating arrays become float32, int8 ones (quantized codes) stay int8, other integers (labels,
    argmax) int64; a 0-d array becomes a Python scalar.
    """
    a = np.asarray(a)
    if a.ndim == 0:
        return a.item()
    if a.dtype.kind == "f":
        return np.array(a, dtype=np.float32, order="C")
    if a.dtype == np.int8:  # quantized codes keep their width
        return np.array(a, dtype=np.int8, order="C")
    if a.dtype.kind in "iu":
        return np.array(a, dtype=np.int64, order="C")
    raise ValueError(f"from_numpy: a must hold floats or integers, got {a.dtype}")


def to_numpy(x):
    """A native array as a NumPy array (a copy: float32, or int64 for integers)."""
    return np.array(x)


def synchronize():
    """Nothing to wait for: NumPy ops finish before they return."""


def available():
    """(True, ""): NumPy is a dependency of the project, so this tier always runs."""
    return True, ""


# The interface and every op of the contract, each from the module that holds it (contract/ops.py).
__all__ = export_ops(globals())

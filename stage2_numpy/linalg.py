"""Linear algebra on float32 arrays (week 7): matmul, transpose, add, mul, scale, sum_rows.

Each op is one NumPy call: the loops of stage 1 now run in compiled code (BLAS for matmul).
"""

from ._checks import check_dim, check_float, check_real, fail


def matmul(a, b):
    """The matrix product: a [N, K] @ b [K, M] -> [N, M]."""
    a = check_float("matmul", "a", a, ("N", "K"))
    b = check_float("matmul", "b", b, ("K", "M"))
    check_dim("matmul", "b", b, ("K", "M"), 0, a.shape[1], "a's columns")
    # BEGIN SOLUTION week 7, task matmul
    return a @ b  # BLAS sgemm: blocked for the caches, vectorized, multithreaded
    # END SOLUTION


def transpose(a):
    """a [N, M] -> [M, N], element [j, i] = a[i, j], as a fresh C-contiguous array."""
    a = check_float("transpose", "a", a, ("N", "M"))
    # BEGIN SOLUTION week 7, task transpose
    return a.T.copy()  # a.T alone is a view with swapped strides: copy() lays it out row-major
    # END SOLUTION


def _check_operands(op, a, b):
    """a (any shape) and b: a's shape, or [a's last dim] (one row added to every row)."""
    a = check_float(op, "a", a)
    b = check_float(op, "b", b)
    if b.shape != a.shape and b.shape != a.shape[-1:]:
        fail(op, f"b must have a's shape {a.shape} or shape [{a.shape[-1]}] (a's last "
                 f"dimension, added to every row), got {b.shape}")
    return a, b


def add(a, b):
    """a + b: a any shape; b the same shape, or [a's last dim] added to every row."""
    a, b = _check_operands("add", a, b)
    # BEGIN SOLUTION week 7, task add
    return a + b  # broadcasting lines b up with a's last dimension
    # END SOLUTION


def mul(a, b):
    """a * b elementwise: a any shape; b the same shape, or [a's last dim] for every row."""
    a, b = _check_operands("mul", a, b)
    # BEGIN SOLUTION week 7, task mul
    return a * b
    # END SOLUTION


def scale(a, s):
    """s * a: a any shape, s a float."""
    a = check_float("scale", "a", a)
    s = check_real("scale", "s", s)
    # BEGIN SOLUTION week 7, task scale
    return a * s  # a Python float does not promote: the result stays float32
    # END SOLUTION


def sum_rows(x):
    """Column sums, i.e. the sum over the rows: x [N, M] -> [M] (bias gradients)."""
    x = check_float("sum_rows", "x", x, ("N", "M"))
    # BEGIN SOLUTION week 7, task sum_rows
    return x.sum(axis=0)
    # END SOLUTION

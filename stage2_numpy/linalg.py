"""Linear algebra on float32 arrays (week 7): matmul, transpose, add, mul, scale, sum_rows; and
swap_middle_axes (week 21), which a transformer splits its heads with.

Each op is one NumPy call: the loops of stage 1 now run in compiled code (BLAS for matmul).
"""

from ._checks import checks


def matmul(a, b):
    """The matrix product: a [N, K] @ b [K, M] -> [N, M]."""
    a, b = checks.matmul(a, b)
    # BEGIN SOLUTION week 7, task matmul
    return a @ b  # BLAS sgemm: blocked for the caches, vectorized, multithreaded
    # END SOLUTION


def transpose(a):
    """a [N, M] -> [M, N], element [j, i] = a[i, j], as a fresh C-contiguous array."""
    a = checks.transpose(a)
    # BEGIN SOLUTION week 7, task transpose
    return a.T.copy()  # a.T alone is a view with swapped strides: copy() lays it out row-major
    # END SOLUTION


def swap_middle_axes(x):
    """x [A, B, C, D] -> [A, C, B, D], element [a, c, b, d] = x[a, b, c, d], C-contiguous."""
    x = checks.swap_middle_axes(x)
    # BEGIN SOLUTION week 21, task swap_middle_axes
    return x.transpose(0, 2, 1, 3).copy()  # a view with swapped strides, laid out row-major anew
    # END SOLUTION


def add(a, b):
    """a + b: a any shape; b the same shape, or [a's last dim] added to every row."""
    a, b = checks.add(a, b)
    # BEGIN SOLUTION week 7, task add
    return a + b  # broadcasting lines b up with a's last dimension
    # END SOLUTION


def mul(a, b):
    """a * b elementwise: a any shape; b the same shape, or [a's last dim] for every row."""
    a, b = checks.mul(a, b)
    # BEGIN SOLUTION week 7, task mul
    return a * b
    # END SOLUTION


def scale(a, s):
    """s * a: a any shape, s a float."""
    a, s = checks.scale(a, s)
    # BEGIN SOLUTION week 7, task scale
    return a * s  # a Python float does not promote: the result stays float32
    # END SOLUTION


def sum_rows(x):
    """Column sums, i.e. the sum over the rows: x [N, M] -> [M] (bias gradients)."""
    x = checks.sum_rows(x)
    # BEGIN SOLUTION week 7, task sum_rows
    return x.sum(axis=0)
    # END SOLUTION

"""Linear algebra on nested lists (week 1): matmul, transpose, add, mul, scale, sum_rows; and
swap_middle_axes (week 21), which a transformer splits its heads with."""

import operator

from ._checks import checks, tensor_shape
from ._tensor import map_elements


def matmul(a, b):
    """The matrix product: a [N, K] @ b [K, M] -> [N, M]."""
    a, b = checks.matmul(a, b)
    # BEGIN SOLUTION week 1, task matmul
    # Element [i][j] is row i of a dotted with column j of b. zip(*b) gives b's columns once, so
    # the inner loop walks two sequences side by side instead of indexing b[k][j] down a column.
    b_columns = list(zip(*b, strict=True))
    return [
        [
            sum(a_ik * b_kj for a_ik, b_kj in zip(a_row, b_column, strict=True))
            for b_column in b_columns
        ]
        for a_row in a
    ]
    # END SOLUTION


def transpose(a):
    """a [N, M] -> [M, N], element [j][i] = a[i][j]."""
    a = checks.transpose(a)
    n, m = tensor_shape(a)
    # BEGIN SOLUTION week 1, task transpose
    return [[a[i][j] for i in range(n)] for j in range(m)]
    # END SOLUTION


def swap_middle_axes(x):
    """x [A, B, C, D] -> [A, C, B, D], element [a][c][b][d] = x[a][b][c][d]."""
    x = checks.swap_middle_axes(x)
    # BEGIN SOLUTION week 21, task swap_middle_axes
    return [[[list(x_a[b][c]) for b in range(len(x_a))] for c in range(len(x_a[0]))] for x_a in x]
    # END SOLUTION


def _elementwise(fn, a, b, a_shape, b_shape):
    """fn(a element, b element) over a's shape; a b of shape [a's last dim] serves every row."""
    # BEGIN SOLUTION week 1, task elementwise
    if len(a_shape) == 1:  # a is one row; b is a row of the same length either way
        return [fn(a_j, b_j) for a_j, b_j in zip(a, b, strict=True)]
    if b_shape == a_shape:  # walk down both lists together
        return [
            _elementwise(fn, a_i, b_i, a_shape[1:], b_shape[1:])
            for a_i, b_i in zip(a, b, strict=True)
        ]
    return [_elementwise(fn, a_i, b, a_shape[1:], b_shape) for a_i in a]  # b is one row
    # END SOLUTION


def add(a, b):
    """a + b: a any shape; b the same shape, or [a's last dim] added to every row."""
    a, b = checks.add(a, b)
    a_shape, b_shape = tensor_shape(a), tensor_shape(b)
    # BEGIN SOLUTION week 1, task add
    return _elementwise(operator.add, a, b, a_shape, b_shape)
    # END SOLUTION


def mul(a, b):
    """a * b elementwise: a any shape; b the same shape, or [a's last dim] used for every row."""
    a, b = checks.mul(a, b)
    a_shape, b_shape = tensor_shape(a), tensor_shape(b)
    # BEGIN SOLUTION week 1, task mul
    return _elementwise(operator.mul, a, b, a_shape, b_shape)
    # END SOLUTION


def scale(a, s):
    """s * a: a any shape, s a number."""
    a, s = checks.scale(a, s)
    # BEGIN SOLUTION week 1, task scale
    return map_elements(lambda value: s * value, a)
    # END SOLUTION


def sum_rows(x):
    """Column sums, i.e. the sum over the rows: x [N, M] -> [M] (e.g. a bias gradient)."""
    x = checks.sum_rows(x)
    n, m = tensor_shape(x)
    # BEGIN SOLUTION week 1, task sum_rows
    return [sum(x[i][j] for i in range(n)) for j in range(m)]
    # END SOLUTION

"""Linear algebra (csrc/linalg.cu, csrc/sgemm/; weeks 14 and 16): matmul through the SGEMM ladder,
transpose, the elementwise add, mul and scale (with add's row broadcasting), and column sums."""

from ..runtime import device
from . import _checks
from ._checks import checks
from ._library import SGEMM_RUNGS, call

# The SGEMM ladder of csrc/sgemm/ (README.md there), slowest first: `matmul(a, b, kernel=...)`
# takes a name or its number 1..8.
MATMUL_KERNELS = SGEMM_RUNGS
BEST_MATMUL = "cp_async"  # the fastest on an H100: curriculum/results/sgemm-cuda-h100.json


def matmul(a, b, kernel="best"):
    """a [N, K] @ b [K, M] -> [N, M], by rung `kernel` of the SGEMM ladder (MATMUL_KERNELS)."""
    a, b = checks.matmul(a, b)
    name = _checks.kernel_name("matmul", kernel, MATMUL_KERNELS, BEST_MATMUL)
    (n, k), m = a.shape, b.shape[1]
    c = device.empty((n, m))
    call(f"s2c_sgemm_{name}", a, b, c, n, k, m)
    return c


def transpose(a):
    """a [N, M] -> [M, N]."""
    a = checks.transpose(a)
    out = device.empty(tuple(a.shape)[::-1])
    call("s2c_cuda_transpose", a, out, *a.shape)
    return out


def swap_middle_axes(x):
    """x [A, B, C, D] -> [A, C, B, D]."""
    x = checks.swap_middle_axes(x)
    a, b, c, d = x.shape
    out = device.empty((a, c, b, d))
    call("s2c_cuda_swap_middle_axes", x, out, a, b, c, d)
    return out


def _broadcast(function, a, b):
    """out = f(a, b) on the checked a and b (a's shape, or one row added to every row)."""
    out = device.empty(a.shape)
    call(function, a, b, out, a.size, b.size)
    return out


def add(a, b):
    """a + b: b has a's shape, or is 1-D of length a.shape[-1] (added to every row)."""
    return _broadcast("s2c_cuda_add", *checks.add(a, b))


def mul(a, b):
    """a * b elementwise, with add's broadcasting."""
    return _broadcast("s2c_cuda_mul", *checks.mul(a, b))


def scale(a, s):
    """s * a for a float s; a any shape."""
    a, s = checks.scale(a, s)
    out = device.empty(a.shape)
    call("s2c_cuda_scale", a, out, a.size, s)
    return out


def sum_rows(x):
    """x [N, M] -> [M]: the sum over the rows (column sums), e.g. a bias gradient."""
    x = checks.sum_rows(x)
    out = device.empty((x.shape[1],))
    call("s2c_cuda_sum_rows", x, out, *x.shape)
    return out

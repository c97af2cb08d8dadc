"""Linear algebra (week 11): matmul through the ladder of csrc/matmul.c, and the elementwise ops
and column sums of csrc/linalg.c; swap_middle_axes (week 22), a transformer's head split."""

import argcheck

from ._checks import checks, new_output
from ._native import NOT_IMPLEMENTED, call, check_status, extension, pointer

# The matmul ladder of csrc/matmul.c, slowest first; `matmul(a, b, kernel=...)` takes a name or
# its number 1..5.
MATMUL_KERNELS = ("naive", "loop_order", "blocked", "register", "simd")


def best_kernel():
    """The fastest kernel this build runs on this CPU: simd where it has a SIMD micro-kernel
    (AVX-512, or AVX2 and FMA: see build_info()), else register."""
    return "simd" if extension().lib.s2c_simd_width() else "register"


def _kernel_name(kernel):
    """The ladder rung `kernel` names: "best", a name of MATMUL_KERNELS or its number 1..5."""
    if argcheck.is_int(kernel) and 1 <= kernel <= len(MATMUL_KERNELS):
        return MATMUL_KERNELS[kernel - 1]
    kernel = argcheck.choice("matmul", "kernel", kernel, ("best", *MATMUL_KERNELS, 1, 2, 3, 4, 5))
    return best_kernel() if kernel == "best" else kernel


def matmul(a, b, kernel="best"):
    """a [N, K] @ b [K, M] -> [N, M], by kernel `kernel` of the ladder (MATMUL_KERNELS).

    "best" is the fastest rung this CPU runs that is written: a learner climbing the ladder has a
    working matmul from rung 1 on (the stubs above it return S2C_NOT_IMPLEMENTED)."""
    op = "matmul"
    name = _kernel_name(kernel)
    rungs = MATMUL_KERNELS[MATMUL_KERNELS.index(name) :: -1] if kernel == "best" else (name,)
    a, b = checks.matmul(a, b)
    (n, k), m = a.shape, b.shape[1]
    c = new_output(op, (n, m))
    for name in rungs:  # from the requested rung down, while they are stubs
        function = f"s2c_matmul_{name}"
        status = getattr(extension().lib, function)(pointer(a), pointer(b), pointer(c), n, k, m)
        if status != NOT_IMPLEMENTED:
            break
    check_status(function, status)
    return c


def transpose(a):
    """a [N, M] -> [M, N]."""
    a = checks.transpose(a)
    n, m = a.shape
    out = new_output("transpose", (m, n))
    call("s2c_transpose", pointer(a), pointer(out), n, m)
    return out


def swap_middle_axes(x):
    """x [A, B, C, D] -> [A, C, B, D]."""
    x = checks.swap_middle_axes(x)
    a, b, c, d = x.shape
    out = new_output("swap_middle_axes", (a, c, b, d))
    call("s2c_swap_middle_axes", pointer(x), pointer(out), a, b, c, d)
    return out


def _elementwise(op, function, a, b):
    """a op b through C `function`, b of a's shape or one row of it (both already checked)."""
    out = new_output(op, a.shape)
    call(function, pointer(a), pointer(b), pointer(out), a.size, b.size)
    return out


def add(a, b):
    """a + b: b has a's shape, or is 1-D of length a.shape[-1] (added to every row)."""
    return _elementwise("add", "s2c_add", *checks.add(a, b))


def mul(a, b):
    """a * b elementwise, with add's broadcasting."""
    return _elementwise("mul", "s2c_mul", *checks.mul(a, b))


def scale(a, s):
    """s * a for a float s; a any shape."""
    a, s = checks.scale(a, s)
    out = new_output("scale", a.shape)
    call("s2c_scale", pointer(a), s, pointer(out), a.size)
    return out


def sum_rows(x):
    """x [N, M] -> [M]: the sum over the rows (column sums), e.g. a bias gradient."""
    x = checks.sum_rows(x)
    n, m = x.shape
    out = new_output("sum_rows", (m,))
    call("s2c_sum_rows", pointer(x), pointer(out), n, m)
    return out

"""Linear algebra (week 11): matmul through the ladder of csrc/matmul.c, and the elementwise ops
and column sums of csrc/linalg.c."""

from . import _checks as checks
from ._native import NOT_IMPLEMENTED, call, check_status, extension, pointer

# The matmul ladder of csrc/matmul.c, slowest first; `matmul(a, b, kernel=...)` takes a name or
# its number 1..5.
MATMUL_KERNELS = ("naive", "loop_order", "blocked", "register", "simd")


def best_kernel():
    """The fastest kernel this build runs on this CPU: simd where it has a SIMD micro-kernel
    (AVX-512, or AVX2 and FMA: see build_info()), else register."""
    return "simd" if extension().lib.s2c_simd_width() else "register"


def _kernel_name(kernel):
    if kernel == "best":
        return best_kernel()
    if checks.is_int(kernel) and 1 <= kernel <= len(MATMUL_KERNELS):
        return MATMUL_KERNELS[kernel - 1]
    if kernel in MATMUL_KERNELS:
        return kernel
    checks.fail("matmul", f"kernel must be 'best', one of {MATMUL_KERNELS} or 1..5, got {kernel!r}")


def matmul(a, b, kernel="best"):
    """a [N, K] @ b [K, M] -> [N, M], by kernel `kernel` of the ladder (MATMUL_KERNELS).

    "best" is the fastest rung this CPU runs that is written: a learner climbing the ladder has a
    working matmul from rung 1 on (the stubs above it return S2C_NOT_IMPLEMENTED)."""
    op = "matmul"
    name = _kernel_name(kernel)
    rungs = MATMUL_KERNELS[MATMUL_KERNELS.index(name) :: -1] if kernel == "best" else (name,)
    a = checks.readable(op, "a", a, "[N, K]")
    b = checks.readable(op, "b", b, "[K, M]")
    (n, k), m = a.shape, b.shape[1]
    if b.shape[0] != k:
        checks.fail(op, f"b must have shape [K, M] with K = {k} (a's columns), got {b.shape}")
    c = checks.new_output(op, (n, m))
    for name in rungs:  # from the requested rung down, while they are stubs
        function = f"s2c_matmul_{name}"
        status = getattr(extension().lib, function)(pointer(a), pointer(b), pointer(c), n, k, m)
        if status != NOT_IMPLEMENTED:
            break
    check_status(function, status)
    return c


def transpose(a):
    """a [N, M] -> [M, N]."""
    a = checks.readable("transpose", "a", a, "[N, M]")
    n, m = a.shape
    out = checks.new_output("transpose", (m, n))
    call("s2c_transpose", pointer(a), pointer(out), n, m)
    return out


def _broadcast_operand(op, a, b):
    """Check add's and mul's operands: b has a's shape, or is 1-D of a's last dimension."""
    a = checks.readable(op, "a", a)
    b = checks.readable(op, "b", b)
    row = a.ndim >= 1 and b.shape == (a.shape[-1],)
    if b.shape != a.shape and not row:
        last = f" or [{a.shape[-1]}] (a's last dimension)" if a.ndim >= 1 else ""
        checks.fail(
            op,
            f"b must have a's shape {checks.format_shape(a.shape)}{last}, "
            f"got {checks.format_shape(b.shape)}",
        )
    return a, b


def _elementwise(op, function, a, b):
    a, b = _broadcast_operand(op, a, b)
    out = checks.new_output(op, a.shape)
    call(function, pointer(a), pointer(b), pointer(out), a.size, b.size)
    return out


def add(a, b):
    """a + b: b has a's shape, or is 1-D of length a.shape[-1] (added to every row)."""
    return _elementwise("add", "s2c_add", a, b)


def mul(a, b):
    """a * b elementwise, with add's broadcasting."""
    return _elementwise("mul", "s2c_mul", a, b)


def scale(a, s):
    """s * a for a float s; a any shape."""
    a = checks.readable("scale", "a", a)
    s = checks.real("scale", "s", s)
    out = checks.new_output("scale", a.shape)
    call("s2c_scale", pointer(a), s, pointer(out), a.size)
    return out


def sum_rows(x):
    """x [N, M] -> [M]: the sum over the rows (column sums), e.g. a bias gradient."""
    x = checks.readable("sum_rows", "x", x, "[N, M]")
    n, m = x.shape
    out = checks.new_output("sum_rows", (m,))
    call("s2c_sum_rows", pointer(x), pointer(out), n, m)
    return out

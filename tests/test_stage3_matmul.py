"""The matmul ladder of stage3_c/csrc/matmul.c: every kernel, and s2c_gemm with its transposes and
accumulation, against a float64 reference, within the rounding error that float32 arithmetic is
allowed.

The bound is the classic one for a sum of K products computed in float32, in any order, with or
without fused multiply-adds: |computed - exact| <= (K + 2) * 2^-24 * (|a| @ |b| + |c_old|). A wrong
index, a missed tile or a NaN read from c breaks it by orders of magnitude. Sizes are chosen around
the kernels' tile sizes (MR x NR = 6 x 16, 12 x 32 for AVX-512; KC = 256, MC = 144, NC = 4096) and
the 32-row blocks of the blocked kernel, so that every edge path runs. The C extension must be
built (`make build`).
"""

import secrets
import subprocess

import numpy as np
import pytest

import stage3_c as s3
from stage3_c import _native
from stage3_c.bench_matmul import share_of_peak

pytestmark = [
    pytest.mark.week11,
    pytest.mark.skipif(not s3.available()[0], reason=s3.available()[1]),
]

UNIT_ROUNDOFF = 2.0**-24  # float32

# (n, k, m): c[n, m] = a[n, k] @ b[k, m]. Odd sizes, sizes one off the tile sizes, a single row or
# column, a depth of 1, a depth spanning two KC slices, more rows than one MC block.
LADDER_SHAPES = [
    (1, 1, 1),
    (1, 7, 3),
    (7, 1, 3),
    (5, 3, 15),
    (6, 16, 16),
    (7, 17, 17),
    (12, 32, 32),
    (13, 33, 31),
    (33, 65, 17),
    (127, 129, 255),
    (1000, 1, 1000),
    (13, 300, 40),
    (150, 257, 33),
]


@pytest.fixture
def rng():
    """A fresh generator for each test; its seed is printed so that a failure can be replayed."""
    seed = secrets.randbits(32)
    print(f"rng seed {seed}")
    return np.random.default_rng(seed)


@pytest.fixture
def threads():
    """Restore OpenMP's default thread count after a test that changes it."""
    yield s3.set_num_threads
    s3.set_num_threads(0)


def random_matrix(rng, shape):
    return rng.standard_normal(shape).astype(np.float32)


def assert_within_rounding(received, a, b, c_old=None, what="c"):
    """received == a @ b (+ c_old) up to float32 rounding: the (K + 2) u bound of the docstring."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    exact = a64 @ b64
    scale = np.abs(a64) @ np.abs(b64)
    if c_old is not None:
        exact += c_old
        scale += np.abs(c_old.astype(np.float64))
    bound = (a.shape[1] + 2) * UNIT_ROUNDOFF * scale
    assert received.shape == exact.shape, f"{what}: shape {received.shape}, not {exact.shape}"
    assert np.all(np.isfinite(received)), (
        f"{what}: NaN or Inf at {np.argwhere(~np.isfinite(received))[:5]}"
    )
    error = np.abs(received - exact)
    worst = np.unravel_index(np.argmax(error - bound), error.shape)
    assert np.all(error <= bound), (
        f"{what}: element {worst} is {received[worst]}, expected {exact[worst]} "
        f"(error {error[worst]:.3g} > bound {bound[worst]:.3g})"
    )


def gemm(trans_a, trans_b, a, b, c, accumulate):
    """Call s2c_gemm directly: c[m, n] (=|+=) op(a) @ op(b), checking its status."""
    m, n = c.shape
    k = a.shape[0] if trans_a else a.shape[1]
    _native.call(
        "s2c_gemm", trans_a, trans_b, m, n, k,
        _native.pointer(a), _native.pointer(b), _native.pointer(c), accumulate,
    )  # fmt: skip


# ---- the ladder through the package -----------------------------------------------------------


@pytest.mark.parametrize("kernel", s3.MATMUL_KERNELS)
@pytest.mark.parametrize("n, k, m", LADDER_SHAPES)
def test_every_kernel_matches_float64_within_rounding(rng, kernel, n, k, m):
    a, b = random_matrix(rng, (n, k)), random_matrix(rng, (k, m))
    c = s3.matmul(a, b, kernel=kernel)  # the wrapper pre-fills c with NaN
    assert c.dtype == np.float32 and c.flags.c_contiguous
    assert_within_rounding(c, a, b, what=f"matmul kernel {kernel} {n}x{k}x{m}")


@pytest.mark.parametrize("kernel", ["blocked", "register", "simd"])
def test_threads_split_the_work_without_changing_a_bit(rng, threads, kernel):
    # 301 rows: more than two MC blocks and not a multiple of MR or of the blocked kernel's rows
    a, b = random_matrix(rng, (301, 270)), random_matrix(rng, (270, 45))
    threads(1)
    single = s3.matmul(a, b, kernel=kernel)
    threads(2)
    double = s3.matmul(a, b, kernel=kernel)
    np.testing.assert_array_equal(double, single)
    assert_within_rounding(double, a, b, what=f"{kernel} on 2 threads")


def test_the_simd_width_is_the_widest_that_the_build_and_the_cpu_allow():
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            flags = (line.split(":")[1] for line in cpuinfo if line.startswith("flags"))
            cpu = set(next(flags, "").split())
    except OSError:
        pytest.skip("no /proc/cpuinfo to compare with")
    build = s3.build_info()["flags"]
    enabled = subprocess.run(
        ["gcc", *build.split(), "-dM", "-E", "-"], input="", capture_output=True, text=True
    ).stdout
    usable = {
        16: "__AVX512F__" in enabled and "__FMA__" in enabled and "avx512f" in cpu,
        8: "__AVX2__" in enabled and "__FMA__" in enabled and {"avx2", "fma"} <= cpu,
    }
    expected = max((width for width, ok in usable.items() if ok), default=0)
    assert _native.lib.s2c_simd_width() == expected, build
    assert s3.best_kernel() == ("simd" if expected else "register")


def test_no_share_of_the_measured_peak_above_100_percent_is_printed():
    assert share_of_peak(90.0, 100.0) == "90%"
    assert share_of_peak(100.0, 100.0) == "100%"
    assert "%" not in share_of_peak(100.5, 100.0)  # the peak was mismeasured: said, not printed
    assert share_of_peak(50.0, None) == "?"


# ---- s2c_gemm: transposes and accumulation ------------------------------------------------------


@pytest.mark.parametrize("trans_a", [0, 1])
@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("accumulate", [0, 1])
@pytest.mark.parametrize(
    "m, n, k", [(1, 1, 1), (1, 7, 3), (33, 65, 17), (127, 129, 255), (1000, 1, 1000), (7, 4100, 3)]
)
def test_gemm_transposes_and_accumulation(rng, trans_a, trans_b, accumulate, m, n, k):
    """op(a) is a [m, k] matrix stored as itself or as its transpose, likewise op(b) [k, n];
    (7, 4100, 3) spans two NC column blocks."""
    op_a, op_b = random_matrix(rng, (m, k)), random_matrix(rng, (k, n))
    a = np.ascontiguousarray(op_a.T) if trans_a else op_a
    b = np.ascontiguousarray(op_b.T) if trans_b else op_b
    c_old = random_matrix(rng, (m, n))
    # accumulate=0 must overwrite without reading c: a NaN read would survive as 0 * NaN = NaN
    c = c_old.copy() if accumulate else np.full((m, n), np.nan, np.float32)
    inputs_before = (a.copy(), b.copy())
    gemm(trans_a, trans_b, a, b, c, accumulate)
    what = f"gemm trans_a={trans_a} trans_b={trans_b} accumulate={accumulate} {m}x{n}x{k}"
    assert_within_rounding(c, op_a, op_b, c_old if accumulate else None, what=what)
    np.testing.assert_array_equal(a, inputs_before[0])
    np.testing.assert_array_equal(b, inputs_before[1])


def test_gemm_splits_the_work_across_threads_without_changing_a_bit(rng, threads):
    """Many row blocks and several KC slices, a transposed a, on 1 and on 2 threads."""
    op_a, op_b = random_matrix(rng, (400, 600)), random_matrix(rng, (600, 50))
    results = []
    for count in (1, 2):
        threads(count)
        c = np.full((400, 50), np.nan, np.float32)
        gemm(1, 0, np.ascontiguousarray(op_a.T), op_b, c, 0)
        results.append(c)
    np.testing.assert_array_equal(results[1], results[0])
    assert_within_rounding(results[0], op_a, op_b, what="gemm trans_a on 1 and 2 threads")


def test_gemm_rejects_sizes_below_one():
    a = np.ones((2, 2), np.float32)
    status = _native.lib.s2c_gemm(
        0, 0, 2, 0, 2, _native.pointer(a), _native.pointer(a), _native.pointer(a), 0
    )
    assert status == _native.BAD_ARGUMENT

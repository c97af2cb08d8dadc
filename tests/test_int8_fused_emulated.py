"""Stage 4, nvcc variant: the int8 model's fused inference kernels on the CPU emulation of CUDA,
against the unfused kernels they replace, bit for bit:
- int8_conv2d_pool_to_int8 (csrc/inference/int8_conv_pool.cu) against quantize_int8 (a first
  layer's float32 input), int8_conv2d_to_int8 and maxpool2d_int8;
- int8_linear_packed, on weights packed once (int8_pack_weights), against int8_linear and
  int8_linear_to_int8, which pack them at every call;
at odd shapes (channels past a group of 16, K past 16 and 32, padding, strides, pools of 1 and 2,
windows cut at the edge; first layers for the shallow kernel, and layers just past its limits),
with NaN, infinities and huge values among the pixels, and scales of either sign (a negative one
would order the sums and their codes oppositely); and the refusals of bad arguments (a status,
never a launch)."""

import ctypes

import numpy as np
import pytest
from cuda_emulated import emulated_library

SOURCES = ["int8/quantize.cu", "int8/gemm.cu", "int8/pool.cu", "inference/int8_conv_pool.cu",
           "errors.cu"]  # fmt: skip
V, I64, INT, FLOAT = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_float
OK, BAD_ARGUMENT = 0, 2
RUNGS = {"dp4a": 1, "mma": 2}


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    loaded = emulated_library(tmp_path_factory.mktemp("emulated-int8-fused"), SOURCES)
    loaded.s2c_cuda_quantize_int8.argtypes = [V, V, I64, FLOAT, INT]
    loaded.s2c_cuda_int8_linear.argtypes = [V, INT, V, V, V, V, V, V, V, I64, I64, I64, INT]
    loaded.s2c_cuda_int8_linear_to_int8.argtypes = [V, INT, V, V, V, INT, INT, V, V, V, V, I64,
                                                    I64, I64, INT]  # fmt: skip
    loaded.s2c_cuda_int8_conv2d_to_int8.argtypes = ([V, INT, V, V, V, INT, INT, V, V, V, V]
                                                    + [I64] * 9 + [INT])  # fmt: skip
    loaded.s2c_cuda_maxpool2d_int8.argtypes = [V, V] + [I64] * 5
    loaded.s2c_cuda_int8_pack_weights.argtypes = [V, V, V, I64, I64]
    loaded.s2c_cuda_int8_linear_packed.argtypes = [V, INT, V, V, V, V, V, V, INT, INT, V, I64,
                                                   I64, I64, INT]  # fmt: skip
    loaded.s2c_cuda_int8_conv2d_pool_to_int8.argtypes = ([V, V, FLOAT, INT, V, V, V, V, INT, INT,
                                                          V] + [I64] * 10)  # fmt: skip
    return loaded


def pointer(array):
    return None if array is None else array.ctypes.data_as(V)


def k32(k):
    return -(-k // 32) * 32


def scratch(rows, k, m):
    """The unfused ops' scratch, filled with junk: rows, packed weights, their sums."""
    return (np.full((rows, k32(k)), 99, np.int8), np.full((m, k32(k)), 99, np.int8),
            np.full(m, -7, np.int32))  # fmt: skip


def packed(lib, w):
    """(packed [M, K32], sums [M]) of int8 w [M, ...], by the library."""
    m, k = w.shape[0], w[0].size
    weights, sums = np.full((m, k32(k)), 99, np.int8), np.full(m, -7, np.int32)
    assert lib.s2c_cuda_int8_pack_weights(pointer(w), pointer(weights), pointer(sums), m, k) == OK
    return weights, sums


def codes(rng, shape):
    return rng.integers(-128, 128, shape, dtype=np.int8)


def rescaling(rng, m, k, signs):
    """scale [M], b [M] for sums of k products: scales that spread the codes over their range;
    with `signs`, some negative, and one NaN bias."""
    scale = (rng.uniform(0.5, 2.0, m) * 50 / (np.sqrt(k) * 74**2)).astype(np.float32)
    b = rng.uniform(-20, 20, m).astype(np.float32)
    if signs:
        scale[::3] *= -1
        b[m // 2] = np.nan
    return scale, b


def pixels(rng, shape, x_scale):
    """Float32 pixels near halves of x_scale (where x / x_scale must be an IEEE division to round
    as quantize_int8 does), with NaN, infinities and values far past any code."""
    halves = rng.integers(-140, 140, shape) + 0.5
    x = (halves * x_scale).astype(np.float32)
    flat = x.reshape(-1)
    flat[::7] = np.nan
    flat[3::11] = np.inf
    flat[5::13] = -np.inf
    flat[2::17] = 1e30
    return x


def unfused_conv(lib, x, x_zero, w, scale, b, y_zero, relu, stride, padding, pool):
    """int8_conv2d_to_int8 then (pool > 1) maxpool2d_int8, as the unfused model launches them."""
    n, c, h, width = x.shape
    m, _, r, s = w.shape
    oh, ow = (h + 2 * padding - r) // stride + 1, (width + 2 * padding - s) // stride + 1
    q = np.full((n, m, oh, ow), -77, np.int8)
    status = lib.s2c_cuda_int8_conv2d_to_int8(
        pointer(x), x_zero, pointer(w), pointer(scale), pointer(b), y_zero, int(relu), pointer(q),
        *map(pointer, scratch(n * oh * ow, c * r * s, m)), n, c, h, width, m, r, s, stride,
        padding, RUNGS["dp4a"])  # fmt: skip
    assert status == OK
    if pool == 1:
        return q
    pooled = np.full((n, m, oh // pool, ow // pool), -77, np.int8)
    assert lib.s2c_cuda_maxpool2d_int8(pointer(q), pointer(pooled), n * m, oh, ow, pool,
                                       pool) == OK  # fmt: skip
    return pooled


def fused_conv(lib, x, pixels_, x_scale, x_zero, w, scale, b, y_zero, relu, stride, padding, pool):
    source = x if x is not None else pixels_
    n, c, h, width = source.shape
    m, _, r, s = w.shape
    oh, ow = (h + 2 * padding - r) // stride + 1, (width + 2 * padding - s) // stride + 1
    weights, sums = packed(lib, w)
    q = np.full((n, m, oh // pool, ow // pool), -77, np.int8)
    status = lib.s2c_cuda_int8_conv2d_pool_to_int8(
        pointer(x), pointer(pixels_), x_scale, x_zero, pointer(weights), pointer(sums),
        pointer(scale), pointer(b), y_zero, int(relu), pointer(q), n, c, h, width, m, r, s,
        stride, padding, pool)  # fmt: skip
    assert status == OK
    return q


# (n, c, h, w, m, r, s, stride, padding, pool, x_zero, y_zero, relu)
CONVS = [
    (2, 1, 9, 9, 6, 5, 5, 1, 2, 2, -128, -100, True),  # LeNet-5's conv1, small: K = 25
    (1, 3, 11, 8, 17, 3, 3, 1, 1, 2, 20, 0, True),  # 17 channels: past a group; odd widths
    (2, 2, 10, 9, 5, 3, 2, 2, 0, 1, 127, -5, False),  # stride 2, no pool, no ReLU
    (1, 5, 13, 13, 4, 3, 3, 1, 0, 2, -3, -20, True),  # pool 2 leaves the 11x11 map's edge
    (1, 4, 7, 7, 33, 3, 3, 1, 1, 2, 0, -128, False),  # K = 36: past 32; 33 channels
    (3, 4, 12, 12, 7, 3, 3, 1, 1, 2, 5, -30, True),  # 432 rows: two blocks of 16 channels
    (2, 4, 20, 18, 9, 3, 3, 1, 0, 1, -60, 10, True),  # 576 rows, no pool: three such blocks
    (2, 4, 20, 20, 3, 3, 3, 1, 0, 2, 9, -40, True),  # 81 windows an image: blocks of 64 straddle 2
    (5, 2, 6, 6, 20, 3, 3, 1, 0, 2, -9, -50, True),  # 4 windows an image: 4 images a block, 5 of 8
    (2, 3, 9, 11, 20, 1, 2, 3, 1, 2, 40, -60, True),  # stride 3 past R = 1: rows no window reads
    (3, 6, 14, 14, 16, 5, 5, 1, 0, 2, -128, -100, True),  # LeNet-5's conv2: 25 windows an image
    (2, 64, 13, 13, 128, 3, 3, 1, 0, 2, 11, -100, True),  # the Fashion CNN's conv2, K = 576
    (1, 6, 8, 8, 18, 5, 5, 2, 2, 2, -1, -70, False),  # stride 2 and padding 2, K = 150
    (1, 40, 4, 400, 5, 3, 3, 1, 0, 2, 3, -90, True),  # a block's rows past 96 KB: x read in place
]
# First layers the shallow kernel takes (C*R*S <= 32, 3x3 or 5x5 at stride 1, 16 filters or
# fewer; CONVS[0] too), then layers just past each of its limits, which keep the implicit GEMM.
SHALLOW = [
    (1, 1, 28, 28, 6, 5, 5, 1, 2, 2, -128, -100, True),  # LeNet-5's conv1 at batch 1
    (256, 1, 6, 6, 6, 5, 5, 1, 2, 2, 7, -90, True),  # at batch 256, shrunk: 9 windows an image
    (2, 1, 9, 9, 6, 5, 5, 1, 1, 1, -20, -60, False),  # padding 1, no pool, no ReLU
    (3, 3, 8, 7, 16, 3, 3, 1, 1, 2, 30, -70, True),  # K = 27 over 3 channels, 16 filters
    (2, 1, 7, 9, 5, 3, 3, 1, 0, 1, -5, -30, True),  # K = 9: the quads past it skipped
    (2, 1, 9, 9, 17, 5, 5, 1, 2, 2, -128, -100, True),  # 17 filters
    (2, 4, 8, 8, 6, 3, 3, 1, 1, 2, 12, -80, True),  # K = 36
    (2, 1, 11, 11, 6, 5, 5, 2, 2, 2, -128, -100, True),  # stride 2
]


@pytest.mark.parametrize("signs", [False, True], ids=["positive", "any sign, NaN bias"])
@pytest.mark.parametrize("case", CONVS + SHALLOW)
def test_conv_pool_on_codes(lib, case, signs):
    n, c, h, width, m, r, s, stride, padding, pool, x_zero, y_zero, relu = case
    rng = np.random.default_rng(sum(case[:10]) + signs)
    x, w = codes(rng, (n, c, h, width)), codes(rng, (m, c, r, s))
    scale, b = rescaling(rng, m, c * r * s, signs)
    want = unfused_conv(lib, x, x_zero, w, scale, b, y_zero, relu, stride, padding, pool)
    found = fused_conv(lib, x, None, 0.0, x_zero, w, scale, b, y_zero, relu, stride, padding,
                       pool)  # fmt: skip
    np.testing.assert_array_equal(found, want)
    assert len(np.unique(want)) > 8, "the case must give codes of many values"


@pytest.mark.parametrize("case", CONVS[:2] + CONVS[3:4] + CONVS[-2:] + SHALLOW)
def test_conv_pool_on_pixels(lib, case):
    """A first layer: float32 pixels quantized on the way in, as quantize_int8 would."""
    n, c, h, width, m, r, s, stride, padding, pool, x_zero, y_zero, relu = case
    rng = np.random.default_rng(sum(case[:10]))
    x_scale = np.float32(0.0123)
    x, w = pixels(rng, (n, c, h, width), x_scale), codes(rng, (m, c, r, s))
    scale, b = rescaling(rng, m, c * r * s, signs=False)
    q = np.full(x.shape, -77, np.int8)
    assert lib.s2c_cuda_quantize_int8(pointer(x), pointer(q), x.size, x_scale, x_zero) == OK
    want = unfused_conv(lib, q, x_zero, w, scale, b, y_zero, relu, stride, padding, pool)
    found = fused_conv(lib, None, x, x_scale, x_zero, w, scale, b, y_zero, relu, stride, padding,
                       pool)  # fmt: skip
    np.testing.assert_array_equal(found, want)


@pytest.mark.parametrize("rung", RUNGS)
@pytest.mark.parametrize("size", [(3, 7, 5, -128, 0, True), (70, 84, 37, 127, -3, False),
                                  (9, 64, 10, 5, 100, True),
                                  (20, 548, 12, -9, 4, True)])  # fmt: skip
def test_linear_packed(lib, rung, size):
    """K = 7: rows laid out first; K = 84, 548 and 64: x its own rows (on the MMA rung; K = 64 on
    both), K = 548 in 18 steps split over 4 warps, the last step's codes past K read as zeros.
    Floats and codes."""
    n, k, m, x_zero, y_zero, relu = size
    rng = np.random.default_rng(n + k + m)
    x, w = codes(rng, (n, k)), codes(rng, (m, k))
    scale, b = rescaling(rng, m, k, signs=True)
    weights, sums = packed(lib, w)
    rows = np.full((n, k32(k)), 99, np.int8)
    common = (pointer(scale), pointer(b))

    want_y, found_y = (np.full((n, m), np.nan, np.float32) for _ in range(2))
    assert lib.s2c_cuda_int8_linear(pointer(x), x_zero, pointer(w), *common, pointer(want_y),
                                    *map(pointer, scratch(n, k, m)), n, k, m,
                                    RUNGS[rung]) == OK  # fmt: skip
    assert lib.s2c_cuda_int8_linear_packed(pointer(x), x_zero, pointer(weights), pointer(sums),
                                           *common, pointer(found_y), None, 0, 0, pointer(rows),
                                           n, k, m, RUNGS[rung]) == OK  # fmt: skip
    np.testing.assert_array_equal(found_y, want_y)

    want_q, found_q = (np.full((n, m), -77, np.int8) for _ in range(2))
    assert lib.s2c_cuda_int8_linear_to_int8(pointer(x), x_zero, pointer(w), *common, y_zero,
                                            int(relu), pointer(want_q),
                                            *map(pointer, scratch(n, k, m)), n, k, m,
                                            RUNGS[rung]) == OK  # fmt: skip
    assert lib.s2c_cuda_int8_linear_packed(pointer(x), x_zero, pointer(weights), pointer(sums),
                                           *common, None, pointer(found_q), y_zero, int(relu),
                                           pointer(rows), n, k, m, RUNGS[rung]) == OK  # fmt: skip
    np.testing.assert_array_equal(found_q, want_q)


def test_packing(lib):
    """Rows padded with zeros to K32, each row's sum."""
    w = codes(np.random.default_rng(9), (5, 2, 3, 7))
    weights, sums = packed(lib, w)
    flat = w.reshape(5, -1)
    np.testing.assert_array_equal(weights[:, :42], flat)
    assert not weights[:, 42:].any()
    np.testing.assert_array_equal(sums, flat.astype(np.int64).sum(axis=1))


# Bad arguments of the fused convolution: each changes one of a good call's.
GOOD = {"x": True, "pixels": False, "x_scale": 1.0, "x_zero": 0, "y_zero": 0, "n": 1,
        "c": 1, "h": 6, "width": 6, "m": 2, "r": 3, "s": 3, "stride": 1, "padding": 0,
        "pool": 2}  # fmt: skip
BAD = [{"x": False}, {"pixels": True}, {"x": False, "pixels": True, "x_scale": 0.0},
       {"x": False, "pixels": True, "x_scale": float("nan")}, {"x_zero": 128},
       {"y_zero": -129}, {"n": 0}, {"c": 0}, {"m": 0}, {"stride": 0}, {"padding": -1},
       {"pool": 0}, {"pool": 3}, {"h": 3}, {"r": 7},
       {"h": 2, "padding": 0}]  # fmt: skip


@pytest.mark.parametrize("change", BAD, ids=lambda change: ",".join(change))
def test_conv_pool_refuses(lib, change):
    a = GOOD | change
    x, pix = np.zeros(64, np.int8), np.zeros(64, np.float32)
    weights, sums = np.zeros((4, 32), np.int8), np.zeros(4, np.int32)
    scale, b, q = np.ones(4, np.float32), np.zeros(4, np.float32), np.full(64, -77, np.int8)
    status = lib.s2c_cuda_int8_conv2d_pool_to_int8(
        pointer(x) if a["x"] else None, pointer(pix) if a["pixels"] else None, a["x_scale"],
        a["x_zero"], pointer(weights), pointer(sums), pointer(scale), pointer(b), a["y_zero"], 1,
        pointer(q), *(a[name] for name in ("n", "c", "h", "width", "m", "r", "s", "stride",
                                           "padding", "pool")))  # fmt: skip
    assert status == BAD_ARGUMENT
    assert (q == -77).all(), "a refused call must write nothing"


def test_good_call_of_the_refusals_runs(lib):
    """The call BAD's cases change is itself accepted: each refusal is its change's."""
    x = np.zeros(64, np.int8)
    weights, sums = np.zeros((4, 32), np.int8), np.zeros(4, np.int32)
    scale, b, q = np.ones(4, np.float32), np.zeros(4, np.float32), np.full(64, -77, np.int8)
    status = lib.s2c_cuda_int8_conv2d_pool_to_int8(
        pointer(x), None, 1.0, 0, pointer(weights), pointer(sums), pointer(scale), pointer(b), 0,
        1, pointer(q), *(GOOD[name] for name in ("n", "c", "h", "width", "m", "r", "s", "stride",
                                                  "padding", "pool")))  # fmt: skip
    assert status == OK
    assert (q[:8] == 0).all() and (q[8:] == -77).all()


@pytest.mark.parametrize("rung", RUNGS)
@pytest.mark.parametrize("change", [{"y": True, "q": True}, {"y": False, "q": False},
                                    {"y_zero": 128}, {"k": 0}, {"n": 0}])  # fmt: skip
def test_linear_packed_refuses(lib, change, rung):
    a = {"y": True, "q": False, "y_zero": 0, "k": 8, "n": 2} | change
    x, weights, sums = np.zeros((2, 32), np.int8), np.zeros((3, 32), np.int8), np.zeros(3, np.int32)
    scale, b = np.ones(3, np.float32), np.zeros(3, np.float32)
    y, q = np.full(6, np.nan, np.float32), np.full(6, -77, np.int8)
    status = lib.s2c_cuda_int8_linear_packed(
        pointer(x), 0, pointer(weights), pointer(sums), pointer(scale), pointer(b),
        pointer(y) if a["y"] else None, pointer(q) if a["q"] else None, a["y_zero"], 0,
        pointer(np.zeros((2, 32), np.int8)), a["n"], a["k"], 3, RUNGS[rung])  # fmt: skip
    assert status == BAD_ARGUMENT
    assert np.isnan(y).all() and (q == -77).all()

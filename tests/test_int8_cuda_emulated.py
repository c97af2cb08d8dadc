"""Stage 4, nvcc variant: the int8 kernels (csrc/int8/) on the CPU emulation of CUDA, against
stage 1's integer oracle, exactly: quantize_int8, int8_linear and int8_conv2d and their _to_int8
forms on both rungs (dp4a, and the tensor-core MMA's fragments through its software model of
mma.sync), and maxpool2d_int8. The grader
checks them on a GPU; this checks what they compute (tiles past the edges, K past 32, the zero
point, the padding's code) without one."""

import ctypes

import numpy as np
import pytest
from cuda_emulated import emulated_library

import stage1_python as oracle
from grader.builders import (
    DEFAULT,
    build_int8_conv2d,
    build_int8_conv2d_to_int8,
    build_int8_linear,
    build_int8_linear_to_int8,
    build_maxpool_int8,
    build_quantize,
)

SOURCES = ["int8/quantize.cu", "int8/gemm.cu", "int8/pool.cu", "errors.cu"]
V, I64, INT = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
RUNGS = {"dp4a": 1, "mma": 2}


def load(folder):
    """The int8 sources built for the emulation in `folder`, loaded, their argument types set."""
    loaded = emulated_library(folder, SOURCES)
    loaded.s2c_cuda_quantize_int8.argtypes = [V, V, I64, ctypes.c_float, INT]
    loaded.s2c_cuda_int8_linear.argtypes = [V, INT, V, V, V, V, V, V, V, I64, I64, I64, INT]
    loaded.s2c_cuda_int8_conv2d.argtypes = [V, INT, V, V, V, V, V, V, V] + [I64] * 9 + [INT]
    loaded.s2c_cuda_int8_linear_to_int8.argtypes = [V, INT, V, V, V, INT, INT, V, V, V, V, I64,
                                                    I64, I64, INT]  # fmt: skip
    loaded.s2c_cuda_int8_conv2d_to_int8.argtypes = ([V, INT, V, V, V, INT, INT, V, V, V, V]
                                                    + [I64] * 9 + [INT])  # fmt: skip
    loaded.s2c_cuda_maxpool2d_int8.argtypes = [V, V] + [I64] * 5
    return loaded


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    """On the emulation's 132 multiprocessors: every MMA case here is a grid of a few blocks, which
    the MMA rung runs with K split over each block's warps."""
    return load(tmp_path_factory.mktemp("emulated-int8"))


@pytest.fixture(scope="module")
def another_lib(tmp_path_factory):
    return load(tmp_path_factory.mktemp("emulated-int8-one-multiprocessor"))


@pytest.fixture
def one_multiprocessor(another_lib, monkeypatch):
    """A second copy of the library on a GPU of one multiprocessor (read at its first GEMM, so in
    the test): a grid of 2 blocks of 64 rows then fills it, and the MMA rung keeps its row-tiled
    launch, which a full GPU takes for large products."""
    monkeypatch.setenv("EMULATED_MULTIPROCESSORS", "1")
    return another_lib


def pointers(*arrays):
    return [a.ctypes.data_as(V) if isinstance(a, np.ndarray) else a for a in arrays]


def on_oracle(op, args):
    """Stage 1's result for `args` (NumPy arrays and numbers, in the op's order), as a NumPy
    array."""
    native = [oracle.from_numpy(v) if isinstance(v, np.ndarray) else v for v in args.values()]
    return np.array(getattr(oracle, op)(*native))


def scratch(rows, k, m):
    k32 = -(-k // 32) * 32
    return (np.full((rows, k32), 99, np.int8), np.full((m, k32), 99, np.int8),
            np.full(m, -7, np.int32))  # fmt: skip


@pytest.mark.parametrize("size", [((3, 1037), 3, False), ((2, 3, 5), -128, True),
                                  ((17, 9), 127, False)])  # fmt: skip
def test_quantize(lib, size):
    args = build_quantize(np.random.default_rng(3), size)
    x, q = args["x"], np.full(args["x"].shape, -77, np.int8)
    assert lib.s2c_cuda_quantize_int8(*pointers(x, q), x.size, args["scale"],
                                      args["zero_point"]) == 0  # fmt: skip
    np.testing.assert_array_equal(q, on_oracle("quantize_int8", args))


@pytest.mark.parametrize("rung", RUNGS)
@pytest.mark.parametrize("size", [(1, 7, 3, 0), (17, 33, 10, 127), (70, 65, 37, -128),
                                  (9, 64, 5, -3), (20, 548, 12, 1)])  # fmt: skip
def test_int8_linear(lib, rung, size):
    """70 rows: past a 64-row tile; 37 channels: past 32; K = 65: three steps of 32; K = 64: x is
    its own rows. With K split over 4 warps: K = 7, one step (3 warps add nothing); 18 steps, 5,
    5, 4 and 4 a warp, 4 in flight then 1 or none; 17 and 20 rows past a 16-row block."""
    check_int8_linear(lib, rung, size)


@pytest.mark.parametrize("size", [(70, 65, 37, -128), (70, 64, 37, 5)])
def test_int8_linear_row_tiled(one_multiprocessor, size):
    """The MMA rung's 64-row blocks: rows past one, K = 64 read from x itself."""
    check_int8_linear(one_multiprocessor, "mma", size)


def check_int8_linear(lib, rung, size):
    args = build_int8_linear(np.random.default_rng(4), size)
    (n, k), m = args["x"].shape, args["w"].shape[0]
    y = np.full((n, m), np.nan, np.float32)
    status = lib.s2c_cuda_int8_linear(*pointers(args["x"], args["x_zero"], args["w"],
                                                args["scale"], args["b"], y, *scratch(n, k, m)),
                                      n, k, m, RUNGS[rung])  # fmt: skip
    assert status == 0
    np.testing.assert_array_equal(y, on_oracle("int8_linear", args).astype(np.float32))


@pytest.mark.parametrize("rung", RUNGS)
@pytest.mark.parametrize("size", [(2, 3, 7, 6, 4, 3, 3, 1, 1, -128),
                                  (1, 3, 6, 7, 2, 5, 5, 1, 2, 50),
                                  (2, 2, 10, 8, 3, 3, 2, 2, 1, 127),
                                  (1, 64, 13, 13, 128, 3, 3, 1, 0, -9)])  # fmt: skip
def test_int8_conv2d(lib, rung, size):
    """The last: the Fashion CNN's conv2 on one image (121 rows, K = 576, 128 channels)."""
    check_int8_conv2d(lib, rung, size)


def test_int8_conv2d_row_tiled(one_multiprocessor):
    """112 rows in 2 blocks of 64 (image 1 begins in the first); K = 108, 4 steps."""
    check_int8_conv2d(one_multiprocessor, "mma", (2, 3, 7, 6, 4, 6, 6, 1, 3, -128))


def check_int8_conv2d(lib, rung, size):
    args = build_int8_conv2d(np.random.default_rng(5), size)
    n, c, h, width = args["x"].shape
    m, _, r, s = args["w"].shape
    stride, padding = args["stride"], args["padding"]
    oh, ow = (h + 2 * padding - r) // stride + 1, (width + 2 * padding - s) // stride + 1
    y = np.full((n, m, oh, ow), np.nan, np.float32)
    status = lib.s2c_cuda_int8_conv2d(
        *pointers(args["x"], args["x_zero"], args["w"], args["scale"], args["b"], y,
                  *scratch(n * oh * ow, c * r * s, m)),
        n, c, h, width, m, r, s, stride, padding, RUNGS[rung])  # fmt: skip
    assert status == 0
    np.testing.assert_array_equal(y, on_oracle("int8_conv2d", args).astype(np.float32))


def codes_args(args):
    """A _to_int8 case's y_zero and relu as the library takes them (relu left out: False)."""
    return args["y_zero"], int("relu" not in args.defaulted and args["relu"])


@pytest.mark.parametrize("rung", RUNGS)
@pytest.mark.parametrize("size", [(1, 7, 3, 0, 0, DEFAULT, 1), (17, 33, 10, 127, -5, True, 2),
                                  (70, 65, 37, -128, 20, False, 127)])  # fmt: skip
def test_int8_linear_to_int8(lib, rung, size):
    """Small weights: scales of 2^-1 to 2^-3, many exact halves (rounded to even)."""
    args = build_int8_linear_to_int8(np.random.default_rng(6), size)
    (n, k), m = args["x"].shape, args["w"].shape[0]
    q = np.full((n, m), -77, np.int8)
    status = lib.s2c_cuda_int8_linear_to_int8(
        *pointers(args["x"], args["x_zero"], args["w"], args["scale"], args["b"],
                  *codes_args(args), q, *scratch(n, k, m)),
        n, k, m, RUNGS[rung])  # fmt: skip
    assert status == 0
    np.testing.assert_array_equal(q, on_oracle("int8_linear_to_int8", args))


@pytest.mark.parametrize("rung", RUNGS)
@pytest.mark.parametrize("size", [(2, 3, 7, 6, 4, 3, 3, 1, 1, -128, 10, True, 2),
                                  (2, 2, 10, 8, 3, 3, 2, 2, 1, 127, 127, True, 127),
                                  (1, 1, 9, 9, 40, 5, 5, 1, 2, -7, -50, False, 3)])  # fmt: skip
def test_int8_conv2d_to_int8(lib, rung, size):
    args = build_int8_conv2d_to_int8(np.random.default_rng(7), size)
    n, c, h, width = args["x"].shape
    m, _, r, s = args["w"].shape
    stride, padding = args["stride"], args["padding"]
    oh, ow = (h + 2 * padding - r) // stride + 1, (width + 2 * padding - s) // stride + 1
    q = np.full((n, m, oh, ow), -77, np.int8)
    status = lib.s2c_cuda_int8_conv2d_to_int8(
        *pointers(args["x"], args["x_zero"], args["w"], args["scale"], args["b"],
                  *codes_args(args), q, *scratch(n * oh * ow, c * r * s, m)),
        n, c, h, width, m, r, s, stride, padding, RUNGS[rung])  # fmt: skip
    assert status == 0
    np.testing.assert_array_equal(q, on_oracle("int8_conv2d_to_int8", args))


@pytest.mark.parametrize("size", [(2, 3, 7, 6, 2, 2), (1, 2, 9, 11, 3, 1), (2, 4, 26, 26, 2, 2)])
def test_maxpool2d_int8(lib, size):
    args = build_maxpool_int8(np.random.default_rng(8), size)
    n, c, h, w = args["x"].shape
    k, stride = args["k"], args["stride"]
    q = np.full((n, c, (h - k) // stride + 1, (w - k) // stride + 1), 99, np.int8)
    assert lib.s2c_cuda_maxpool2d_int8(*pointers(args["x"], q), n * c, h, w, k, stride) == 0
    np.testing.assert_array_equal(q, on_oracle("maxpool2d_int8", args))

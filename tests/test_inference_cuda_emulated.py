"""Stage 4, nvcc variant: inference's fused convolution (csrc/inference/conv_bias_relu_pool.cu) on
the CPU emulation of CUDA (tests/cuda_emulation/: a block's threads are fibers), against NumPy in
float64. Each of its three kernels (shallow, the pooling product, direct) runs at the
curriculum's layers and at odd shapes: tiles past the last window and filter, windows past a
tile's run of 16, outputs no window covers, padding, strides, pool 1 and 3. The grader checks it on
a GPU; this checks what it computes without one."""

import ctypes
import os

import numpy as np
import pytest
from cuda_emulated import emulated_library

SOURCES = ["inference/conv_bias_relu_pool.cu", "errors.cu"]


class Geometry(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int64) for name in (
        "n", "channels", "height", "width", "filters", "kh", "kw", "stride", "padding",
        "out_height", "out_width")]  # fmt: skip


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    loaded = emulated_library(tmp_path_factory.mktemp("emulated-inference"), SOURCES)
    loaded.s2c_cuda_conv2d_bias_relu_pool.argtypes = [ctypes.c_void_p] * 4 + [
        ctypes.POINTER(Geometry),
        ctypes.c_int64,
    ]
    # Two multiprocessors, read at the first launch: the product then takes 128-row tiles for the
    # Fashion CNN's conv2 as on a full GPU at batch 256 (on 132, 64-row tiles at batch 2).
    before = os.environ.get("EMULATED_MULTIPROCESSORS")
    os.environ["EMULATED_MULTIPROCESSORS"] = "2"
    yield loaded
    if before is None:
        del os.environ["EMULATED_MULTIPROCESSORS"]
    else:
        os.environ["EMULATED_MULTIPROCESSORS"] = before


def reference(x, w, b, stride, padding, pool):
    """relu(conv2d(x, w) + b) max-pooled, in float64, and the sum of its terms' magnitudes."""
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (padding,) * 2, (padding,) * 2))
    oh, ow = (h + 2 * padding - r) // stride + 1, (wd + 2 * padding - s) // stride + 1
    windows = np.lib.stride_tricks.sliding_window_view(padded, (r, s), axis=(2, 3))
    windows = windows[:, :, ::stride, ::stride][:, :, :oh, :ow]  # [n, c, oh, ow, r, s]
    y = np.einsum("ncijrs,kcrs->nkij", windows, w.astype(np.float64))
    size = np.einsum("ncijrs,kcrs->nkij", np.abs(windows), np.abs(w.astype(np.float64)))
    ph, pw = oh // pool, ow // pool

    def pooled(v):
        v = v[:, :, : ph * pool, : pw * pool].reshape(n, k, ph, pool, pw, pool)
        return v.max(axis=(3, 5))

    return np.maximum(pooled(y) + b[None, :, None, None], 0.0), pooled(size) + np.abs(b)[
        None, :, None, None
    ]


# n, c, h, w, k, kernel, stride, padding, pool
SHAPES = [
    (2, 1, 28, 28, 6, 5, 1, 2, 2),  # LeNet-5 conv1: shallow, 8 filters a block
    (2, 6, 14, 14, 16, 5, 1, 0, 2),  # LeNet-5 conv2: the product, 16-row tiles
    (2, 1, 28, 28, 64, 3, 1, 0, 2),  # Fashion CNN conv1: shallow, 9 taps, 32 filters a block
    (2, 64, 13, 13, 128, 3, 1, 0, 2),  # Fashion CNN conv2: the product (128-row tiles)
    (3, 5, 9, 11, 37, 3, 1, 1, 2),  # the product: 37 filters (64-row tiles), 60 windows
    (1, 4, 7, 6, 19, 3, 2, 1, 1),  # the product unpooled (32-row tiles), stride 2
    (2, 3, 11, 13, 5, 5, 3, 2, 2),  # the product with 75 taps, stride 3
    (3, 2, 9, 7, 33, 3, 1, 1, 2),  # shallow: 18 taps, 33 filters (a second group of one)
    (1, 1, 8, 7, 2, 5, 1, 2, 3),  # shallow pooled 3x3, padded
    (2, 16, 4, 3, 16, 3, 1, 1, 1),  # the product unpooled, 24 windows: a tile partly past them
    (1, 3, 10, 9, 4, 5, 1, 0, 3),  # direct: 75 taps pooled 3x3
    (1, 1, 5, 5, 3, 3, 1, 0, 3),  # one window per image
]


def run(lib, x, w, b, stride, padding, pool):
    """The library's fused convolution, its output pre-filled with NaN."""
    (n, c, h, wd), (k, _, r, s) = x.shape, w.shape
    oh, ow = (h + 2 * padding - r) // stride + 1, (wd + 2 * padding - s) // stride + 1
    y = np.full((n, k, oh // pool, ow // pool), np.nan, np.float32)
    g = Geometry(n, c, h, wd, k, r, s, stride, padding, oh, ow)
    status = lib.s2c_cuda_conv2d_bias_relu_pool(*(a.ctypes.data for a in (x, w, b, y)),
                                                ctypes.byref(g), pool)  # fmt: skip
    assert status == 0
    return y


def random_layer(shape):
    n, c, h, wd, k, r, *_ = shape
    rng = np.random.default_rng(sum(shape))
    return (rng.standard_normal((n, c, h, wd)).astype(np.float32),
            rng.standard_normal((k, c, r, r)).astype(np.float32),
            rng.standard_normal(k).astype(np.float32))  # fmt: skip


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_the_fused_convolution_matches_numpy(lib, shape):
    *_, stride, padding, pool = shape
    x, w, b = random_layer(shape)
    y = run(lib, x, w, b, stride, padding, pool)
    exact, size = reference(x, w, b, stride, padding, pool)
    error = np.abs(y - exact) / size
    assert not np.isnan(y).any()
    assert error.max() <= 1e-5, f"largest error {error.max():.3g} of the magnitude"


# one layer for each kernel: shallow, the product, direct
NAN_SHAPES = [(2, 1, 9, 9, 5, 3, 1, 0, 2), (2, 8, 9, 9, 5, 3, 1, 0, 2),
              (1, 3, 10, 9, 4, 5, 1, 0, 3)]  # fmt: skip


@pytest.mark.parametrize("shape", NAN_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_a_nan_wins_its_windows_max_and_stays_where_it_reaches(lib, shape):
    """A NaN pixel reaches some of a pooling window's outputs and not others: the window is NaN
    (a max that dropped it would pass on the rest); a NaN weight makes its whole filter NaN."""
    *_, stride, padding, pool = shape
    x, w, b = random_layer(shape)
    x[0, -1, 0, 0] = np.nan  # in the first output only: one of its window's outputs
    w[3, 0, 1, 1] = np.nan
    y = run(lib, x, w, b, stride, padding, pool)
    exact, size = reference(x, w, b, stride, padding, pool)
    np.testing.assert_array_equal(np.isnan(y), np.isnan(exact))
    others = np.isnan(np.delete(y, 3, axis=1))
    assert np.isnan(y[:, 3]).all() and others.any() and not others.all()
    finite = ~np.isnan(exact)
    assert (np.abs(y - exact)[finite] <= 1e-5 * size[finite]).all()

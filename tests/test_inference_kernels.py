"""Inference's fused conv + bias + ReLU + max-pool kernel in CUDA C, run without a GPU, and planted
bugs in the op that the grader must catch.

The nvcc variant's op (stage4_cuda/csrc/inference/conv_bias_relu_pool.cu) runs on the CPU
emulation of CUDA (tests/cuda_emulation/: a block's threads are fibers, __syncthreads a barrier)
against stage 2, its output pre-filled with NaN, through each of its kernels: shallow (a first
layer's window in registers, a full and a partial group of filters, pooled up to 17x17; on an
H200's 132 multiprocessors, a batch of one or two spread over lanes, bit for bit the same), the
pooling product (implicit GEMM tiles of 16, 32, 64 and 128 rows, windows past a tile's run of
16, outputs no window covers, unpooled; on an H200's 132 multiprocessors, a batch of one or two
with its depth split in pieces added by a second kernel, and a batch of 256 not split) and direct
(deeper layers pooled 3x3), at the curriculum's layers and at odd shapes; a NaN pixel reaching
only part of a pooling window must win its max.
The GPU's own run is the grader's: `python -m grader --stage 4 --variant nvcc --ops
conv2d_bias_relu_pool`.

Then tests/planted/fused_*: stage 2 with the fused op broken as a learner might break it; the
grader fails each with a message naming the wrong element.
"""

import ctypes
import os
import re
import shutil

import numpy as np
import pytest
from cuda_emulated import emulated_library
from test_grader_planted_bugs import PLANTED, run_grader

import stage2_numpy as reference

SOURCES = ["inference/conv_bias_relu_pool.cu", "errors.cu"]
V = ctypes.c_void_p


class Geometry(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_int64)
        for name in (
            "n channels height width filters kh kw stride padding out_height out_width".split()
        )
    ]


def with_multiprocessors(path, multiprocessors):
    """The emulated library at `path`, loaded for a GPU of `multiprocessors` (read once, at its
    first question, as on a GPU; a copy of the file loads as a library of its own)."""
    loaded = ctypes.CDLL(str(path))
    loaded.s2c_cuda_conv2d_bias_relu_pool.argtypes = [V] * 6 + [ctypes.c_int64]
    loaded.s2c_cuda_conv2d_bias_relu_pool_scratch.argtypes = [V, ctypes.c_int64, V]
    before = os.environ.get("EMULATED_MULTIPROCESSORS")
    os.environ["EMULATED_MULTIPROCESSORS"] = multiprocessors
    scratch_floats(loaded, (1, 8, 4, 4, 8, 3, 3, 1, 0, 1))  # a product: the count is read
    if before is None:
        del os.environ["EMULATED_MULTIPROCESSORS"]
    else:
        os.environ["EMULATED_MULTIPROCESSORS"] = before
    return loaded


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    """On two multiprocessors: the product takes 128-row tiles for the Fashion CNN's conv2 at
    batch 2, as a full GPU does at batch 256 (on 132, 64-row tiles)."""
    built = emulated_library(tmp_path_factory.mktemp("emulated_inference"), SOURCES)
    return with_multiprocessors(built._name, "2")


@pytest.fixture(scope="module")
def lib_h200(lib, tmp_path_factory):
    """On an H200's 132 multiprocessors: the products of a batch of one or two are split along
    their depth, as on the GPU."""
    copy = tmp_path_factory.mktemp("emulated_inference_132") / "libemulated.so"
    shutil.copy(lib._name, copy)
    return with_multiprocessors(copy, "132")


@pytest.fixture(scope="module")
def lib_one(lib, tmp_path_factory):
    """On one multiprocessor: the shallow kernel's grid (a block at least) never leaves one idle,
    so it walks each window's positions in one thread, as a batch of 256 does on an H200."""
    copy = tmp_path_factory.mktemp("emulated_inference_1") / "libemulated.so"
    shutil.copy(lib._name, copy)
    return with_multiprocessors(copy, "1")


def geometry_of(shape):
    n, c, h, w, k, r, s, stride, padding, _ = shape
    oh, ow = (h + 2 * padding - r) // stride + 1, (w + 2 * padding - s) // stride + 1
    return Geometry(n, c, h, w, k, r, s, stride, padding, oh, ow)


def scratch_floats(lib, shape):
    """s2c_cuda_conv2d_bias_relu_pool_scratch for the layer `shape` (SHAPES' form)."""
    floats = ctypes.c_int64(-1)
    status = lib.s2c_cuda_conv2d_bias_relu_pool_scratch(
        ctypes.byref(geometry_of(shape)), shape[-1], ctypes.byref(floats)
    )
    assert status == 0
    return floats.value


# (n, c, h, w, k, r, s, stride, padding, pool), by the kernel that computes them
SHAPES = [
    # shallow (C*R*S <= 32)
    (1, 1, 28, 28, 6, 5, 5, 1, 2, 2),  # LeNet-5 conv1: a group of 8 filters
    (2, 1, 28, 28, 64, 3, 3, 1, 0, 2),  # Fashion CNN conv1: 9 taps, groups of 32
    (2, 3, 7, 6, 4, 3, 3, 1, 1, 2),  # 27 taps, the last row unpooled
    (2, 2, 10, 8, 3, 3, 2, 2, 1, 2),  # 12 taps, stride 2, a column no window covers
    (3, 2, 9, 7, 33, 3, 3, 1, 1, 2),  # 33 filters: a second group of one
    (1, 1, 8, 7, 2, 5, 5, 1, 2, 3),  # pooled 3x3, padded
    (1, 1, 5, 5, 3, 3, 3, 1, 0, 3),  # one window an image
    (1, 2, 18, 19, 3, 1, 2, 1, 0, 17),  # a 1x2 kernel pooled 17x17 (289 outputs a window)
    # the pooling product (deeper, pool 1 or 2)
    (2, 6, 14, 14, 16, 5, 5, 1, 0, 2),  # LeNet-5 conv2: 16-row tiles
    (2, 64, 13, 13, 128, 3, 3, 1, 0, 2),  # Fashion CNN conv2: 128-row tiles
    (1, 5, 13, 11, 19, 3, 3, 1, 1, 2),  # 32-row tiles
    (3, 5, 9, 11, 37, 3, 3, 1, 1, 2),  # 64-row tiles, 60 windows: a last run of 12
    (1, 70, 6, 6, 9, 3, 3, 1, 1, 2),  # 630 deep
    (2, 4, 9, 10, 20, 3, 5, 1, 1, 2),  # a 3x5 kernel (sizes read at run time)
    (2, 3, 11, 13, 5, 5, 5, 3, 2, 2),  # stride 3
    (1, 16, 4, 3, 16, 3, 3, 1, 1, 1),  # unpooled: 12 windows, a tile mostly past them
    (1, 4, 7, 6, 19, 3, 3, 2, 1, 1),  # unpooled, stride 2
    # direct (deeper, pooled 3x3 or more)
    (1, 3, 6, 7, 2, 5, 5, 1, 2, 3),
    (1, 3, 10, 9, 4, 5, 5, 1, 0, 3),
]


def run(lib, x, weights, b, stride, padding, pool):
    """The library's fused op, its output and its scratch pre-filled with NaN."""
    shape = (*x.shape, *weights.shape[0:1], *weights.shape[2:], stride, padding, pool)
    geometry = geometry_of(shape)
    y = np.full((*x.shape[:1], *weights.shape[:1], geometry.out_height // pool,
                 geometry.out_width // pool), np.nan, np.float32)  # fmt: skip
    scratch = np.full(scratch_floats(lib, shape), np.nan, np.float32)
    status = lib.s2c_cuda_conv2d_bias_relu_pool(
        *(a.ctypes.data_as(V) for a in (x, weights, b, y)),
        scratch.ctypes.data_as(V) if scratch.size else None,
        ctypes.byref(geometry),
        pool,
    )
    assert status == 0
    return y


def random_layer(shape):
    n, c, h, w, k, r, s, *_ = shape
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    weights = (rng.standard_normal((k, c, r, s)) / np.sqrt(c * r * s)).astype(np.float32)
    return x, weights, rng.standard_normal(k).astype(np.float32)


@pytest.mark.parametrize("shape", SHAPES, ids=[str(s) for s in SHAPES])
def test_the_kernel_matches_stage_2_on_a_cpu_emulation(lib, shape):
    n, c, h, w, k, r, s, stride, padding, pool = shape
    x, weights, b = random_layer(shape)
    x[0, 0, h // 2, w // 2] = np.nan  # one NaN pixel: its outputs stay NaN
    y = run(lib, x, weights, b, stride, padding, pool)
    expected = reference.conv2d_bias_relu_pool(x, weights, b, stride, padding, pool)
    assert np.array_equal(np.isnan(y), np.isnan(expected)), "NaN where stage 2 has none, or none"
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5 * np.sqrt(c * r * s))


# On 132 multiprocessors, the product's depth split in pieces (scratch, then a kernel adding
# them in a fixed order and pooling): LeNet-5's and the Fashion CNN's conv2 at batch 1 and 2, and
# a layer unpooled (a tap a window)
SPLIT_SHAPES = [(1, 6, 14, 14, 16, 5, 5, 1, 0, 2), (2, 6, 14, 14, 16, 5, 5, 1, 0, 2),
                (1, 64, 13, 13, 128, 3, 3, 1, 0, 2), (2, 64, 13, 13, 128, 3, 3, 1, 0, 2),
                (1, 16, 4, 3, 16, 3, 3, 1, 1, 1)]  # fmt: skip


@pytest.mark.parametrize("shape", SPLIT_SHAPES, ids=[str(s) for s in SPLIT_SHAPES])
def test_a_small_batchs_product_split_along_its_depth_matches_stage_2(lib_h200, shape):
    """NaN pixels in the last channel (the last piece of the depth) at a window's first output
    only, and a NaN weight in the first channel (the first piece): each wins its max; the rest
    within the tolerance of sums of C*R*S terms, pieces added in another order."""
    n, c, h, w, k, r, s, stride, padding, pool = shape
    assert scratch_floats(lib_h200, shape) > 0, "not split"
    x, weights, b = random_layer(shape)
    x[-1, -1, 0, 0] = np.nan
    weights[3, 0, 1, 1] = np.nan
    y = run(lib_h200, x, weights, b, stride, padding, pool)
    expected = reference.conv2d_bias_relu_pool(x, weights, b, stride, padding, pool)
    assert np.array_equal(np.isnan(y), np.isnan(expected)), "NaN where stage 2 has none, or none"
    assert np.isnan(y[-1, :, 0, 0]).all() and not np.isnan(y[-1, :, -1, -1]).all()
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5 * np.sqrt(c * r * s))


@pytest.mark.parametrize("shape", [(256, 6, 14, 14, 16, 5, 5, 1, 0, 2),
                                   (256, 64, 13, 13, 128, 3, 3, 1, 0, 2)])  # fmt: skip
def test_a_batch_that_fills_the_gpu_is_not_split(lib_h200, shape):
    """LeNet-5's and the Fashion CNN's conv2 at batch 256 on 132 multiprocessors: one piece, one
    launch (asked only for the scratch: no kernel runs)."""
    assert scratch_floats(lib_h200, shape) == 0


# On 132 multiprocessors, a first layer whose shallow grid leaves most of them idle: the spread
# form, a window's positions on adjacent lanes and their max by shuffles. LeNet-5's and the
# Fashion CNN's conv1 at batch 1 and 2, then odd shapes: unpooled and padded, 27 taps pooled 2x2
# over a 13-wide image (windows ending inside a block), pooled 4x4 (16 lanes a window); and
# pooled 3x3, whose 9 positions do not divide a warp: walked in one thread even there
SPREAD_SHAPES = [(1, 1, 28, 28, 6, 5, 5, 1, 2, 2), (2, 1, 28, 28, 6, 5, 5, 1, 2, 2),
                 (1, 1, 28, 28, 64, 3, 3, 1, 0, 2), (2, 1, 28, 28, 64, 3, 3, 1, 0, 2),
                 (1, 2, 9, 13, 5, 3, 3, 1, 1, 1), (2, 3, 11, 13, 7, 3, 3, 1, 1, 2),
                 (1, 1, 17, 19, 5, 3, 3, 1, 1, 4), (2, 1, 14, 13, 4, 3, 3, 1, 1, 3)]  # fmt: skip


@pytest.mark.parametrize("shape", SPREAD_SHAPES, ids=[str(s) for s in SPREAD_SHAPES])
def test_a_small_batchs_shallow_layer_spread_over_lanes_gives_the_same_bits(
    lib_h200, lib_one, shape
):
    """The spread form (132 multiprocessors) against the one-thread walk (one multiprocessor):
    the same sums, the same max over each window, so the same bits; and stage 2's values. NaN
    pixels reaching part of a window (the first image's corner: its first positions; the last
    image's middle), and a NaN weight (its filter's maps)."""
    n, c, h, w, k, r, s, stride, padding, pool = shape
    x, weights, b = random_layer(shape)
    x[0, 0, 0, 0] = x[-1, -1, h // 2, w // 2] = np.nan
    weights[3, 0, 1, 1] = np.nan
    spread = run(lib_h200, x, weights, b, stride, padding, pool)
    walked = run(lib_one, x, weights, b, stride, padding, pool)
    np.testing.assert_array_equal(spread.view(np.uint32), walked.view(np.uint32))
    expected = reference.conv2d_bias_relu_pool(x, weights, b, stride, padding, pool)
    assert np.array_equal(np.isnan(spread), np.isnan(expected)), "NaN where stage 2 has none"
    others = np.isnan(np.delete(spread, 3, axis=1))
    assert np.isnan(spread[:, 3]).all() and others.any() and not others.all()
    np.testing.assert_allclose(spread, expected, rtol=1e-5, atol=1e-5 * np.sqrt(c * r * s))


# one layer for each kernel: shallow, the product, direct
NAN_SHAPES = [(2, 1, 9, 9, 5, 3, 3, 1, 0, 2), (2, 8, 9, 9, 5, 3, 3, 1, 0, 2),
              (1, 3, 10, 9, 4, 5, 5, 1, 0, 3)]  # fmt: skip


@pytest.mark.parametrize("shape", NAN_SHAPES, ids=[str(s) for s in NAN_SHAPES])
def test_a_nan_wins_its_windows_max_and_a_nan_weight_its_filter(lib, shape):
    """A NaN pixel in the first output only, one of its pooling window's outputs: the window is
    NaN (a max that dropped the NaN would pass on the others); a NaN weight: its filter's maps."""
    *_, stride, padding, pool = shape
    x, weights, b = random_layer(shape)
    x[0, -1, 0, 0] = np.nan
    weights[3, 0, 1, 1] = np.nan
    y = run(lib, x, weights, b, stride, padding, pool)
    expected = reference.conv2d_bias_relu_pool(x, weights, b, stride, padding, pool)
    np.testing.assert_array_equal(np.isnan(y), np.isnan(expected))
    others = np.isnan(np.delete(y, 3, axis=1))
    assert np.isnan(y[:, 3]).all() and others.any() and not others.all()


def test_a_pool_larger_than_the_output_is_refused(lib):
    x, weights, b, y = (np.zeros(size, np.float32) for size in (16, 1, 1, 1))
    geometry, floats = Geometry(1, 1, 4, 4, 1, 1, 1, 1, 0, 4, 4), ctypes.c_int64(-1)
    status = lib.s2c_cuda_conv2d_bias_relu_pool(
        *(a.ctypes.data_as(V) for a in (x, weights, b, y)), None, ctypes.byref(geometry), 5
    )
    assert status == 2  # S2C_CUDA_BAD_ARGUMENT
    status = lib.s2c_cuda_conv2d_bias_relu_pool_scratch(
        ctypes.byref(geometry), 5, ctypes.byref(floats)
    )
    assert status == 2


# (planted tier, the check that must fail, a pattern its message must match)
PLANTED_BUGS = [
    ("fused_relu_before_bias", "correct",
     r"^conv2d_bias_relu_pool: y\[[\d, ]+\] expected -?[\d.]+, received -?[\d.]+; \d+ of \d+ "
     r"elements differ"),
    ("fused_pool_edge", "correct",
     r"^conv2d_bias_relu_pool: y\[\d+, \d+, \d+, 1\] expected [\d.]+, received [\d.]+; .*"
     r"\[case 3 of \d+: x\[2, 2, 10, 8\]"),  # the first case whose OW (5) leaves a column over
    ("fused_tail_channel", "correct",
     r"^conv2d_bias_relu_pool: y\[0, 16, 0, 0\] was never written \(it still holds the nan the "
     r"grader fills new outputs with\), expected [\d.]+; \d+ of \d+ elements never written "
     r"\[case 7 of"),
    ("fused_relu_drops_nan", "nan",
     r"^conv2d_bias_relu_pool: a NaN in (x|w|b)\[[\d, ]+\] came out as [\d.]+ in y\[[\d, ]+\]; "
     r"PyTorch keeps the NaN"),
    ("fused_default_pool", "correct",
     r"^conv2d_bias_relu_pool: y has shape \[1, 1, 1, 1\], expected \[1, 1, 3, 3\].*"
     r"pool=1 \(default, not passed\)"),
]  # fmt: skip


@pytest.mark.parametrize(("bug", "check", "pattern"), PLANTED_BUGS,
                         ids=[bug[0] for bug in PLANTED_BUGS])  # fmt: skip
def test_a_planted_bug_in_the_fused_op_fails_with_a_clear_message(tmp_path, bug, check, pattern):
    op = "conv2d_bias_relu_pool"
    status, results, printed = run_grader(tmp_path, 2, impl=str(PLANTED / bug), ops=(op,),
                                          checks=(check,), isolate=True, timeout=10)  # fmt: skip
    failed = [r for r in results if r.status == "failed" and r.check == check]
    assert status == 1
    assert failed, f"no failed {check} check:\n{printed}"
    assert any(re.search(pattern, r.message) for r in failed), failed[0].message

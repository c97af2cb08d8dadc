"""Inference's fused conv + bias + ReLU + max-pool kernel in CUDA C, run without a GPU, and planted
bugs in the op that the grader must catch.

The nvcc variant's kernel (stage4_cuda/csrc/inference/conv_bias_relu_pool.cu) runs on the CPU
emulation of CUDA (tests/cuda_emulation/: a block's threads are fibers, __syncthreads a barrier)
against stage 2, its output pre-filled with NaN: its tiled kernel at odd shapes, across several
tiles of a plane, channel chunks and a partial last group of filters, and its direct kernel where
the tiles cannot go (a pooling window of more than 256 outputs). The GPU's own run is the
grader's: `python -m grader --stage 4 --variant nvcc --ops conv2d_bias_relu_pool`.

Then tests/planted/fused_*: stage 2 with the fused op broken as a learner might break it; the
grader fails each with a message naming the wrong element.
"""

import ctypes
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from cuda_emulated import emulated
from test_grader_planted_bugs import PLANTED, run_grader

import stage2_numpy as reference

REPO = Path(__file__).resolve().parent.parent
CSRC = REPO / "stage4_cuda" / "csrc"
EMULATION = REPO / "tests" / "cuda_emulation"
SOURCES = ["inference/conv_bias_relu_pool.cu", "errors.cu"]
HEADERS = ["common.h", "s2c_cuda.h", "conv/conv.cuh"]
V = ctypes.c_void_p


class Geometry(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_int64)
        for name in (
            "n channels height width filters kh kw stride padding out_height out_width".split()
        )
    ]


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed here")
    folder = tmp_path_factory.mktemp("emulated_inference")
    for name in [*SOURCES, *HEADERS]:
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(emulated((CSRC / name).read_text()))
    library = folder / "libinference.so"
    command = ["g++", "-std=c++20", "-O1", "-pthread", "-shared", "-fPIC", "-I", EMULATION,
               "-I", folder, "-include", "math.h", "-include", "cuda_runtime.h",
               "-include", "warp_shuffle.h", "-x", "c++", *[folder / n for n in SOURCES],
               "-o", library]  # fmt: skip
    built = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr
    loaded = ctypes.CDLL(str(library))
    loaded.s2c_cuda_conv2d_bias_relu_pool.argtypes = [V] * 5 + [ctypes.c_int64]
    return loaded


# (n, c, h, w, k, r, s, stride, padding, pool): rows and columns no window covers, a stride of 2,
# pool 1 and 3, LeNet-5's first layer (several tiles down the plane, the last one partial), 70
# channels (two chunks of shared memory) and 9 or 19 filters (a partial group of 8), and a pool of
# 17 (289 outputs a window: the direct kernel)
SHAPES = [(2, 3, 7, 6, 4, 3, 3, 1, 1, 2), (2, 2, 10, 8, 3, 3, 2, 2, 1, 2),
          (1, 3, 6, 7, 2, 5, 5, 1, 2, 3), (1, 16, 4, 3, 16, 3, 3, 1, 1, 1),
          (1, 1, 28, 28, 6, 5, 5, 1, 2, 2), (1, 70, 6, 6, 9, 3, 3, 1, 1, 2),
          (1, 5, 13, 11, 19, 3, 3, 1, 1, 2), (1, 2, 18, 19, 3, 1, 2, 1, 0, 17)]  # fmt: skip


@pytest.mark.parametrize("shape", SHAPES, ids=[str(s) for s in SHAPES])
def test_the_kernel_matches_stage_2_on_a_cpu_emulation(lib, shape):
    n, c, h, w, k, r, s, stride, padding, pool = shape
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    x[0, 0, h // 2, w // 2] = np.nan  # one NaN pixel: its outputs stay NaN
    weights = (rng.standard_normal((k, c, r, s)) / np.sqrt(c * r * s)).astype(np.float32)
    b = rng.standard_normal(k).astype(np.float32)
    oh, ow = (h + 2 * padding - r) // stride + 1, (w + 2 * padding - s) // stride + 1
    y = np.full((n, k, oh // pool, ow // pool), np.nan, np.float32)
    geometry = Geometry(n, c, h, w, k, r, s, stride, padding, oh, ow)
    status = lib.s2c_cuda_conv2d_bias_relu_pool(
        *(a.ctypes.data_as(V) for a in (x, weights, b, y)), ctypes.byref(geometry), pool
    )
    assert status == 0
    expected = reference.conv2d_bias_relu_pool(x, weights, b, stride, padding, pool)
    assert np.array_equal(np.isnan(y), np.isnan(expected)), "NaN where stage 2 has none, or none"
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5 * np.sqrt(c * r * s))


def test_a_pool_larger_than_the_output_is_refused(lib):
    x, weights, b, y = (np.zeros(size, np.float32) for size in (16, 1, 1, 1))
    geometry = Geometry(1, 1, 4, 4, 1, 1, 1, 1, 0, 4, 4)
    status = lib.s2c_cuda_conv2d_bias_relu_pool(
        *(a.ctypes.data_as(V) for a in (x, weights, b, y)), ctypes.byref(geometry), 5
    )
    assert status == 2  # S2C_CUDA_BAD_ARGUMENT


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

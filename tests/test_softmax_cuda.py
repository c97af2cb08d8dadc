"""The softmax ladder in CUDA C (stage4_cuda/csrc/softmax/), checked without a GPU.

Every rung (softmax and log_softmax) and the fused cross-entropy compute the right values on a CPU
emulation of CUDA (tests/cuda_emulation/: a block's threads are fibers, __syncthreads a barrier,
a warp's shuffles another: warp_shuffle.h), for rows at every offset from a 16-byte
boundary, logits of 1e3, NaN and -inf in a row, and inputs apart from the outputs' alignment
(softmax_harness.cpp). Each rung file says what it changes and the command that times it. Speed
needs a GPU: `python -m bench.softmax_ladder` checks each rung there and times it beside a
copy.
"""

import shutil
import subprocess

import pytest
from cuda_emulated import emulated

from stage4_cuda.nvcc_impl import SOFTMAX_KERNELS
from tools.exercises import REPO_ROOT

SOFTMAX_DIR = REPO_ROOT / "stage4_cuda" / "csrc" / "softmax"
RUNGS = sorted(SOFTMAX_DIR.glob("0*.cu"))
EMULATION = REPO_ROOT / "tests" / "cuda_emulation"


def test_the_ladder_has_five_numbered_rungs_each_saying_how_to_time_it():
    names = [*SOFTMAX_KERNELS, "cross_entropy"]
    assert [path.stem for path in RUNGS] == [f"{i:02d}_{n}" for i, n in enumerate(names, 1)]
    for path, name in zip(RUNGS, names, strict=True):
        text = path.read_text()
        assert text.startswith(f"/* {path.name} -- rung {RUNGS.index(path) + 1}: ")
        assert "What it changes" in text or "What it does" in text
        assert "Cost model" in text
        assert f"python -m bench.softmax_ladder --rungs {name} */" in text


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed here")
@pytest.mark.parametrize("threads", [1024, 64], ids=["1024 threads a row", "64 threads a row"])
def test_every_rung_computes_softmax_and_the_cross_entropy_on_a_cpu_emulation(tmp_path, threads):
    # rungs 4 and 5 hold a row in registers, up to HELD_MAX float4s a thread, and read what is
    # left where it lies (softmax.cuh, HeldRow). The harness's rows (up to 4099 floats) take 1 or
    # 2 float4s a thread of 1024; a second build with at most 64 threads a row takes 1, 8 and 12,
    # and reads the rest of its rows of 4099 floats from memory twice.
    for path in RUNGS:
        (tmp_path / path.name).write_text(emulated(path.read_text()))
    assert "<<<" not in "".join(p.read_text() for p in tmp_path.glob("*.cu"))
    command = ["g++", "-std=c++20", "-O1", "-pthread", "-I", EMULATION, "-I", SOFTMAX_DIR]
    command += ["-I", SOFTMAX_DIR.parent, "-include", "math.h", "-include", "cuda_runtime.h"]
    command += ["-include", "warp_shuffle.h", f"-DONLINE_THREADS={threads}"]
    command += ["-x", "c++", *sorted(tmp_path.glob("*.cu"))]
    command += [SOFTMAX_DIR.parent / "errors.cu", EMULATION / "softmax_harness.cpp"]
    built = subprocess.run([*command, "-o", tmp_path / "harness"], capture_output=True,
                           text=True, timeout=600)  # fmt: skip
    assert built.returncode == 0, built.stdout + built.stderr
    ran = subprocess.run([tmp_path / "harness"], capture_output=True, text=True, timeout=600)
    # 11 inputs (5 shapes, 4 of them again from row 1, 2 with NaN and -inf): 8 softmax checks
    # (4 rungs, softmax and log_softmax) and 3 cross-entropy ones (terms, gradient, both) each
    assert ran.returncode == 0 and ran.stdout.endswith(f"{11 * 11} passed, 0 failed\n"), ran.stdout

"""The conv2d ladder in CUDA C (stage4_cuda/csrc/conv/), run without a GPU.

Rungs 1 (direct), 3 (implicit GEMM), 4 (Winograd), 5 (FFT, on fake_cufft.cpp's exact DFTs), 6
(Winograd F(4x4, 3x3)) and the backward compute the right numbers on the CPU emulation of CUDA
(tests/cuda_emulation/: a block's threads are fibers, __syncthreads a barrier, as for the SGEMM
ladder), at the curriculum's layer shapes and at odd ones (tests/cuda_emulation/conv_harness.cpp).
Speed, and the GPU's own rounding, need a GPU: tests/test_stage4_nvcc.py and
`python -m bench.conv_ladder`.
"""

import os
import shutil
import subprocess

import pytest
from cuda_emulated import emulated

from tools.exercises import REPO_ROOT

CSRC = REPO_ROOT / "stage4_cuda" / "csrc"
EMULATION = REPO_ROOT / "tests" / "cuda_emulation"
# What the harness builds: dispatch.cu's choices and scratch sizes, every rung but 2 (which calls
# the SGEMM ladder), the backward's files, the headers they include, and errors.cu's messages.
SOURCES = ["conv/dispatch.cu", "errors.cu", "conv/01_direct.cu", "conv/03_implicit_gemm.cu",
           "conv/04_winograd.cu", "conv/05_fft.cu", "conv/06_winograd_4x4.cu",
           "conv/07_shallow.cu", "conv/backward.cu", "conv/backward_dw.cu", "conv/backward_dx.cu",
           "conv/nan_recompute.cu"]  # fmt: skip
HEADERS = ["common.h", "s2c_cuda.h", "conv/conv.cuh", "tiled_product.cuh", "reduce.cuh",
           "conv/cufft_runtime.h"]  # fmt: skip


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed here")
def test_the_rungs_and_the_backward_compute_the_convolution_on_a_cpu_emulation(tmp_path):
    for name in [*SOURCES, *HEADERS]:
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(emulated((CSRC / name).read_text()))
    assert "<<<" not in "".join(p.read_text() for p in tmp_path.rglob("*.c*"))
    fake_cufft = tmp_path / "libfake_cufft.so"
    library = ["g++", "-O2", "-shared", "-fPIC", EMULATION / "fake_cufft.cpp", "-o", fake_cufft]
    built = subprocess.run(library, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr
    command = ["g++", "-std=c++20", "-O1", "-pthread", "-I", EMULATION, "-I", tmp_path]
    command += ["-include", "cuda_runtime.h", "-include", "warp_shuffle.h", "-x", "c++"]
    command += [tmp_path / name for name in SOURCES]
    command += [EMULATION / "conv_harness.cpp", "-ldl", "-o", tmp_path / "harness"]
    built = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    # On an H100's 132 multiprocessors, then on 2: the products (tiled_product.cuh) that would
    # leave multiprocessors idle take small tiles at these sizes, and on 2 their largest ones,
    # whose threads read their rows in runs of 4.
    for multiprocessors in ("132", "2"):
        env = {**os.environ, "EMULATED_MULTIPROCESSORS": multiprocessors}
        ran = subprocess.run([tmp_path / "harness", fake_cufft], capture_output=True, text=True,
                             timeout=600, env=env)  # fmt: skip
        # conv_harness.cpp's main: 17 shapes, each direct, implicit_gemm and the backward's 3
        # outputs (dx by its definition up to 8 channels, dx and dw by Winograd or the implicit
        # products above, dw of one-channel 3x3 layers by its own kernel); winograd and
        # winograd_4x4 on their 8 shapes of 3x3 stride 1, shallow on its 7 of 32 taps or fewer;
        # fft, a NaN pixel through each forward rung but fft, dx with a NaN in dy and with a NaN
        # weight, and dw with a NaN pixel, on the 16 shapes small enough for the emulation
        passed = ran.returncode == 0 and ran.stdout.endswith("225 passed, 0 failed\n")
        assert passed, f"{multiprocessors} multiprocessors:\n{ran.stdout}"


@pytest.mark.oracle
def test_the_bench_refuses_a_rung_that_does_not_exist(capsys):
    pytest.importorskip("torch")
    from bench import conv_ladder

    with pytest.raises(SystemExit) as stopped:
        conv_ladder.main(["--kernel", "best"])
    assert stopped.value.code == 2
    assert "--kernel 'best' is not a rung; the rungs are direct, " in capsys.readouterr().err

"""CUDA C as the CPU emulation of CUDA (tests/cuda_emulation/) compiles it.

A launch `kernel<<<grid, block[, shared bytes]>>>(arguments)` becomes
`emulate::Launch(grid, block[, shared bytes]).run(kernel, arguments)`, and a kernel's dynamic
shared memory (declared as SGEMM rung 8 declares it) the emulation's
buffer for the launch.
"""

import ctypes
import re
import shutil
import subprocess
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
CSRC = TESTS.parent / "stage4_cuda" / "csrc"  # the nvcc library's sources
EMULATION = TESTS / "cuda_emulation"

LAUNCH = re.compile(r"([\w:]+(?:<[^<>;]*>)?)<<<(.*?)>>>\(")
DYNAMIC_SHARED = "extern __shared__ __align__(16) float shared[];"


def emulated(source):
    """`source` (the text of a .cu or .cuh file) with its launches and dynamic shared memory
    rewritten for the emulation."""
    text = LAUNCH.sub(r"emulate::Launch(\2).run(\1, ", source)
    return text.replace(DYNAMIC_SHARED, "float *shared = emulate::dynamic_shared();")


def build_library(folder, csrc, emulation, sources):
    """Compile `sources` (paths under the folder `csrc`) for the emulation, into
    folder/libemulated.so; returns its path, or raises AssertionError with g++'s errors."""
    for path in csrc.rglob("*.cu*"):
        (folder / path.relative_to(csrc)).parent.mkdir(exist_ok=True)
        (folder / path.relative_to(csrc)).write_text(emulated(path.read_text()))
    for header in csrc.glob("*.h"):
        shutil.copy(header, folder)
    library = folder / "libemulated.so"
    # math.h: CUDA declares expf, sqrtf, INFINITY ... without an include
    command = ["g++", "-std=c++20", "-O1", "-pthread", "-fno-strict-aliasing", "-shared", "-fPIC",
               "-I", emulation, "-I", folder, "-include", "math.h", "-include", "cuda_runtime.h",
               "-include", "warp_shuffle.h", "-x", "c++", *[folder / name for name in sources],
               "-o", library]  # fmt: skip
    built = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr
    return library


def emulated_library(folder, sources):
    """The nvcc library's `sources` (paths under stage4_cuda/csrc/) built for the emulation in
    `folder` and loaded (ctypes); the calling test is skipped where g++ is not installed."""
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed here")
    return ctypes.CDLL(str(build_library(folder, CSRC, EMULATION, sources)))

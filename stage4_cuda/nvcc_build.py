"""Build the nvcc variant's shared library with nvcc: stage4_cuda/nvcc_impl/_build/libs2c_cuda.so
(in a folder of its own, which no import machinery mistakes for a Python extension module).

    python -m stage4_cuda.nvcc_build              (`make build`, through `python -m tiers build`)
    python -m stage4_cuda.nvcc_build --if-stale   (only when a source is newer than the library)

Every csrc/**/*.cu file is compiled into one library, except a file defining `main` (a benchmark
program, such as the SGEMM ladder's in csrc/sgemm/). Flags: -O3, position-independent code, each
host thread's own default stream (`--default-stream per-thread`, which CUDA graphs can capture),
machine code for sm_80 (A100) and sm_90 (H100), and compute_90 PTX that the driver compiles for a
newer GPU at load time. The library is loaded with cffi in ABI mode (nvcc_impl/_library.py), so
no Python extension is compiled. No GPU is needed to build, only nvcc (the CUDA toolkit).

Without nvcc the build says so and succeeds, building nothing: the variant then reports itself
unavailable with the reason (`available()`), and the rest of the project works as before. A
library older than its sources with no nvcc to rebuild it is an error (never run silently).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from stage4_cuda import kernel_waits

PACKAGE_DIR = Path(__file__).resolve().parent
CSRC = PACKAGE_DIR / "csrc"
LIBRARY = PACKAGE_DIR / "nvcc_impl" / "_build" / "libs2c_cuda.so"
HEADER_SUFFIXES = (".h", ".cuh")

GENCODE = [
    "-gencode=arch=compute_80,code=sm_80",
    "-gencode=arch=compute_90,code=sm_90",
    "-gencode=arch=compute_90,code=compute_90",  # PTX: newer GPUs compile it when loading
]
# --default-stream per-thread: kernels go to the calling thread's default stream, which CUDA graphs
# can capture (csrc/graph.cu)
# --threads 0: the three targets compiled in parallel, one per core
FLAGS = ["-O3", "-shared", "-Xcompiler=-fPIC", "-std=c++17", "--default-stream", "per-thread",
         "--threads", "0", *GENCODE]
LIBRARIES = ["-ldl"]  # dlopen: cuFFT is loaded at run time (csrc/conv/cufft_runtime.h says why)
DEFINES_MAIN = re.compile(r"^\s*int\s+main\s*\(", re.MULTILINE)


def nvcc():
    """The path of nvcc ($NVCC, else the one on PATH, else CUDA's default place), or None."""
    candidates = [os.environ.get("NVCC"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"]
    return next((path for path in candidates if path and Path(path).is_file()), None)


def sources():
    """Every .cu file under csrc/ that belongs in the library, sorted: not a program's main."""
    found = sorted(CSRC.rglob("*.cu"))
    return [path for path in found if not DEFINES_MAIN.search(path.read_text(encoding="utf-8"))]


def inputs():
    """What the library is built from: the sources, the headers, the folders (a file added or
    removed changes its folder's time) and this script."""
    headers = [path for path in CSRC.rglob("*") if path.suffix in HEADER_SUFFIXES]
    folders = [CSRC, *(path for path in CSRC.rglob("*") if path.is_dir())]
    return [*CSRC.rglob("*.cu"), *headers, *folders, Path(__file__)]


def stale_reason():
    """Why the library must be rebuilt ("" when it is up to date)."""
    if not LIBRARY.exists():
        return "the library is not built"
    built = LIBRARY.stat().st_mtime
    newer = sorted(path.name for path in inputs() if path.stat().st_mtime > built)
    return f"changed since the last build: {', '.join(newer)}" if newer else ""


def command(compiler, output):
    """The nvcc command line that builds the library into `output`."""
    include = ["-I", str(CSRC), "-I", str(PACKAGE_DIR.parent / "stage3_c" / "csrc")]
    return [compiler, *FLAGS, *include, "-o", str(output), *map(str, sources()), *LIBRARIES]


def build(compiler, verbose=False):
    """Compile the library (into a temporary file, then moved in place atomically: a process
    loading it meanwhile gets the old or the new one); returns its path."""
    LIBRARY.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=LIBRARY.parent) as scratch:
        staged = Path(scratch) / LIBRARY.name
        line = command(compiler, staged)
        if verbose:
            print(" ".join(line))
        subprocess.run(line, check=True)
        os.replace(staged, LIBRARY)
    return LIBRARY


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m stage4_cuda.nvcc_build", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--if-stale", action="store_true", help="build only when out of date")
    parser.add_argument("--verbose", action="store_true", help="show the nvcc command")
    args = parser.parse_args(argv)
    reason = stale_reason()
    if args.if_stale and not reason:
        return 0
    unsafe = kernel_waits.problems(CSRC)
    if unsafe:
        print("error: launched overlapped, these kernels must call wait_for_previous_kernel() "
              "first, before they touch memory (csrc/common.h, \"Overlapped launches\"): "
              + ", ".join(unsafe), file=sys.stderr)  # fmt: skip
        return 1
    compiler = nvcc()
    if compiler is None and LIBRARY.exists() and reason:  # never run an old build silently
        print(f"error: the nvcc library is out of date ({reason}) and nvcc (the CUDA toolkit) is "
              "not found to rebuild it", file=sys.stderr)
        return 1
    if compiler is None:
        if not args.if_stale:  # `make build`: say why nothing was built; a load says it itself
            print("nvcc variant not built: nvcc (the CUDA toolkit) not found on PATH; the numba "
                  "variant needs none, and `available()` of stage4_cuda.nvcc_impl says the same")
        return 0
    if args.if_stale:  # a minute or more of nvcc: say so before it starts
        print(f"building the nvcc library: {reason} ...", flush=True)
    try:
        target = build(compiler, args.verbose)
    except (subprocess.CalledProcessError, OSError) as error:
        print(f"error: building the nvcc variant failed: {error}", file=sys.stderr)
        return 1
    print(f"built {target.relative_to(PACKAGE_DIR.parent)} ({' '.join(FLAGS)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

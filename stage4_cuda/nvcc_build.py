"""Build the nvcc variant's shared library with nvcc: stage4_cuda/nvcc_impl/_build/libs2c_cuda.so
(in a folder of its own, which no import machinery mistakes for a Python extension module).

    python -m stage4_cuda.nvcc_build              (`make build`, through `python -m tiers build`)
    python -m stage4_cuda.nvcc_build --if-stale   (only when a source is newer than the library,
                                                   or it lacks machine code for a target card)

Every csrc/**/*.cu file is compiled into one library, except a file defining `main` (a benchmark
program, such as the SGEMM ladder's in csrc/sgemm/). Flags: -O3, position-independent code, each
host thread's own default stream (`--default-stream per-thread`, which CUDA graphs can capture),
machine code for each target card and PTX for the newest of them, which the driver compiles for a
newer GPU at load time. The targets are compute capabilities: the environment variable
S2C_CUDA_ARCH when set ("75" for a T4 or an RTX 20xx, "8.6", "sm_90", several separated by commas
or spaces), else the cards `nvidia-smi --query-gpu=compute_cap` lists, else (no GPU to ask) sm_80
(A100) and sm_90 (H100). A library without machine code for one of the targets is stale. The
library is loaded with cffi in ABI mode (nvcc_impl/_library.py), so no Python extension is
compiled. No GPU is needed to build, only nvcc (the CUDA toolkit).

Without nvcc the build says so and succeeds, building nothing: the variant then reports itself
unavailable with the reason (`available()`), and the rest of the project works as before. A
library older than its sources with no nvcc to rebuild it is an error (never run silently); one
built for other cards is left as it is (its PTX may run on a newer card; an older one reports
CUDA's "no kernel image" error at the first launch).
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
TARGETS_BUILT = LIBRARY.with_name("targets.txt")  # the compute capabilities the library holds
HEADER_SUFFIXES = (".h", ".cuh")

ARCH_VARIABLE = "S2C_CUDA_ARCH"
DEFAULT_ARCHES = ("80", "90")  # no card to ask (a machine without a GPU): A100 and H100
ARCH = re.compile(r"^(?:sm_|compute_)?(\d+)\.?(\d)$")  # 75, 7.5, sm_75, compute_75

# --default-stream per-thread: kernels go to the calling thread's default stream, which CUDA graphs
# can capture (csrc/graph.cu)
# --threads 0: the targets compiled in parallel, one per core
# --diag-suppress 177 (a function declared but never referenced): in a workspace, the helpers of
# a kernel still to write are unused until it is; dozens of such warnings would hide nvcc's errors
# --diag-error 117,940 (a function returning a status returns none): its caller would read garbage,
# perhaps as success
FLAGS = ["-O3", "-shared", "-Xcompiler=-fPIC", "-std=c++17", "--default-stream", "per-thread",
         "--threads", "0", "--diag-suppress", "177", "--diag-error", "117,940"]  # fmt: skip
LIBRARIES = ["-ldl"]  # dlopen: cuFFT is loaded at run time (csrc/conv/cufft_runtime.h says why)
DEFINES_MAIN = re.compile(r"^\s*int\s+main\s*\(", re.MULTILINE)


def nvcc():
    """The path of nvcc ($NVCC, else the one on PATH, else CUDA's default place), or None."""
    candidates = [os.environ.get("NVCC"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"]
    return next((path for path in candidates if path and Path(path).is_file()), None)


def parse_arches(text, source=ARCH_VARIABLE):
    """Compute capabilities written as "75", "7.5", "sm_75" (separated by commas or spaces) ->
    ("75", ...), sorted and without repeats; a ValueError names `source` for anything else."""
    found = []
    for word in text.replace(",", " ").split():
        match = ARCH.match(word.strip().lower())
        if match is None:
            raise ValueError(f"{source}: expected compute capabilities such as 75, 8.6 or sm_90 "
                             f"(several separated by commas), got {word!r}")  # fmt: skip
        found.append(match[1] + match[2])
    if not found:
        raise ValueError(f"{source}: expected at least one compute capability, got {text!r}")
    return tuple(sorted(set(found), key=int))


def detected_arches():
    """The compute capabilities of the cards nvidia-smi lists (() without nvidia-smi or a card)."""
    nvidia_smi = shutil.which("nvidia-smi")
    if nvidia_smi is None:
        return ()
    try:
        done = subprocess.run([nvidia_smi, "--query-gpu=compute_cap", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30)  # fmt: skip
        if done.returncode != 0:
            return ()
        return parse_arches(done.stdout, "nvidia-smi --query-gpu=compute_cap")
    except (OSError, subprocess.TimeoutExpired, ValueError):  # no driver, a hung or odd answer
        return ()


def arches(environ=None):
    """The compute capabilities to build for: S2C_CUDA_ARCH, else the cards', else the defaults."""
    asked = (os.environ if environ is None else environ).get(ARCH_VARIABLE, "").strip()
    if asked:
        return parse_arches(asked)
    return detected_arches() or DEFAULT_ARCHES


def gencode(targets):
    """nvcc's flags for `targets` ("75", ...): machine code for each, and PTX of the newest, which
    the driver compiles when loading on a newer card (never an older one)."""
    machine = [f"-gencode=arch=compute_{arch},code=sm_{arch}" for arch in targets]
    return [*machine, f"-gencode=arch=compute_{targets[-1]},code=compute_{targets[-1]}"]


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


def built_arches():
    """The compute capabilities the library was built for (a build that did not record them was
    built for the defaults)."""
    if not TARGETS_BUILT.exists():
        return DEFAULT_ARCHES
    return parse_arches(TARGETS_BUILT.read_text(encoding="utf-8"), str(TARGETS_BUILT))


def cards(targets):
    """("75", "86") -> "sm_75 sm_86"."""
    return " ".join(f"sm_{arch}" for arch in targets)


def changed_reason():
    """Why the library is older than what it is built from ("" when it is not)."""
    if not LIBRARY.exists():
        return "the library is not built"
    built = LIBRARY.stat().st_mtime
    newer = sorted(path.name for path in inputs() if path.stat().st_mtime > built)
    return f"changed since the last build: {', '.join(newer)}" if newer else ""


def cards_reason(targets):
    """Why the library lacks machine code for one of `targets` ("" when it has all)."""
    missing = [arch for arch in targets if arch not in built_arches()]
    if not missing:
        return ""
    return f"built for {cards(built_arches())}, not for {cards(missing)} ({ARCH_VARIABLE}, " \
           "else the GPU's)"  # fmt: skip


def stale_reason(targets=None):
    """Why the library must be rebuilt for `targets` (default: arches()); "" when up to date."""
    return changed_reason() or cards_reason(arches() if targets is None else targets)


def command(compiler, output, targets):
    """The nvcc command line that builds the library for `targets` into `output`."""
    return [compiler, *FLAGS, *gencode(targets), "-I", str(CSRC), "-o", str(output),
            *map(str, sources()), *LIBRARIES]  # fmt: skip


def build(compiler, targets, verbose=False):
    """Compile the library for `targets` (into a temporary file, then moved in place atomically:
    a process loading it meanwhile gets the old or the new one); returns the command line."""
    LIBRARY.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=LIBRARY.parent) as scratch:
        staged = Path(scratch) / LIBRARY.name
        line = command(compiler, staged, targets)
        if verbose:
            print(" ".join(line))
        subprocess.run(line, check=True)
        os.replace(staged, LIBRARY)
        TARGETS_BUILT.write_text(" ".join(targets) + "\n", encoding="utf-8")
    return line


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m stage4_cuda.nvcc_build", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--if-stale", action="store_true", help="build only when out of date")
    parser.add_argument("--verbose", action="store_true", help="show the nvcc command")
    args = parser.parse_args(argv)
    try:
        targets = arches()
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    reason = stale_reason(targets)
    if args.if_stale and not reason:
        return 0
    unsafe = kernel_waits.problems(CSRC)
    if unsafe:
        print("error: launched overlapped, these kernels must call wait_for_previous_kernel() "
              "first, before they touch memory (csrc/common.h, \"Overlapped launches\"): "
              + ", ".join(unsafe), file=sys.stderr)  # fmt: skip
        return 1
    compiler = nvcc()
    if compiler is None and LIBRARY.exists() and changed_reason():  # never run old code silently
        print(f"error: the nvcc library is out of date ({reason}) and nvcc (the CUDA toolkit) is "
              "not found to rebuild it", file=sys.stderr)
        return 1
    if compiler is None:  # a library built for other cards may still run there (its PTX)
        if not args.if_stale:  # `make build`: say why nothing was built; a load says it itself
            print("nvcc variant not built: nvcc (the CUDA toolkit) not found on PATH; the numba "
                  "variant needs none, and `available()` of stage4_cuda.nvcc_impl says the same")
        return 0
    if args.if_stale:  # a minute or more of nvcc: say so before it starts
        print(f"building the nvcc library: {reason} ...", flush=True)
    try:
        build(compiler, targets, args.verbose)
    except (subprocess.CalledProcessError, OSError) as error:
        print(f"error: building the nvcc variant failed: {error}", file=sys.stderr)
        return 1
    flags = " ".join([*FLAGS, *gencode(targets)])
    print(f"built {LIBRARY.relative_to(PACKAGE_DIR.parent)} ({flags})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

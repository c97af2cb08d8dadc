"""Every kernel of the nvcc library waits for the previous kernel first (csrc/common.h,
"Overlapped launches"); the build refuses one that does not (nvcc_build.py).

A kernel launched with launch_overlapped may start while the kernel before it is still running,
so its threads must call wait_for_previous_kernel() before they touch global memory, or they read
inputs not yet written or overwrite what that kernel still reads: wrong numbers now and then on a
GPU, never on the CPU emulation, and nothing a test of the kernel alone would show. So the rule is
read from the sources: outside the SGEMM ladder (csrc/sgemm/, whose kernels launch as written in
CUDA, `kernel<<<grid, block>>>(...)`), a kernel's first statement is the wait.
"""

import re

COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
# `__global__ ... name(parameters) {`: the name is the last one before the parameters
DEFINITION = re.compile(r"__global__[^;{]*\b(\w+)\s*\([^;{()]*\)\s*\{", re.S)
WAIT = "wait_for_previous_kernel();"
LADDER = "sgemm"  # the folder of csrc/ whose launches are not overlapped


def code(text):
    """`text` (C or CUDA source) without its comments."""
    return COMMENT.sub(" ", text)


def kernels_not_waiting_first(text):
    """The names of the kernels defined in `text` whose first statement is not the wait."""
    text = code(text)
    return [match.group(1) for match in DEFINITION.finditer(text)
            if not text[match.end():].lstrip().startswith(WAIT)]  # fmt: skip


def library_sources(csrc):
    """The library's sources and headers under folder `csrc`, the SGEMM ladder's left out."""
    return sorted(path for path in csrc.rglob("*")
                  if path.suffix in (".cu", ".cuh", ".h") and LADDER not in
                  path.relative_to(csrc).parts[:-1])  # fmt: skip


def problems(csrc):
    """'file: kernel' for every kernel under `csrc` that does not wait first."""
    return [f"{path.relative_to(csrc)}: {name}" for path in library_sources(csrc)
            for name in kernels_not_waiting_first(path.read_text(encoding="utf-8"))]  # fmt: skip

"""CUDA C as the CPU emulation of CUDA (tests/cuda_emulation/) compiles it.

A launch `kernel<<<grid, block[, shared bytes]>>>(arguments)` becomes
`emulate::Launch(grid, block[, shared bytes]).run(kernel, arguments)`, and a kernel's dynamic
shared memory (declared as SGEMM rung 8 declares it) the emulation's
buffer for the launch.
"""

import re

LAUNCH = re.compile(r"([\w:]+(?:<[^<>;]*>)?)<<<(.*?)>>>\(")
DYNAMIC_SHARED = "extern __shared__ __align__(16) float shared[];"


def emulated(source):
    """`source` (the text of a .cu or .cuh file) with its launches and dynamic shared memory
    rewritten for the emulation."""
    text = LAUNCH.sub(r"emulate::Launch(\2).run(\1, ", source)
    return text.replace(DYNAMIC_SHARED, "float *shared = emulate::dynamic_shared();")

"""Stage 4: the op contract on an NVIDIA GPU, in two variants (weeks 14-17).

`import stage4_cuda` gives the nvcc variant (CUDA C++ kernels built into a shared library) when it
is built, else the numba one (kernels written in Python with numba.cuda). The grader and the
trainer name a variant explicitly (`--variant numba|nvcc`); this package-level choice is for a
quick `import stage4_cuda as gpu`.
"""

try:
    from .nvcc_impl import *  # noqa: F403  (the variant's whole op table)
    from .nvcc_impl import available as _nvcc_available

    if not _nvcc_available()[0]:
        raise ImportError("the nvcc library is not built")
except ImportError:
    from .numba_impl import *  # noqa: F403

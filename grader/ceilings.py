"""The GPU's ceilings, measured here and now: copy bandwidth, FP32 matrix throughput and int8
matrix throughput; and the time of an empty kernel, the least that any launch takes.

Every GPU op is reported as a share of its roofline bound, and a bound is only as true as the
ceilings under it: datasheet figures are not what this card, at this clock, in this machine
reaches. So the grader measures both, once per process:
- bandwidth: a device-to-device copy of COPY_BYTES (the driver's, and PyTorch's when installed:
  the faster), counting bytes read plus bytes written;
- FP32 throughput: a SGEMM of GEMM_SIZE^3 by cuBLAS through PyTorch or CuPy (TF32 off), or, with
  neither installed, the device's own figure: SMs x clock x FP32 lanes per SM x 2 (an FMA is two
  FLOPs), which no kernel reaches, so shares against it read lower;
- int8 throughput: an int8 x int8 -> int32 GEMM of GEMM_SIZE^3 by cuBLAS through PyTorch
  (torch._int_mm, on the int8 tensor cores), which bounds the int8 ops (an int8 kernel on tensor
  cores passes the FP32 ceiling by far); without PyTorch none, and the int8 ops are bounded by
  their bytes alone;
- launch: a kernel that does nothing, timed as an op is (grader/gpu_timing.py).
"""

import functools
from dataclasses import asdict, dataclass

import numpy as np

from .gpu_timing import measure_gpu

COPY_BYTES = 1 << 30  # 1 GiB: far beyond any L2, long enough to hide the launch
GEMM_SIZE = 8192
# FP32 lanes per SM by compute capability (CUDA C Programming Guide, "Arithmetic Instructions").
FP32_LANES = {(7, 0): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128, (8, 9): 128, (9, 0): 128}


@dataclass(frozen=True)
class Ceilings:
    """Bytes per second a copy reaches, FLOP/s an FP32 GEMM reaches and int8 operations per
    second an int8 GEMM reaches (None: not measured), where each came from, and the seconds an
    empty kernel takes between the timer's events."""

    device: str
    bandwidth: float
    flops: float
    flops_source: str
    launch: float
    int8_ops: float | None = None
    int8_source: str = "not measured (PyTorch absent): int8 ops bounded by their bytes"

    def as_dict(self):
        return asdict(self)


def _copy_bandwidth():
    """The best of the driver's device-to-device copy and PyTorch's copy kernel (when present):
    a ceiling is the most that was reached."""
    from numba import cuda

    source = cuda.device_array(COPY_BYTES // 4, dtype=np.float32)
    target = cuda.device_array_like(source)
    seconds = [measure_gpu(lambda: target.copy_to_device(source))[0].median]
    try:
        import torch

        if torch.cuda.is_available():
            a = torch.empty(COPY_BYTES // 4, device="cuda")
            b = torch.empty_like(a)
            seconds.append(measure_gpu(lambda: b.copy_(a))[0].median)
    except ImportError:
        pass
    return 2 * COPY_BYTES / min(seconds)


def _gemm_torch():
    import torch

    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.randn(GEMM_SIZE, GEMM_SIZE, device="cuda")
    b = torch.randn(GEMM_SIZE, GEMM_SIZE, device="cuda")
    timing, _ = measure_gpu(lambda: a @ b)
    return 2 * GEMM_SIZE**3 / timing.median, "cuBLAS SGEMM (PyTorch, TF32 off)"


def _gemm_cupy():
    import cupy

    a = cupy.random.standard_normal((GEMM_SIZE, GEMM_SIZE), dtype=cupy.float32)
    b = cupy.random.standard_normal((GEMM_SIZE, GEMM_SIZE), dtype=cupy.float32)
    timing, _ = measure_gpu(lambda: a @ b)
    return 2 * GEMM_SIZE**3 / timing.median, "cuBLAS SGEMM (CuPy)"


def _int8_gemm_torch():
    """(int8 operations a second, source) of torch._int_mm at GEMM_SIZE^3, or None."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    a = torch.randint(-128, 128, (GEMM_SIZE, GEMM_SIZE), dtype=torch.int8, device="cuda")
    b = torch.randint(-128, 128, (GEMM_SIZE, GEMM_SIZE), dtype=torch.int8, device="cuda")
    timing, _ = measure_gpu(lambda: torch._int_mm(a, b))
    return 2 * GEMM_SIZE**3 / timing.median, "cuBLAS int8 GEMM (PyTorch torch._int_mm)"


def _device_peak(device):
    lanes = FP32_LANES.get(tuple(device.compute_capability), 128)
    clock_hz = device.CLOCK_RATE * 1e3  # reported in kHz
    flops = device.MULTIPROCESSOR_COUNT * lanes * 2 * clock_hz
    return flops, "device properties (SMs x clock x FP32 lanes x 2): not reachable in practice"


def _gemm_peak(device):
    for library in (_gemm_torch, _gemm_cupy):
        try:
            found = library()
        except ImportError:
            continue
        if found:
            return found
    return _device_peak(device)


@functools.cache
def measure_ceilings():
    """The Ceilings of the current CUDA device, measured on first use (a few seconds)."""
    from numba import cuda

    from .gpu_kernels import empty_launch

    device = cuda.get_current_device()
    name = device.name.decode() if isinstance(device.name, bytes) else str(device.name)
    flops, source = _gemm_peak(device)
    launch, _ = measure_gpu(empty_launch)
    int8 = _int8_gemm_torch()
    int8_ceiling = {"int8_ops": int8[0], "int8_source": int8[1]} if int8 else {}
    return Ceilings(name, _copy_bandwidth(), flops, source, launch.median, **int8_ceiling)

"""Stage 4, numba variant: every op of the contract (contract/CONTRACT.md) as numba.cuda kernels
over device arrays (weeks 14-16).

Native arrays are numba device arrays: float32 data, int64 labels and argmax. Ops also accept
anything exposing `__cuda_array_interface__` (CuPy arrays, PyTorch CUDA tensors) and view it
without a copy; a host NumPy array is an error naming the argument (copy it once with
`from_numpy`). Ops launch kernels and return without waiting for them (`synchronize` waits).
Outputs come from the hook `empty` (the grader poisons it with NaN). Losses return a
`DeviceScalar` that stays on the GPU until `float()` reads it (stage4_cuda/README.md).

Without a GPU, NUMBA_ENABLE_CUDASIM=1 runs the same kernels in numba's CUDA simulator, slowly and
without warp shuffles (the "shuffle" rung of the softmax ladder refuses to run there).

    import stage4_cuda.numba_impl as gpu
    a = gpu.from_numpy(np.ones((64, 32), np.float32))
    c = gpu.matmul(a, gpu.transpose(a), kernel="tiled")   # a rung of the matmul ladder
    y = gpu.softmax(c, kernel="shuffle")                  # a rung of the reduction ladder
    gpu.to_numpy(y)
"""

from numba import cuda

from contract import export_ops

# (empty, from_numpy, synchronize and to_numpy are the interface, which export_ops exports)
from ..runtime.device import SIMULATOR, DeviceScalar, empty, from_numpy, synchronize, to_numpy  # noqa: F401
from ..runtime.recording import copy_into, record_call, record_step
from .activations import SOFTMAX_KERNELS
from .device_data import correct_count, shift_images, take
from .linalg import MATMUL_KERNELS, SUM_ROWS_KERNELS

NAME = "numba"


def available():
    """(True, "") on a CUDA GPU; (True, "...simulator...") under NUMBA_ENABLE_CUDASIM=1;
    (False, why and what to do) otherwise."""
    if SIMULATOR:
        return True, "numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1): slow, no warp shuffles"
    if not cuda.is_available():
        return False, (
            "no CUDA GPU found by numba; run on a machine with an NVIDIA GPU and its driver, or "
            "under the simulator with NUMBA_ENABLE_CUDASIM=1"
        )
    return True, ""


# The interface and every op of the contract, each from the module that holds it (contract/ops.py),
# then this tier's own extras.
__all__ = [
    *export_ops(globals()),
    "MATMUL_KERNELS",
    "SOFTMAX_KERNELS",
    "SUM_ROWS_KERNELS",
    "DeviceScalar",
    "copy_into",
    "correct_count",
    "record_call",
    "record_step",
    "shift_images",
    "take",
]

"""Stage 4, nvcc variant: the op contract (contract/CONTRACT.md) as CUDA C kernels in
stage4_cuda/csrc/*.cu, built by nvcc into one shared library (`make build`) and called through
cffi (weeks 14-16).

The currency is the device runtime's (stage4_cuda/runtime/, which the numba variant shares):
numba device arrays (float32 data, int64 labels), made by `from_numpy`, read back by `to_numpy`,
allocated through the hook `empty` (which the grader poisons with NaN); anything exposing
`__cuda_array_interface__` (CuPy, PyTorch CUDA tensors) is accepted and passed to the kernels by
its device pointer. Arguments are checked before any launch by the runtime's checks (argcheck);
the kernels run on the default stream and ops return without waiting (`synchronize` waits); a
failed launch or CUDA call is a RuntimeError naming the kernel and CUDA's error. Losses return a
`DeviceScalar`.

Every op of the contract has its kernels here (stage4_cuda/README.md lists them). Without a
GPU, or under numba's CUDA simulator, the variant is unavailable (`available()` says why):
compiled kernels need a real GPU.

    import stage4_cuda.nvcc_impl as gpu
    a = gpu.from_numpy(np.ones((64, 32), np.float32))
    gpu.to_numpy(gpu.softmax(gpu.matmul(a, gpu.transpose(a))))
"""

from numba import cuda

from contract import export_ops

# (empty, from_numpy, synchronize and to_numpy are the interface, which export_ops exports)
from ..runtime.device import SIMULATOR, DeviceScalar, empty, from_numpy, synchronize, to_numpy  # noqa: F401
from ..runtime.recording import record_call
from . import _library
from .activations import SOFTMAX_KERNELS
from .augment import augment_images
from .conv import CONV_KERNELS
from .dense import linear_relu_forward
from .device_data import correct_count, shift_images, take
from .epilogue import bias_relu
from .inference import int8_conv2d_pool_to_int8
from .linalg import MATMUL_KERNELS
from .losses import cross_entropy_loss_and_grad
from .pooling import maxpool2d_relu_backward, maxpool2d_relu_forward
from .quantized import int8_linear_packed, int8_pack_weights
from .recording import capture_graph, copy_into, record_step
from .streams import Event, Stream, pinned_empty, upload

NAME = "nvcc"


def available():
    """(True, "") on a CUDA GPU with the library built; (False, why and what to do) otherwise.
    (Loading the tier rebuilds a library older than its sources first: tiers/loading.py.)"""
    if SIMULATOR:
        return False, (
            "numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1) cannot run compiled .cu kernels; "
            "the nvcc variant runs on a machine with an NVIDIA GPU (the numba variant runs here)"
        )
    reason = _library.unavailable_reason()
    if reason:
        return False, reason
    if not cuda.is_available():
        return False, (
            "no CUDA GPU found (the nvcc library is built); run on a machine with an NVIDIA GPU "
            "and its driver"
        )
    return True, ""


# The interface and every op of the contract, each from the module that holds it (contract/ops.py),
# then this tier's own extras.
__all__ = [
    *export_ops(globals()),
    "CONV_KERNELS",
    "MATMUL_KERNELS",
    "SOFTMAX_KERNELS",
    "DeviceScalar",
    "Event",
    "Stream",
    "augment_images",
    "bias_relu",
    "capture_graph",
    "copy_into",
    "correct_count",
    "cross_entropy_loss_and_grad",
    "int8_conv2d_pool_to_int8",
    "int8_linear_packed",
    "int8_pack_weights",
    "linear_relu_forward",
    "maxpool2d_relu_backward",
    "maxpool2d_relu_forward",
    "pinned_empty",
    "record_call",
    "record_step",
    "shift_images",
    "take",
    "upload",
]

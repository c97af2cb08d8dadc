"""Stage 4, nvcc variant: the op contract (grader/CONTRACT.md) as CUDA C kernels in
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

from ..runtime.device import SIMULATOR, DeviceScalar, empty, from_numpy, synchronize, to_numpy
from . import _library
from .activations import (
    SOFTMAX_KERNELS,
    leaky_relu,
    leaky_relu_backward,
    log_softmax,
    log_softmax_backward,
    relu,
    relu_backward,
    sigmoid,
    sigmoid_backward,
    softmax,
    softmax_backward,
    tanh,
    tanh_backward,
)
from .conv import CONV_KERNELS, col2im, conv2d_backward, conv2d_forward, im2col
from .dense import linear_backward, linear_forward
from .device_data import correct_count, shift_images, take
from .epilogue import bias_relu
from .init import he_normal, xavier_uniform
from .linalg import MATMUL_KERNELS, add, matmul, mul, scale, sum_rows, transpose
from .losses import (
    bce_with_logits_loss,
    bce_with_logits_loss_backward,
    cross_entropy_loss,
    cross_entropy_loss_and_grad,
    cross_entropy_loss_backward,
    hinge_loss,
    hinge_loss_backward,
    mse_loss,
    mse_loss_backward,
)
from .norm import batchnorm_backward, batchnorm_forward
from .optim import adam_step, momentum_step, rmsprop_step, sgd_step
from .pooling import (
    avgpool2d_backward,
    avgpool2d_forward,
    maxpool2d_backward,
    maxpool2d_forward,
    maxpool2d_relu_backward,
    maxpool2d_relu_forward,
)
from .quantized import (
    int8_conv2d,
    int8_conv2d_to_int8,
    int8_linear,
    int8_linear_to_int8,
    maxpool2d_int8,
    quantize_int8,
)
from .recording import capture_graph, copy_into, record_step
from .regularization import dropout_backward, dropout_forward

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


__all__ = [
    "CONV_KERNELS",
    "MATMUL_KERNELS",
    "NAME",
    "SOFTMAX_KERNELS",
    "DeviceScalar",
    "adam_step",
    "add",
    "available",
    "avgpool2d_backward",
    "avgpool2d_forward",
    "batchnorm_backward",
    "batchnorm_forward",
    "bce_with_logits_loss",
    "bce_with_logits_loss_backward",
    "bias_relu",
    "capture_graph",
    "col2im",
    "conv2d_backward",
    "conv2d_forward",
    "copy_into",
    "correct_count",
    "cross_entropy_loss",
    "cross_entropy_loss_and_grad",
    "cross_entropy_loss_backward",
    "dropout_backward",
    "dropout_forward",
    "empty",
    "from_numpy",
    "he_normal",
    "hinge_loss",
    "hinge_loss_backward",
    "im2col",
    "int8_conv2d",
    "int8_conv2d_to_int8",
    "int8_linear",
    "int8_linear_to_int8",
    "maxpool2d_int8",
    "leaky_relu",
    "leaky_relu_backward",
    "linear_backward",
    "linear_forward",
    "log_softmax",
    "log_softmax_backward",
    "matmul",
    "maxpool2d_backward",
    "maxpool2d_forward",
    "maxpool2d_relu_backward",
    "maxpool2d_relu_forward",
    "momentum_step",
    "mse_loss",
    "mse_loss_backward",
    "mul",
    "record_step",
    "quantize_int8",
    "relu",
    "relu_backward",
    "rmsprop_step",
    "scale",
    "shift_images",
    "sgd_step",
    "sigmoid",
    "sigmoid_backward",
    "softmax",
    "softmax_backward",
    "sum_rows",
    "synchronize",
    "take",
    "tanh",
    "tanh_backward",
    "to_numpy",
    "transpose",
    "xavier_uniform",
]

"""Stage 4, numba variant: every op of the contract (grader/CONTRACT.md) as numba.cuda kernels
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

from ..runtime.device import (
    SIMULATOR,
    DeviceScalar,
    empty,
    from_numpy,
    synchronize,
    to_numpy,
)
from ..runtime.recording import copy_into, record_step
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
from .conv import col2im, conv2d_backward, conv2d_forward, im2col
from .dense import linear_backward, linear_forward
from .device_data import correct_count, shift_images, take
from .init import he_normal, xavier_uniform
from .linalg import MATMUL_KERNELS, SUM_ROWS_KERNELS, add, matmul, mul, scale, sum_rows, transpose
from .losses import (
    bce_with_logits_loss,
    bce_with_logits_loss_backward,
    cross_entropy_loss,
    cross_entropy_loss_backward,
    hinge_loss,
    hinge_loss_backward,
    mse_loss,
    mse_loss_backward,
)
from .norm import batchnorm_backward, batchnorm_forward
from .optim import adam_step, momentum_step, rmsprop_step, sgd_step
from .pooling import avgpool2d_backward, avgpool2d_forward, maxpool2d_backward, maxpool2d_forward
from .quantized import (
    int8_conv2d,
    int8_conv2d_to_int8,
    int8_linear,
    int8_linear_to_int8,
    maxpool2d_int8,
    quantize_int8,
)
from .regularization import dropout_backward, dropout_forward

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


__all__ = [
    "MATMUL_KERNELS",
    "NAME",
    "SOFTMAX_KERNELS",
    "SUM_ROWS_KERNELS",
    "DeviceScalar",
    "add",
    "adam_step",
    "available",
    "avgpool2d_backward",
    "avgpool2d_forward",
    "batchnorm_backward",
    "batchnorm_forward",
    "bce_with_logits_loss",
    "bce_with_logits_loss_backward",
    "col2im",
    "conv2d_backward",
    "conv2d_forward",
    "copy_into",
    "correct_count",
    "cross_entropy_loss",
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

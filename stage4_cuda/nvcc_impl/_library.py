"""Loading the nvcc-built library, calling its functions, and turning their statuses into Python
exceptions.

The library (_build/libs2c_cuda.so, built by `python -m stage4_cuda.nvcc_build`) is opened with
cffi in ABI mode (dlopen): its functions are declared by csrc/s2c_cuda.h, the header the .cu
files are compiled against, so there is one list of functions, not two. It is opened on first
use, not on import, so an unbuilt variant still imports and `available()` says why it cannot run.

`call("s2c_cuda_relu", x, y, n)` passes device arrays as their device pointers (read from
`__cuda_array_interface__`, the pointer numba, CuPy and PyTorch all give), None as NULL, and
numbers as they are; it raises for any status but S2C_CUDA_OK (csrc/common.h):
S2C_CUDA_NOT_IMPLEMENTED (an exercise stub) is a NotImplementedError naming the week and task,
S2C_CUDA_BAD_ARGUMENT a ValueError, S2C_CUDA_OUT_OF_MEMORY a MemoryError, and S2C_CUDA_ERROR (a
CUDA call or launch failed) a RuntimeError with the library's message, which names the kernel and
CUDA's error. The kernels run on the default stream, in order with numba's kernels and copies.
"""

import re
from pathlib import Path

import cffi
import numpy as np

import argcheck

PACKAGE = "stage4_cuda"
HERE = Path(__file__).resolve().parent
LIBRARY = HERE / "_build" / "libs2c_cuda.so"
HEADER = HERE.parent / "csrc" / "s2c_cuda.h"
NOT_BUILT = "the nvcc library is not built: run `make build` (needs nvcc, the CUDA toolkit)"

# The status codes of csrc/common.h.
OK, NOT_IMPLEMENTED, BAD_ARGUMENT, OUT_OF_MEMORY, CUDA_ERROR = 0, 1, 2, 3, 4

# The SGEMM ladder of csrc/sgemm/, slowest first: rung i is s2c_sgemm_<name> in sgemm/0i_<name>.cu.
SGEMM_RUNGS = ("naive", "coalesced", "shared_tiles", "register_1d", "register_2d", "vectorized",
               "warp_tiles", "cp_async")  # fmt: skip

# Each function holding an exercise: (week, task, file). The exercise tool replaces its region
# by `return S2C_CUDA_NOT_IMPLEMENTED;`, and this table names the exercise in the resulting
# NotImplementedError. tests/test_stage4_nvcc.py checks it against the markers in csrc/.
EXERCISES = {
    "s2c_cuda_relu": (14, "relu", "activations.cu"),
    "s2c_cuda_relu_backward": (14, "relu_backward", "activations.cu"),
    "s2c_cuda_leaky_relu": (14, "leaky_relu", "activations.cu"),
    "s2c_cuda_leaky_relu_backward": (14, "leaky_relu_backward", "activations.cu"),
    "s2c_cuda_sigmoid": (14, "sigmoid", "activations.cu"),
    "s2c_cuda_sigmoid_backward": (14, "sigmoid_backward", "activations.cu"),
    "s2c_cuda_tanh": (14, "tanh", "activations.cu"),
    "s2c_cuda_tanh_backward": (14, "tanh_backward", "activations.cu"),
    "s2c_cuda_softmax_backward": (14, "softmax_backward", "softmax/backward.cu"),
    "s2c_cuda_add": (14, "add", "linalg.cu"),
    "s2c_cuda_mul": (14, "mul", "linalg.cu"),
    "s2c_cuda_scale": (14, "scale", "linalg.cu"),
    "s2c_cuda_transpose": (14, "transpose", "linalg.cu"),
    "s2c_cuda_swap_middle_axes": (22, "swap_middle_axes", "linalg.cu"),
    "s2c_cuda_sum_rows": (14, "sum_rows", "linalg.cu"),
    "s2c_cuda_matmul": (15, "matmul", "matmul.cu"),
    **{f"s2c_sgemm_{name}": (16, f"sgemm_{name}", f"sgemm/{number:02}_{name}.cu")
       for number, name in enumerate(SGEMM_RUNGS, 1)},
    "s2c_cuda_gemm": (15, "matmul", "matmul.cu"),
    "s2c_cuda_linear_forward": (15, "linear_forward", "dense.cu"),
    "s2c_cuda_linear_relu_forward": (15, "linear_forward", "dense.cu"),
    "s2c_cuda_linear_backward": (15, "linear_backward", "dense.cu"),
    "s2c_cuda_mse_loss": (14, "mse_loss", "losses.cu"),
    "s2c_cuda_mse_loss_backward": (14, "mse_loss_backward", "losses.cu"),
    "s2c_cuda_bce_with_logits_loss": (14, "bce_with_logits_loss", "losses.cu"),
    "s2c_cuda_bce_with_logits_loss_backward": (14, "bce_with_logits_loss_backward", "losses.cu"),
    "s2c_cuda_hinge_loss": (14, "hinge_loss", "losses.cu"),
    "s2c_cuda_hinge_loss_backward": (14, "hinge_loss_backward", "losses.cu"),
    "s2c_cuda_sgd_step": (14, "sgd_step", "optim.cu"),
    "s2c_cuda_momentum_step": (14, "momentum_step", "optim.cu"),
    "s2c_cuda_momentum_step_list": (14, "momentum_step", "optim.cu"),
    "s2c_cuda_rmsprop_step": (14, "rmsprop_step", "optim.cu"),
    "s2c_cuda_adam_step": (14, "adam_step", "optim.cu"),
    "s2c_cuda_xavier_uniform": (14, "xavier_uniform", "init.cu"),
    "s2c_cuda_he_normal": (14, "he_normal", "init.cu"),
    "s2c_cuda_dropout_forward": (16, "dropout_forward", "dropout.cu"),
    "s2c_cuda_dropout_backward": (16, "dropout_backward", "dropout.cu"),
    "s2c_cuda_maxpool2d_forward": (16, "maxpool2d_forward", "pooling.cu"),
    "s2c_cuda_maxpool2d_backward": (16, "maxpool2d_backward", "pooling.cu"),
    "s2c_cuda_maxpool2d_relu_forward": (16, "maxpool2d_forward", "pooling.cu"),
    "s2c_cuda_maxpool2d_relu_backward": (16, "maxpool2d_backward", "pooling.cu"),
    "s2c_cuda_avgpool2d_forward": (16, "avgpool2d_forward", "pooling.cu"),
    "s2c_cuda_avgpool2d_backward": (16, "avgpool2d_backward", "pooling.cu"),
    "s2c_cuda_im2col": (16, "im2col", "conv/im2col.cu"),
    "s2c_cuda_col2im": (16, "col2im", "conv/im2col.cu"),
    # int8 inference (csrc/int8/)
    "s2c_cuda_quantize_int8": (19, "quantize_int8", "int8/quantize.cu"),
    "s2c_cuda_int8_linear": (19, "int8_linear", "int8/gemm.cu"),
    "s2c_cuda_int8_conv2d": (19, "int8_conv2d", "int8/gemm.cu"),
    "s2c_cuda_int8_linear_to_int8": (19, "int8_linear_to_int8", "int8/gemm.cu"),
    "s2c_cuda_int8_conv2d_to_int8": (19, "int8_conv2d_to_int8", "int8/gemm.cu"),
    "s2c_cuda_maxpool2d_int8": (19, "maxpool2d_int8", "int8/pool.cu"),
    # the conv2d ladder (csrc/conv/conv.cuh)
    "s2c_cuda_conv2d_direct": (16, "conv_direct", "conv/01_direct.cu"),
    "s2c_cuda_conv2d_im2col": (16, "conv_im2col", "conv/02_im2col_gemm.cu"),
    "s2c_cuda_conv2d_implicit_gemm": (16, "conv_implicit_gemm", "conv/03_implicit_gemm.cu"),
    "s2c_cuda_conv2d_winograd": (16, "conv_winograd", "conv/04_winograd.cu"),
    "s2c_cuda_conv2d_fft": (16, "conv_fft", "conv/05_fft.cu"),
    "s2c_cuda_conv2d_winograd_4x4": (16, "conv_winograd_4x4", "conv/06_winograd_4x4.cu"),
    "s2c_cuda_conv2d_shallow": (16, "conv_shallow", "conv/07_shallow.cu"),
    "s2c_cuda_conv2d_backward": (16, "conv2d_backward", "conv/backward.cu"),
    **dict.fromkeys(
        ["s2c_cuda_conv2d_bias_relu_pool", "s2c_cuda_conv2d_bias_relu_pool_scratch"],
        (16, "conv2d_bias_relu_pool", "inference/conv_bias_relu_pool.cu")),
    "s2c_cuda_batchnorm_forward": (16, "batchnorm_forward", "norm.cu"),
    "s2c_cuda_batchnorm_backward": (16, "batchnorm_backward", "norm.cu"),
    # The softmax ladder (csrc/softmax/): a task per rung; cross-entropy is rung 5.
    "s2c_cuda_softmax_three_pass": (14, "softmax_three_pass", "softmax/01_three_pass.cu"),
    "s2c_cuda_softmax_tree": (14, "softmax_tree", "softmax/02_tree.cu"),
    "s2c_cuda_softmax_shuffle": (14, "softmax_shuffle", "softmax/03_shuffle.cu"),
    "s2c_cuda_softmax_online": (14, "softmax_online", "softmax/04_online.cu"),
    **dict.fromkeys(
        ["s2c_cuda_softmax_cross_entropy", "s2c_cuda_cross_entropy_loss",
         "s2c_cuda_cross_entropy_loss_backward"],
        (14, "cross_entropy_loss", "softmax/05_cross_entropy.cu")),
    "s2c_cuda_layernorm": (22, "layernorm", "attention.cu"),
    "s2c_cuda_layernorm_backward": (22, "layernorm_backward", "attention.cu"),
    "s2c_cuda_gelu": (22, "gelu", "attention.cu"),
    "s2c_cuda_gelu_backward": (22, "gelu_backward", "attention.cu"),
}
# Functions that return the status of a helper they call: a stub there is named too.
CALLS = {
    **dict.fromkeys(
        ["s2c_cuda_relu", "s2c_cuda_leaky_relu", "s2c_cuda_sigmoid", "s2c_cuda_tanh",
         "s2c_cuda_scale", "s2c_cuda_gelu"],
        "task map in elementwise.cuh"),
    **dict.fromkeys(
        ["s2c_cuda_relu_backward", "s2c_cuda_leaky_relu_backward", "s2c_cuda_sigmoid_backward",
         "s2c_cuda_tanh_backward", "s2c_cuda_add", "s2c_cuda_mul", "s2c_cuda_mse_loss_backward",
         "s2c_cuda_bce_with_logits_loss_backward", "s2c_cuda_dropout_backward",
         "s2c_cuda_gelu_backward"],
        "task zip in elementwise.cuh"),
    **dict.fromkeys(
        ["s2c_cuda_sgd_step", "s2c_cuda_momentum_step", "s2c_cuda_momentum_step_list",
         "s2c_cuda_rmsprop_step", "s2c_cuda_adam_step"],
        "task step in optim.cu"),
    **dict.fromkeys(["s2c_cuda_linear_forward", "s2c_cuda_linear_relu_forward"],
                    "task matmul in matmul.cu"),
    "s2c_cuda_int8_linear_packed": "tasks int8_linear and int8_gemm_dp4a in int8/gemm.cu",
    "s2c_cuda_linear_backward": "tasks matmul in matmul.cu and sum_rows in linalg.cu",
    "s2c_cuda_conv2d_im2col": "tasks im2col in conv/im2col.cu and sgemm_cp_async in "
                              "sgemm/08_cp_async.cu",
    "s2c_cuda_conv2d_backward": "task conv2d_backward in conv/backward_dw.cu, conv/backward_dx.cu "
                                "and conv/nan_recompute.cu",
    **dict.fromkeys(
        ["s2c_cuda_softmax_online", "s2c_cuda_softmax_cross_entropy",
         "s2c_cuda_cross_entropy_loss", "s2c_cuda_cross_entropy_loss_backward"],
        "task softmax_online in softmax/softmax.cuh"),
}  # fmt: skip


def declarations():
    """s2c_cuda.h as cffi's cdef wants it: no preprocessor lines, no C++ `extern "C"` guard."""
    lines, in_guard = [], False
    for line in HEADER.read_text().splitlines():
        stripped = line.strip()
        if stripped == "#ifdef __cplusplus":
            in_guard = True
        elif stripped == "#endif" and in_guard:
            in_guard = False
        elif not in_guard and not stripped.startswith("#"):
            lines.append(line)
    return "\n".join(lines)


def parameter_names():
    """{function: [its parameters' names]} from s2c_cuda.h (a recording replaces a scalar by
    name: recording.py)."""
    found = re.findall(r"\b(s2c_\w+)\(([^)]*)\);", declarations())
    return {function: [re.findall(r"\w+", parameter)[-1] for parameter in parameters.split(",")
                       if parameter.strip() not in ("", "void")]
            for function, parameters in found}  # fmt: skip


ffi = cffi.FFI()
ffi.cdef(declarations())
PARAMETERS = parameter_names()
_lib = None
LOAD_ERROR = ""
# Called with (function, C arguments, arguments) after each successful call, when set: a step's
# recording (recording.py).
recorder = None


def library():
    """The opened library (cffi's lib object); RuntimeError, saying how to build it, without it."""
    global _lib, LOAD_ERROR
    if _lib is None:
        if not LIBRARY.exists():
            raise RuntimeError(NOT_BUILT)
        try:
            _lib = ffi.dlopen(str(LIBRARY))
        except OSError as error:  # built for another machine, or a missing system library
            LOAD_ERROR = f"the nvcc library {LIBRARY.name} does not load: {error}"
            raise RuntimeError(LOAD_ERROR) from error
    return _lib


def unavailable_reason():
    """The empty string when the library opens, else why not and how to fix it."""
    try:
        library()
    except RuntimeError as error:
        return str(error)
    return ""


def check_status(function, status):
    """Raise the exception that status `status` of library function `function` stands for."""
    if status == OK:
        return
    if status == NOT_IMPLEMENTED:
        week, task, file = EXERCISES.get(function, ("?", function, "?"))
        also = f"; or {CALLS[function]}, which it calls" if function in CALLS else ""
        raise NotImplementedError(
            f"week {week}, task {task}: not implemented yet ({PACKAGE}/csrc/{file}{also})"
        )
    if status == BAD_ARGUMENT:
        raise ValueError(f"{function} rejected its arguments (a check its wrapper does not make)")
    if status == OUT_OF_MEMORY:
        raise MemoryError(f"{function}: out of device memory")
    if status == CUDA_ERROR:
        message = ffi.string(library().s2c_cuda_error_message()).decode()
        raise RuntimeError(f"{function} failed: {message}")
    raise RuntimeError(f"{function} returned the unknown status {status}")


def _argument(value):
    """A device array as its device pointer, None as NULL, a bool as an int; a number or a
    geometry (cffi data) as it is."""
    if value is None:
        return ffi.NULL
    interface = getattr(value, "__cuda_array_interface__", None)
    if interface is not None:
        return ffi.cast("void *", interface["data"][0])
    if isinstance(value, bool):
        return int(value)
    return value


def pointer(array):
    """The device address of `array`'s first element, as a `char *` (so that adding n moves n
    bytes)."""
    return ffi.cast("char *", array.__cuda_array_interface__["data"][0])


def int64_indices(op, name, indices):
    """The checked labels or argmax `indices`, which the kernels read as int64: `from_numpy` makes
    them so, and another library's device array of another integer type is refused (a kernel
    would misread it)."""
    if indices.dtype != np.int64:
        argcheck.fail_type(op, f"{name} must hold int64 values on the device (from_numpy makes "
                               f"them so), got {indices.dtype}")  # fmt: skip
    return indices


def geometry(kind, **sizes):
    """A `struct s2c_<kind>_geometry` of s2c_cuda.h filled with `sizes` (a host pointer the
    library reads its sizes through): kind "pool" or "conv"."""
    return ffi.new(f"struct s2c_{kind}_geometry *", sizes)


def call(function, *args):
    """Call library function `function` (a name such as "s2c_cuda_relu") on `args` (device
    arrays, None, numbers) and check its status."""
    c_arguments = [_argument(arg) for arg in args]
    status = getattr(library(), function)(*c_arguments)
    check_status(function, status)
    if recorder is not None:
        recorder(function, c_arguments, args)

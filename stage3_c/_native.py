"""Loading the C extension, and turning its status codes into Python exceptions.

Every C function returns a status (csrc/s2c.h): S2C_OK, S2C_NOT_IMPLEMENTED (an exercise stub),
S2C_BAD_ARGUMENT (a check the wrapper should have made) or S2C_OUT_OF_MEMORY. `call` runs one
function and raises for anything but S2C_OK. The extension is optional at import time: an unbuilt
tier still imports, and `available()` says how to build it.
"""

import numpy as np

try:
    from ._s2c_native import ffi, lib
except ImportError as error:  # not built yet (or built for another Python)
    ffi = lib = None
    LOAD_ERROR = str(error)
else:
    LOAD_ERROR = ""

NOT_BUILT = "the C extension is not built: run `make build`"
PACKAGE = "stage3_c"

# Each C function that holds an exercise: (week, task, file). The exercise tool replaces the
# function's body with `return S2C_NOT_IMPLEMENTED;`, and this table names the exercise in the
# resulting NotImplementedError. tests/test_stage3_c.py checks it against the markers in csrc/.
EXERCISES = {
    "s2c_matmul_naive": (11, "matmul_naive", "matmul.c"),
    "s2c_matmul_loop_order": (11, "matmul_loop_order", "matmul.c"),
    "s2c_matmul_blocked": (11, "matmul_blocked", "matmul.c"),
    "s2c_matmul_register": (11, "matmul_register", "matmul.c"),
    "s2c_matmul_simd": (11, "matmul_simd", "matmul.c"),
    "s2c_gemm": (11, "gemm", "matmul.c"),
    "s2c_transpose": (11, "transpose", "linalg.c"),
    "s2c_add": (11, "add", "linalg.c"),
    "s2c_mul": (11, "mul", "linalg.c"),
    "s2c_scale": (11, "scale", "linalg.c"),
    "s2c_sum_rows": (11, "sum_rows", "linalg.c"),
    "s2c_linear_forward": (12, "linear_forward", "dense.c"),
    "s2c_linear_backward": (12, "linear_backward", "dense.c"),
    "s2c_relu": (12, "relu", "activations.c"),
    "s2c_relu_backward": (12, "relu_backward", "activations.c"),
    "s2c_leaky_relu": (12, "leaky_relu", "activations.c"),
    "s2c_leaky_relu_backward": (12, "leaky_relu_backward", "activations.c"),
    "s2c_sigmoid": (12, "sigmoid", "activations.c"),
    "s2c_sigmoid_backward": (12, "sigmoid_backward", "activations.c"),
    "s2c_tanh": (12, "tanh", "activations.c"),
    "s2c_tanh_backward": (12, "tanh_backward", "activations.c"),
    "s2c_softmax": (12, "softmax", "activations.c"),
    "s2c_softmax_backward": (12, "softmax_backward", "activations.c"),
    "s2c_log_softmax": (12, "log_softmax", "activations.c"),
    "s2c_log_softmax_backward": (12, "log_softmax_backward", "activations.c"),
    "s2c_mse_loss": (12, "mse_loss", "losses.c"),
    "s2c_mse_loss_backward": (12, "mse_loss_backward", "losses.c"),
    "s2c_cross_entropy_loss": (12, "cross_entropy_loss", "losses.c"),
    "s2c_cross_entropy_loss_backward": (12, "cross_entropy_loss_backward", "losses.c"),
    "s2c_bce_with_logits_loss": (12, "bce_with_logits_loss", "losses.c"),
    "s2c_bce_with_logits_loss_backward": (12, "bce_with_logits_loss_backward", "losses.c"),
    "s2c_hinge_loss": (12, "hinge_loss", "losses.c"),
    "s2c_hinge_loss_backward": (12, "hinge_loss_backward", "losses.c"),
    "s2c_sgd_step": (12, "sgd_step", "optim.c"),
    "s2c_momentum_step": (12, "momentum_step", "optim.c"),
    "s2c_rmsprop_step": (12, "rmsprop_step", "optim.c"),
    "s2c_adam_step": (12, "adam_step", "optim.c"),
    "s2c_xavier_uniform": (12, "xavier_uniform", "init.c"),
    "s2c_he_normal": (12, "he_normal", "init.c"),
    "s2c_im2col": (13, "im2col", "conv.c"),
    "s2c_col2im": (13, "col2im", "conv.c"),
    "s2c_conv2d_forward": (13, "conv2d_forward", "conv.c"),
    "s2c_conv2d_backward": (13, "conv2d_backward", "conv.c"),
    "s2c_conv2d_forward_direct": (13, "conv2d_forward_direct", "conv.c"),
    "s2c_conv2d_backward_direct": (13, "conv2d_backward_direct", "conv.c"),
    "s2c_maxpool2d_forward": (13, "maxpool2d_forward", "pooling.c"),
    "s2c_maxpool2d_backward": (13, "maxpool2d_backward", "pooling.c"),
    "s2c_avgpool2d_forward": (13, "avgpool2d_forward", "pooling.c"),
    "s2c_avgpool2d_backward": (13, "avgpool2d_backward", "pooling.c"),
    "s2c_batchnorm_forward": (13, "batchnorm_forward", "norm.c"),
    "s2c_batchnorm_backward": (13, "batchnorm_backward", "norm.c"),
    "s2c_dropout_forward": (13, "dropout_forward", "dropout.c"),
    "s2c_dropout_backward": (13, "dropout_backward", "dropout.c"),
}

# The status codes of csrc/s2c.h (the same numbers as lib.S2C_OK and friends, which exist only
# once the extension is built).
OK, NOT_IMPLEMENTED, BAD_ARGUMENT, OUT_OF_MEMORY = 0, 1, 2, 3


def require_built():
    """Raise RuntimeError, saying how to build, when the extension is missing."""
    if lib is None:
        raise RuntimeError(f"{NOT_BUILT} ({LOAD_ERROR})")


def check_status(function, status):
    """Raise the exception that C status `status` of C function `function` stands for."""
    if status == OK:
        return
    if status == NOT_IMPLEMENTED:
        week, task, file = EXERCISES.get(function, ("?", function, "?"))
        raise NotImplementedError(
            f"week {week}, task {task}: not implemented yet ({PACKAGE}/csrc/{file})"
        )
    if status == BAD_ARGUMENT:
        raise ValueError(f"{function} rejected its arguments (a check its wrapper does not make)")
    if status == OUT_OF_MEMORY:
        raise MemoryError(f"{function}: out of memory for its scratch buffers")
    raise RuntimeError(f"{function} returned the unknown status {status}")


def call(function, *args):
    """Call C function `function` (a name such as "s2c_relu") and check its status."""
    require_built()
    check_status(function, getattr(lib, function)(*args))


def call_for_double(function, *args):
    """Call a C function whose last parameter is a `double *` result; return that double."""
    require_built()
    result = ffi.new("double *")
    call(function, *args, result)
    return float(result[0])


def pointer(array):
    """A C pointer to a C-contiguous float32 or int64 array's data (no copy; keep the array)."""
    require_built()
    c_type = "int64_t[]" if array.dtype == np.int64 else "float[]"
    return ffi.from_buffer(c_type, array)

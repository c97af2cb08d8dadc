"""Loading the C extension, and turning its status codes into Python exceptions.

Every C function returns a status (csrc/s2c.h): S2C_OK, S2C_NOT_IMPLEMENTED (an exercise stub),
S2C_BAD_ARGUMENT (a check the wrapper should have made) or S2C_OUT_OF_MEMORY. `call` runs one
function and raises for anything but S2C_OK. The extension is imported on first use, not with the
package: an unbuilt tier still imports (`available()` says how to build it), and building never
loads the old extension (an AddressSanitizer build cannot load without the ASan runtime).
"""

import numpy as np

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
    "s2c_conv2d_bias_relu_pool": (13, "conv2d_bias_relu_pool", "inference.c"),
    "s2c_maxpool2d_forward": (13, "maxpool2d_forward", "pooling.c"),
    "s2c_maxpool2d_backward": (13, "maxpool2d_backward", "pooling.c"),
    "s2c_avgpool2d_forward": (13, "avgpool2d_forward", "pooling.c"),
    "s2c_avgpool2d_backward": (13, "avgpool2d_backward", "pooling.c"),
    "s2c_batchnorm_forward": (13, "batchnorm_forward", "norm.c"),
    "s2c_batchnorm_backward": (13, "batchnorm_backward", "norm.c"),
    "s2c_dropout_forward": (13, "dropout_forward", "dropout.c"),
    "s2c_dropout_backward": (13, "dropout_backward", "dropout.c"),
    "s2c_quantize_int8": (19, "quantize_int8", "int8.c"),
    "s2c_int8_linear": (19, "int8_linear", "int8.c"),
    "s2c_int8_linear_to_int8": (19, "int8_linear_to_int8", "int8.c"),
    "s2c_int8_conv2d": (19, "int8_conv2d", "int8.c"),
    "s2c_int8_conv2d_to_int8": (19, "int8_conv2d_to_int8", "int8.c"),
    "s2c_maxpool2d_int8": (19, "maxpool2d_int8", "int8.c"),
    "s2c_layernorm": (22, "layernorm", "attention.c"),
    "s2c_layernorm_backward": (22, "layernorm_backward", "attention.c"),
    "s2c_gelu": (22, "gelu", "attention.c"),
    "s2c_gelu_backward": (22, "gelu_backward", "attention.c"),
    "s2c_attention": (22, "attention", "attention.c"),
    "s2c_attention_backward": (22, "attention_backward", "attention.c"),
}

# The status codes of csrc/s2c.h (the same numbers as lib.S2C_OK and friends, which exist only
# once the extension is built).
OK, NOT_IMPLEMENTED, BAD_ARGUMENT, OUT_OF_MEMORY = 0, 1, 2, 3


_extension_module = None  # stage3_c._s2c_native once imported
LOAD_ERROR = ""


def _load():
    """Import the extension module; None (the reason in LOAD_ERROR) when it is not built."""
    global LOAD_ERROR
    try:
        from . import _s2c_native
    except ImportError as error:  # not built yet, or built for another Python
        LOAD_ERROR = str(error)
        return None
    return _s2c_native


def extension():
    """The extension module (its `ffi` and `lib`); RuntimeError, saying how to build, without it."""
    global _extension_module
    if _extension_module is None:
        _extension_module = _load()
        if _extension_module is None:
            raise RuntimeError(f"{NOT_BUILT} ({LOAD_ERROR})")
    return _extension_module


def unavailable_reason():
    """The empty string when the extension loads, else why not and how to fix it."""
    try:
        extension()
    except RuntimeError:
        return NOT_BUILT
    return ""


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
    check_status(function, getattr(extension().lib, function)(*args))


def call_for_double(function, *args):
    """Call a C function whose last parameter is a `double *` result; return that double."""
    result = extension().ffi.new("double *")
    call(function, *args, result)
    return float(result[0])


def pointer(array):
    """A C pointer to a C-contiguous float32, int64 or int8 array's data (no copy; keep the
    array); NULL for None (an optional output the caller skips, as conv2d_backward's dx)."""
    if array is None:
        return extension().ffi.NULL
    c_type = {np.dtype(np.int64): "int64_t[]", np.dtype(np.int8): "int8_t[]"}.get(
        array.dtype, "float[]"
    )
    return extension().ffi.from_buffer(c_type, array)


def __getattr__(name):
    """`_native.lib` and `_native.ffi`: the extension's C functions and cffi helper, imported on
    first use (a module-level __getattr__, PEP 562)."""
    if name in ("lib", "ffi"):
        return getattr(extension(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

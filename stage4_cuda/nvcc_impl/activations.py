"""Activations and their gradients (csrc/activations.cu: elementwise; csrc/softmax/: the softmax
ladder and the backwards), week 14. Each wrapper checks its arguments (argcheck, through the
runtime's adapter), allocates the output through the hook `device.empty` and launches."""

from ..runtime import device
from . import _checks
from ._checks import checks
from ._library import call

# The rungs of the softmax ladder (csrc/softmax/0N_NAME.cu, s2c_cuda_softmax_NAME), slowest first;
# rung 5, the fused cross-entropy, is what losses.cross_entropy_loss runs.
SOFTMAX_KERNELS = ("three_pass", "tree", "shuffle", "online")
BEST_SOFTMAX = "online"  # the fastest measured (curriculum/results/softmax-cuda-h100.md)


def _unary(function, x, *scalars):
    """y = f(x) over the checked x (any shape) by library function `function`."""
    y = device.empty(x.shape)
    call(function, x, y, x.size, *scalars)
    return y


def _binary(function, first, dy, *scalars):
    """dx = f(first, dy) over the checked first (x or y) and dy."""
    dx = device.empty(first.shape)
    call(function, first, dy, dx, first.size, *scalars)
    return dx


def relu(x):
    """max(x, 0), any shape."""
    return _unary("s2c_cuda_relu", checks.relu(x))


def relu_backward(x, dy):
    """dy where x > 0, else 0 (x is the forward's input)."""
    return _binary("s2c_cuda_relu_backward", *checks.relu_backward(x, dy))


def leaky_relu(x, alpha):
    """x where x > 0, else alpha * x, any shape."""
    return _unary("s2c_cuda_leaky_relu", *checks.leaky_relu(x, alpha))


def leaky_relu_backward(x, dy, alpha):
    """dy where x > 0, else alpha * dy (x is the forward's input)."""
    return _binary("s2c_cuda_leaky_relu_backward", *checks.leaky_relu_backward(x, dy, alpha))


def sigmoid(x):
    """1 / (1 + exp(-x)), any shape, without overflow for large |x|."""
    return _unary("s2c_cuda_sigmoid", checks.sigmoid(x))


def sigmoid_backward(y, dy):
    """dy * y * (1 - y) (y is the forward's output)."""
    return _binary("s2c_cuda_sigmoid_backward", *checks.sigmoid_backward(y, dy))


def tanh(x):
    """tanh(x), any shape."""
    return _unary("s2c_cuda_tanh", checks.tanh(x))


def tanh_backward(y, dy):
    """dy * (1 - y^2) (y is the forward's output)."""
    return _binary("s2c_cuda_tanh_backward", *checks.tanh_backward(y, dy))


def _rowwise(op, x, kernel, log):
    """softmax or log_softmax of the checked x [N, C] by rung `kernel` of SOFTMAX_KERNELS."""
    name = _checks.kernel_name(op, kernel, SOFTMAX_KERNELS, BEST_SOFTMAX)
    rows, cols = x.shape
    scratch = device.scratch(2 * rows) if name == "three_pass" else None  # rows' max and sum
    y = device.empty(x.shape)
    call(f"s2c_cuda_softmax_{name}", x, y, scratch, rows, cols, log)
    return y


def _rowwise_backward(y, dy, log):
    """The gradient of softmax or log_softmax, from the checked y and dy [N, C]."""
    dx = device.empty(y.shape)
    call("s2c_cuda_softmax_backward", y, dy, dx, *y.shape, log)
    return dx


def softmax(x, kernel="best"):
    """Row-wise softmax of x [N, C], stable (the row maximum is subtracted first).

    `kernel` picks a rung of the ladder (SOFTMAX_KERNELS), by name or number 1-4: "three_pass",
    "tree", "shuffle", "online"; "best" is the fastest.
    """
    return _rowwise("softmax", checks.softmax(x), kernel, False)


def log_softmax(x, kernel="best"):
    """Row-wise log(softmax(x)) of x [N, C], as x - max - log(sum(exp(x - max))); `kernel` as
    for softmax."""
    return _rowwise("log_softmax", checks.log_softmax(x), kernel, True)


def softmax_backward(y, dy):
    """y * (dy - sum_j(dy * y)) per row (y is the forward's output), [N, C]."""
    return _rowwise_backward(*checks.softmax_backward(y, dy), False)


def log_softmax_backward(y, dy):
    """dy - exp(y) * sum_j(dy) per row (y is the forward's output, log-probabilities), [N, C]."""
    return _rowwise_backward(*checks.log_softmax_backward(y, dy), True)

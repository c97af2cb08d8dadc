"""Activations and their gradients (csrc/activations.cu: elementwise; csrc/softmax.cu: a block
per row with warp shuffles), week 14. Each wrapper checks its arguments (argcheck, through the
numba variant's adapter), allocates the output through the hook `_device.empty` and launches."""

from ..numba_impl import _device
from ..numba_impl._checks import checks
from ._library import call


def _unary(function, x, *scalars):
    """y = f(x) over the checked x (any shape) by library function `function`."""
    y = _device.empty(x.shape)
    call(function, x, y, x.size, *scalars)
    return y


def _binary(function, first, dy, *scalars):
    """dx = f(first, dy) over the checked first (x or y) and dy."""
    dx = _device.empty(first.shape)
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


def _rowwise(x, log):
    """softmax or log_softmax of the checked x [N, C]."""
    y = _device.empty(x.shape)
    call("s2c_cuda_softmax", x, y, *x.shape, log)
    return y


def _rowwise_backward(y, dy, log):
    """The gradient of softmax or log_softmax, from the checked y and dy [N, C]."""
    dx = _device.empty(y.shape)
    call("s2c_cuda_softmax_backward", y, dy, dx, *y.shape, log)
    return dx


def softmax(x):
    """Row-wise softmax of x [N, C], stable (the row maximum is subtracted first)."""
    return _rowwise(checks.softmax(x), False)


def log_softmax(x):
    """Row-wise log(softmax(x)) of x [N, C], as x - max - log(sum(exp(x - max)))."""
    return _rowwise(checks.log_softmax(x), True)


def softmax_backward(y, dy):
    """y * (dy - sum_j(dy * y)) per row (y is the forward's output), [N, C]."""
    return _rowwise_backward(*checks.softmax_backward(y, dy), False)


def log_softmax_backward(y, dy):
    """dy - exp(y) * sum_j(dy) per row (y is the forward's output, log-probabilities), [N, C]."""
    return _rowwise_backward(*checks.log_softmax_backward(y, dy), True)

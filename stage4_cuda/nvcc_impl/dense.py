"""The dense layer (csrc/dense.cu, week 15): y = x @ w.T + b and its gradients, on the tiled
product, which reads w and dy.T where they lie (no transposed copy) and adds b as it writes y.
A product of few output tiles and a long depth is split along it, into the shared scratch. An
extra, linear_relu_forward, also applies the ReLU after the layer as it writes y (inference)."""

from ..runtime import device
from ._checks import checks
from ._library import call
from ._scratch import scratch_for


def _scratch(n, inputs, outputs):
    """Scratch for the products of a dense layer of these sizes (None when none is split)."""
    return scratch_for("s2c_cuda_linear_scratch", n, inputs, outputs)


def linear_forward(x, w, b):
    """x [N, I], w [O, I], b [O] -> y [N, O] = x @ w.T + b."""
    return _dense("s2c_cuda_linear_forward", x, w, b)


def linear_relu_forward(x, w, b):
    """relu(linear_forward(x, w, b)), the ReLU in the product's last kernel: an extra of this
    variant, not an op of the contract (inference's dense layer followed by a ReLU,
    nn/inference.py). The same numbers as linear_forward then relu, one launch fewer."""
    return _dense("s2c_cuda_linear_relu_forward", x, w, b)


def _dense(entry, x, w, b):
    """y [N, O] from the library's `entry`, which takes the dense layer's arguments."""
    x, w, b = checks.linear_forward(x, w, b)
    (n, inputs), outputs = x.shape, w.shape[0]
    y = device.empty((n, outputs))
    call(entry, x, w, b, y, _scratch(n, inputs, outputs), n, inputs, outputs)
    return y


def linear_backward(x, w, dy):
    """-> (dx [N, I] = dy @ w, dw [O, I] = dy.T @ x, db [O] = the column sums of dy)."""
    x, w, dy = checks.linear_backward(x, w, dy)
    (n, inputs), outputs = x.shape, w.shape[0]
    dx, dw, db = device.empty(x.shape), device.empty(w.shape), device.empty((outputs,))
    call("s2c_cuda_linear_backward", x, w, dy, dx, dw, db, _scratch(n, inputs, outputs), n, inputs,
         outputs)
    return dx, dw, db

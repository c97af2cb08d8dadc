"""Losses (csrc/losses.cu, week 14). Each forward returns a `DeviceScalar`: the mean stays on the
GPU until `float(loss)` reads it (stage4_cuda/README.md). Means are added in double, in a fixed
order: cross-entropy writes its terms, one per row, into a scratch array that one block adds up;
mse, bce and hinge add theirs in two levels (a grid of blocks into a scratch array of partial
sums, then one block). Each `*_backward` takes the forward's arguments and returns the gradient
w.r.t. the first. Cross-entropy is rung 5 of the softmax ladder (csrc/softmax/05_cross_entropy.cu),
which gives the loss and its gradient from the same passes over the logits:
`cross_entropy_loss_and_grad`.

The library's functions take the checked arguments, the scratch, the output, then the sizes: (n,)
for the elementwise losses, (rows, columns) for those with labels, the first size also being the
number of terms."""

import numpy as np

from ..runtime import device
from ._checks import checks
from ._library import call, int64_indices, library


def _loss(function, arguments, sizes, scratch):
    """The mean computed by library function `function`, as a DeviceScalar."""
    loss = device.empty((1,))
    call(function, *arguments, scratch, loss, *sizes)
    return device.DeviceScalar(loss)


def _partials():
    """Scratch for a two-level mean's partial sums."""
    return device.scratch((library().S2C_CUDA_MEAN_BLOCKS,), np.float64)


def _gradient(function, arguments, sizes):
    """The gradient computed by `function`, of the first argument's shape."""
    grad = device.empty(arguments[0].shape)
    call(function, *arguments, grad, *sizes)
    return grad


def mse_loss(pred, target):
    """Mean over all elements of (pred - target)^2; pred and target have one shape."""
    pred, target = checks.mse_loss(pred, target)
    return _loss("s2c_cuda_mse_loss", (pred, target), (pred.size,), _partials())


def mse_loss_backward(pred, target):
    """d mse / d pred = 2 * (pred - target) / size."""
    pred, target = checks.mse_loss_backward(pred, target)
    return _gradient("s2c_cuda_mse_loss_backward", (pred, target), (pred.size,))


def bce_with_logits_loss(logits, targets):
    """Mean over all elements of the binary cross-entropy of sigmoid(logits) against targets."""
    logits, targets = checks.bce_with_logits_loss(logits, targets)
    return _loss("s2c_cuda_bce_with_logits_loss", (logits, targets), (logits.size,), _partials())


def bce_with_logits_loss_backward(logits, targets):
    """(sigmoid(logits) - targets) / size."""
    logits, targets = checks.bce_with_logits_loss_backward(logits, targets)
    return _gradient("s2c_cuda_bce_with_logits_loss_backward", (logits, targets), (logits.size,))


def _cross_entropy(op, logits, labels, loss, grad):
    """Rung 5 on the checked logits [N, C] and labels [N]: the mean into `loss` unless it is None,
    the gradient into `grad` unless it is None."""
    labels = int64_indices(op, "labels", labels)
    rows, cols = logits.shape
    if loss is None:
        call("s2c_cuda_cross_entropy_loss_backward", logits, labels, grad, rows, cols)
    else:
        call("s2c_cuda_cross_entropy_loss", logits, labels, device.scratch(rows), loss, grad,
             rows, cols)  # fmt: skip


def cross_entropy_loss(logits, labels):
    """Mean over the batch of -log_softmax(logits)[i, labels[i]]; logits [N, C], labels [N]."""
    logits, labels = checks.cross_entropy_loss(logits, labels)
    loss = device.empty((1,))
    _cross_entropy("cross_entropy_loss", logits, labels, loss, None)
    return device.DeviceScalar(loss)


def cross_entropy_loss_backward(logits, labels):
    """(softmax(logits) - one_hot(labels)) / N, [N, C]."""
    logits, labels = checks.cross_entropy_loss_backward(logits, labels)
    grad = device.empty(logits.shape)
    _cross_entropy("cross_entropy_loss_backward", logits, labels, None, grad)
    return grad


def cross_entropy_loss_and_grad(logits, labels):
    """(cross_entropy_loss, cross_entropy_loss_backward) of logits [N, C] and labels [N] from the
    same passes over the logits: read once from device memory (not a contract op: a fused step)."""
    logits, labels = checks.cross_entropy_loss(logits, labels)
    loss, grad = device.empty((1,)), device.empty(logits.shape)
    _cross_entropy("cross_entropy_loss", logits, labels, loss, grad)
    return device.DeviceScalar(loss), grad


def hinge_loss(scores, labels, margin=1.0):
    """Mean over the batch of sum_{j != y} max(0, s_j - s_y + margin); scores [N, C]."""
    scores, labels, margin = checks.hinge_loss(scores, labels, margin)
    labels = int64_indices("hinge_loss", "labels", labels)
    return _loss("s2c_cuda_hinge_loss", (scores, labels, margin), scores.shape, _partials())


def hinge_loss_backward(scores, labels, margin=1.0):
    """The gradient of hinge_loss w.r.t. scores, [N, C]."""
    scores, labels, margin = checks.hinge_loss_backward(scores, labels, margin)
    labels = int64_indices("hinge_loss_backward", "labels", labels)
    return _gradient("s2c_cuda_hinge_loss_backward", (scores, labels, margin), scores.shape)

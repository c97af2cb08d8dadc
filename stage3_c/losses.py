"""Losses (week 12, csrc/losses.c). Each returns the mean loss as a Python float; each
*_backward takes the forward's arguments and returns the gradient w.r.t. the first."""

from ._checks import checks, new_output
from ._native import call, call_for_double, pointer


def mse_loss(pred, target):
    """mean((pred - target)^2) over all elements; pred and target of one shape."""
    pred, target = checks.mse_loss(pred, target)
    return call_for_double("s2c_mse_loss", pointer(pred), pointer(target), pred.size)


def mse_loss_backward(pred, target):
    """2 * (pred - target) / size."""
    op = "mse_loss_backward"
    pred, target = checks.mse_loss_backward(pred, target)
    grad = new_output(op, pred.shape)
    call("s2c_mse_loss_backward", pointer(pred), pointer(target), pointer(grad), pred.size)
    return grad


def cross_entropy_loss(logits, labels):
    """mean over the batch of -log_softmax(logits)[i, labels[i]]; logits [N, C], labels [N]."""
    logits, labels = checks.cross_entropy_loss(logits, labels)
    n, c = logits.shape
    return call_for_double("s2c_cross_entropy_loss", pointer(logits), pointer(labels), n, c)


def cross_entropy_loss_backward(logits, labels):
    """(softmax(logits) - one_hot(labels)) / N."""
    op = "cross_entropy_loss_backward"
    logits, labels = checks.cross_entropy_loss_backward(logits, labels)
    n, c = logits.shape
    grad = new_output(op, (n, c))
    call("s2c_cross_entropy_loss_backward", pointer(logits), pointer(labels), pointer(grad), n, c)
    return grad


def bce_with_logits_loss(logits, targets):
    """mean of max(z, 0) - z * t + log(1 + exp(-|z|)); logits z and targets t of one shape."""
    logits, targets = checks.bce_with_logits_loss(logits, targets)
    return call_for_double(
        "s2c_bce_with_logits_loss", pointer(logits), pointer(targets), logits.size
    )


def bce_with_logits_loss_backward(logits, targets):
    """(sigmoid(logits) - targets) / size."""
    op = "bce_with_logits_loss_backward"
    logits, targets = checks.bce_with_logits_loss_backward(logits, targets)
    grad = new_output(op, logits.shape)
    call(
        "s2c_bce_with_logits_loss_backward",
        pointer(logits),
        pointer(targets),
        pointer(grad),
        logits.size,
    )
    return grad


def hinge_loss(scores, labels, margin=1.0):
    """Multiclass SVM: mean over the batch of sum_{j != y} max(0, s_j - s_y + margin)."""
    scores, labels, margin = checks.hinge_loss(scores, labels, margin)
    n, c = scores.shape
    return call_for_double("s2c_hinge_loss", pointer(scores), pointer(labels), n, c, margin)


def hinge_loss_backward(scores, labels, margin=1.0):
    """Gradient of hinge_loss w.r.t. scores [N, C]."""
    op = "hinge_loss_backward"
    scores, labels, margin = checks.hinge_loss_backward(scores, labels, margin)
    n, c = scores.shape
    grad = new_output(op, (n, c))
    call("s2c_hinge_loss_backward", pointer(scores), pointer(labels), pointer(grad), n, c, margin)
    return grad

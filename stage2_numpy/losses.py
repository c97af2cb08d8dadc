"""Losses (week 7): each returns the mean over the batch as a Python float, and each `*_backward`
takes the forward's arguments and returns the gradient w.r.t. the first (same shape as it).

Terms are computed in float32 and summed in float64: a float32 sum of many terms drifts.
"""

import numpy as np

from ._checks import checks
from .activations import sigmoid, softmax


def mse_loss(pred, target):
    """Mean over all elements of (pred - target)^2; pred and target have one shape."""
    pred, target = checks.mse_loss(pred, target)
    # BEGIN SOLUTION week 7, task mse_loss
    diff = np.subtract(pred, target, dtype=np.float64).ravel()
    return float(diff @ diff) / diff.size
    # END SOLUTION


def mse_loss_backward(pred, target):
    """d mse / d pred = 2 * (pred - target) / size."""
    pred, target = checks.mse_loss_backward(pred, target)
    # BEGIN SOLUTION week 7, task mse_loss_backward
    grad = pred - target
    grad *= 2 / pred.size
    return grad
    # END SOLUTION


def cross_entropy_loss(logits, labels):
    """Mean over the batch of -log_softmax(logits)[i, labels[i]]: logits [N, C], labels [N]."""
    logits, labels = checks.cross_entropy_loss(logits, labels)
    # BEGIN SOLUTION week 7, task cross_entropy_loss
    # Fused and stable: -log_softmax[i, y] = log(sum_j exp(z_ij)) - z_iy with z = logits - row max.
    rows = np.arange(logits.shape[0])
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_normalizer = np.log(np.exp(shifted).sum(axis=1, dtype=np.float64))
    return float(np.mean(log_normalizer - shifted[rows, labels]))
    # END SOLUTION


def cross_entropy_loss_backward(logits, labels):
    """(softmax(logits) - one_hot(labels)) / N: logits [N, C], labels [N] -> [N, C]."""
    logits, labels = checks.cross_entropy_loss_backward(logits, labels)
    # BEGIN SOLUTION week 7, task cross_entropy_loss_backward
    n = logits.shape[0]
    grad = softmax(logits)
    grad[np.arange(n), labels] -= 1
    grad /= n
    return grad
    # END SOLUTION


def bce_with_logits_loss(logits, targets):
    """Mean over all elements of the binary cross entropy of sigmoid(logits) against targets."""
    logits, targets = checks.bce_with_logits_loss(logits, targets)
    # BEGIN SOLUTION week 7, task bce_with_logits_loss
    # Stable form of -t*log(sigmoid(z)) - (1-t)*log(1-sigmoid(z)): no exp of a positive number.
    terms = np.maximum(logits, 0) - logits * targets + np.log1p(np.exp(-np.abs(logits)))
    return float(terms.sum(dtype=np.float64)) / terms.size
    # END SOLUTION


def bce_with_logits_loss_backward(logits, targets):
    """(sigmoid(logits) - targets) / size, logits' shape."""
    logits, targets = checks.bce_with_logits_loss_backward(logits, targets)
    # BEGIN SOLUTION week 7, task bce_with_logits_loss_backward
    grad = sigmoid(logits)
    grad -= targets
    grad /= grad.size
    return grad
    # END SOLUTION


def _hinge_margins(scores, labels, margin):
    """s_j - s_y + margin for every wrong class j, and 0 at the correct class: [N, C]."""
    # BEGIN SOLUTION week 7, task hinge_loss
    rows = np.arange(scores.shape[0])
    margins = scores - scores[rows, labels][:, None]
    margins += margin
    margins[rows, labels] = 0  # the sum runs over the wrong classes only
    return margins
    # END SOLUTION


def hinge_loss(scores, labels, margin=1.0):
    """Multiclass SVM loss: mean over the batch of sum_{j != y} max(0, s_j - s_y + margin).

    scores [N, C], labels [N].
    """
    scores, labels, margin = checks.hinge_loss(scores, labels, margin)
    # BEGIN SOLUTION week 7, task hinge_loss
    margins = _hinge_margins(scores, labels, margin)
    return float(np.maximum(margins, 0).sum(dtype=np.float64)) / scores.shape[0]
    # END SOLUTION


def hinge_loss_backward(scores, labels, margin=1.0):
    """Gradient of hinge_loss w.r.t. scores [N, C], labels [N] -> [N, C].

    Each positive margin adds 1/N at its class and -1/N at the correct class.
    """
    scores, labels, margin = checks.hinge_loss_backward(scores, labels, margin)
    # BEGIN SOLUTION week 7, task hinge_loss_backward
    n = scores.shape[0]
    grad = (_hinge_margins(scores, labels, margin) > 0).astype(np.float32)
    grad[np.arange(n), labels] = -grad.sum(axis=1)  # s_y appears, negated, in each active term
    grad /= n
    return grad
    # END SOLUTION

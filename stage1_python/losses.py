"""Losses and their gradients (week 3). Each loss is a Python float, the mean over the batch (or
over all elements); each `*_backward` takes the loss's arguments and returns d loss / d first one.
"""

import math

from ._checks import checks, tensor_shape
from ._tensor import flatten, map_elements
from .activations import log_softmax, sigmoid, softmax


def mse_loss(pred, target):
    """Mean over all elements of (pred - target)^2; pred and target one shape (any)."""
    pred, target = checks.mse_loss(pred, target)
    count = math.prod(tensor_shape(pred))
    # BEGIN SOLUTION week 3, task mse_loss
    return sum((p - t) ** 2 for p, t in zip(flatten(pred), flatten(target), strict=True)) / count
    # END SOLUTION


def mse_loss_backward(pred, target):
    """d mse_loss / d pred = 2 * (pred - target) / count, pred's shape."""
    pred, target = checks.mse_loss_backward(pred, target)
    count = math.prod(tensor_shape(pred))
    # BEGIN SOLUTION week 3, task mse_loss_backward
    return map_elements(lambda p, t: 2.0 * (p - t) / count, pred, target)
    # END SOLUTION


def cross_entropy_loss(logits, labels):
    """Mean over the batch of -log_softmax(logits)[i][labels[i]]; logits [N, C], int labels [N]."""
    logits, labels = checks.cross_entropy_loss(logits, labels)
    n = len(logits)
    # BEGIN SOLUTION week 3, task cross_entropy_loss
    # log_softmax stays finite; log(softmax(x)) would underflow to log(0) = -inf far from the max.
    log_probabilities = log_softmax(logits)
    return -sum(row[label] for row, label in zip(log_probabilities, labels, strict=True)) / n
    # END SOLUTION


def cross_entropy_loss_backward(logits, labels):
    """d cross_entropy_loss / d logits = (softmax(logits) - one_hot(labels)) / N, [N, C]."""
    logits, labels = checks.cross_entropy_loss_backward(logits, labels)
    n = len(logits)
    # BEGIN SOLUTION week 3, task cross_entropy_loss_backward
    return [
        [(p - (1.0 if j == label else 0.0)) / n for j, p in enumerate(row)]
        for row, label in zip(softmax(logits), labels, strict=True)
    ]
    # END SOLUTION


def bce_with_logits_loss(logits, targets):
    """Mean over all elements of the binary cross-entropy of sigmoid(logits) against targets in
    [0, 1], in the stable form max(z, 0) - z*t + log(1 + exp(-|z|)); one shape (any)."""
    logits, targets = checks.bce_with_logits_loss(logits, targets)
    count = math.prod(tensor_shape(logits))
    # BEGIN SOLUTION week 3, task bce_with_logits_loss
    return (
        sum(
            max(z, 0.0) - z * t + math.log1p(math.exp(-abs(z)))
            for z, t in zip(flatten(logits), flatten(targets), strict=True)
        )
        / count
    )
    # END SOLUTION


def bce_with_logits_loss_backward(logits, targets):
    """d bce_with_logits_loss / d logits = (sigmoid(logits) - targets) / count, logits' shape."""
    logits, targets = checks.bce_with_logits_loss_backward(logits, targets)
    count = math.prod(tensor_shape(logits))
    # BEGIN SOLUTION week 3, task bce_with_logits_loss_backward
    return map_elements(lambda p, t: (p - t) / count, sigmoid(logits), targets)
    # END SOLUTION


def hinge_loss(scores, labels, margin=1.0):
    """Multiclass SVM loss: mean over the batch of sum_{j != y} max(0, s_j - s_y + margin);
    scores [N, C], int labels [N]."""
    scores, labels, margin = checks.hinge_loss(scores, labels, margin)
    n = len(scores)
    # BEGIN SOLUTION week 3, task hinge_loss
    total = 0.0
    for row, label in zip(scores, labels, strict=True):
        correct = row[label]
        hinges = (s - correct + margin for j, s in enumerate(row) if j != label)
        # `0.0 if h <= 0.0 else h`, not max(0.0, h): max drops a NaN hinge, this keeps it
        total += sum(0.0 if h <= 0.0 else h for h in hinges)
    return total / n
    # END SOLUTION


def hinge_loss_backward(scores, labels, margin=1.0):
    """d hinge_loss / d scores, [N, C]: each wrong class j with a positive term adds 1/N to j and
    takes 1/N from the label's score."""
    scores, labels, margin = checks.hinge_loss_backward(scores, labels, margin)
    n = len(scores)
    # BEGIN SOLUTION week 3, task hinge_loss_backward
    grad = []
    for row, label in zip(scores, labels, strict=True):
        grad_row = [0.0] * len(row)
        for j, s in enumerate(row):
            if j != label and s - row[label] + margin > 0.0:
                grad_row[j] += 1.0 / n
                grad_row[label] -= 1.0 / n
        grad.append(grad_row)
    return grad
    # END SOLUTION

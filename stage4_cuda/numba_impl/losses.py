"""Losses (week 14). Each forward returns a `DeviceScalar`: the mean stays on the GPU until
`float(loss)` reads it, so a training step needs no host round trip (stage4_cuda/README.md).
Each `*_backward` takes the forward's arguments and returns the gradient w.r.t. the first.

A forward writes one term per element (mse, bce) or per row (cross-entropy, hinge) into a scratch
array, and `_mean` adds the terms in float64 in one block: the same order on every run.
"""

import math

from numba import cuda, float32, float64

from ..runtime import device
from ..runtime.checks import checks
from ..runtime.device import DeviceScalar, flat, scratch
from ..runtime.launch import launch, launch_elementwise
from .reduce import ROW_THREADS, block_max, block_sum

ZERO = float32(0)
ONE = float32(1)


@cuda.jit
def _mean(terms, loss):
    # One block: each thread adds every ROW_THREADS-th term in float64, a tree adds the rest.
    cache = cuda.shared.array(ROW_THREADS, float64)
    t = cuda.threadIdx.x
    partial = float64(0)
    for i in range(t, terms.size, ROW_THREADS):
        partial += terms[i]
    total = block_sum(cache, partial)
    if t == 0:
        loss[0] = total / terms.size


def _mean_of(terms):
    """The mean of a 1-D scratch array of terms, as a DeviceScalar."""
    loss = device.empty((1,))
    launch(_mean, 1, ROW_THREADS, terms, loss)
    return DeviceScalar(loss)


@cuda.jit
def _mse_terms(pred, target, terms):
    # BEGIN SOLUTION week 14, task mse_loss
    i = cuda.grid(1)
    if i < terms.size:
        diff = pred[i] - target[i]
        terms[i] = diff * diff
    # END SOLUTION


@cuda.jit
def _mse_backward(pred, target, grad):
    # BEGIN SOLUTION week 14, task mse_loss_backward
    i = cuda.grid(1)
    if i < grad.size:
        grad[i] = float32(2.0 / grad.size) * (pred[i] - target[i])
    # END SOLUTION


def mse_loss(pred, target):
    """Mean over all elements of (pred - target)^2; pred and target have one shape."""
    pred, target = checks.mse_loss(pred, target)
    terms = scratch(pred.size)
    launch_elementwise(_mse_terms, pred.size, flat(pred), flat(target), terms)
    return _mean_of(terms)


def mse_loss_backward(pred, target):
    """d mse / d pred = 2 * (pred - target) / size."""
    pred, target = checks.mse_loss_backward(pred, target)
    grad = device.empty(pred.shape)
    launch_elementwise(_mse_backward, pred.size, flat(pred), flat(target), flat(grad))
    return grad


@cuda.jit
def _bce_terms(z, t, terms):
    # The stable form max(z, 0) - z*t + log(1 + exp(-|z|)): exp never overflows.
    # BEGIN SOLUTION week 14, task bce_with_logits_loss
    i = cuda.grid(1)
    if i < terms.size:
        positive_part = ZERO if z[i] <= 0 else z[i]  # max(z, 0), keeping a NaN (fmaxf would not)
        terms[i] = positive_part - z[i] * t[i] + math.log1p(math.exp(-abs(z[i])))
    # END SOLUTION


@cuda.jit
def _bce_backward(z, t, grad):
    # (sigmoid(z) - t) / size, with the stable sigmoid of activations.py.
    # BEGIN SOLUTION week 14, task bce_with_logits_loss_backward
    i = cuda.grid(1)
    if i < grad.size:
        e = math.exp(-abs(z[i]))
        positive = ONE / (ONE + e)
        sigmoid = positive if z[i] >= 0 else e * positive
        grad[i] = (sigmoid - t[i]) / float32(grad.size)
    # END SOLUTION


def bce_with_logits_loss(logits, targets):
    """Mean over all elements of the binary cross-entropy of sigmoid(logits) against targets."""
    logits, targets = checks.bce_with_logits_loss(logits, targets)
    terms = scratch(logits.size)
    launch_elementwise(_bce_terms, logits.size, flat(logits), flat(targets), terms)
    return _mean_of(terms)


def bce_with_logits_loss_backward(logits, targets):
    """(sigmoid(logits) - targets) / size."""
    logits, targets = checks.bce_with_logits_loss_backward(logits, targets)
    grad = device.empty(logits.shape)
    launch_elementwise(_bce_backward, logits.size, flat(logits), flat(targets), flat(grad))
    return grad


# --- cross-entropy: one block per row ----------------------------------------------------------


@cuda.jit(device=True)
def _logsumexp(cache, x, row):
    """log(sum_j exp(x[row, j])), stable, reduced over the block: (maximum, log-sum-exp)."""
    t = cuda.threadIdx.x
    top = float32(-math.inf)
    for j in range(t, x.shape[1], ROW_THREADS):
        top = max(top, x[row, j])
    top = block_max(cache, top)
    total = ZERO
    for j in range(t, x.shape[1], ROW_THREADS):
        total += math.exp(x[row, j] - top)
    return top, top + math.log(block_sum(cache, total))


@cuda.jit
def _cross_entropy_terms(logits, labels, terms):
    # BEGIN SOLUTION week 14, task cross_entropy_loss
    cache = cuda.shared.array(ROW_THREADS, float32)
    row = cuda.blockIdx.x
    _, lse = _logsumexp(cache, logits, row)
    if cuda.threadIdx.x == 0:
        terms[row] = lse - logits[row, labels[row]]
    # END SOLUTION


@cuda.jit
def _cross_entropy_backward(logits, labels, grad):
    # (softmax(logits) - one_hot(labels)) / N
    # BEGIN SOLUTION week 14, task cross_entropy_loss_backward
    cache = cuda.shared.array(ROW_THREADS, float32)
    row = cuda.blockIdx.x
    n = float32(logits.shape[0])
    _, lse = _logsumexp(cache, logits, row)
    for j in range(cuda.threadIdx.x, logits.shape[1], ROW_THREADS):
        hot = ONE if j == labels[row] else ZERO
        grad[row, j] = (math.exp(logits[row, j] - lse) - hot) / n
    # END SOLUTION


def cross_entropy_loss(logits, labels):
    """Mean over the batch of -log_softmax(logits)[i, labels[i]]; logits [N, C], labels [N]."""
    logits, labels = checks.cross_entropy_loss(logits, labels)
    terms = scratch(logits.shape[0])
    launch(_cross_entropy_terms, logits.shape[0], ROW_THREADS, logits, labels, terms)
    return _mean_of(terms)


def cross_entropy_loss_backward(logits, labels):
    """(softmax(logits) - one_hot(labels)) / N, [N, C]."""
    logits, labels = checks.cross_entropy_loss_backward(logits, labels)
    grad = device.empty(logits.shape)
    launch(_cross_entropy_backward, logits.shape[0], ROW_THREADS, logits, labels, grad)
    return grad


# --- hinge: one block per row ------------------------------------------------------------------


@cuda.jit
def _hinge_terms(scores, labels, margin, terms):
    # BEGIN SOLUTION week 14, task hinge_loss
    cache = cuda.shared.array(ROW_THREADS, float32)
    row = cuda.blockIdx.x
    label = labels[row]
    correct = scores[row, label]
    partial = ZERO
    for j in range(cuda.threadIdx.x, scores.shape[1], ROW_THREADS):
        violation = scores[row, j] - correct + margin
        if j != label and not violation <= 0:  # a NaN counts: it makes the loss NaN
            partial += violation
    total = block_sum(cache, partial)
    if cuda.threadIdx.x == 0:
        terms[row] = total
    # END SOLUTION


@cuda.jit
def _hinge_backward(scores, labels, margin, grad):
    # Each violated margin adds 1/N to its class and takes 1/N from the correct one.
    # BEGIN SOLUTION week 14, task hinge_loss_backward
    cache = cuda.shared.array(ROW_THREADS, float32)
    row = cuda.blockIdx.x
    label = labels[row]
    correct = scores[row, label]
    n = float32(scores.shape[0])
    violated = ZERO
    for j in range(cuda.threadIdx.x, scores.shape[1], ROW_THREADS):
        if j != label and scores[row, j] - correct + margin > 0:
            grad[row, j] = ONE / n
            violated += ONE
        elif j != label:
            grad[row, j] = ZERO
    violated = block_sum(cache, violated)
    if cuda.threadIdx.x == 0:
        grad[row, label] = -violated / n
    # END SOLUTION


def hinge_loss(scores, labels, margin=1.0):
    """Mean over the batch of sum_{j != y} max(0, s_j - s_y + margin); scores [N, C]."""
    scores, labels, margin = checks.hinge_loss(scores, labels, margin)
    margin = float32(margin)  # the kernel computes in float32
    terms = scratch(scores.shape[0])
    launch(_hinge_terms, scores.shape[0], ROW_THREADS, scores, labels, margin, terms)
    return _mean_of(terms)


def hinge_loss_backward(scores, labels, margin=1.0):
    """The gradient of hinge_loss w.r.t. scores, [N, C]."""
    scores, labels, margin = checks.hinge_loss_backward(scores, labels, margin)
    margin = float32(margin)  # the kernel computes in float32
    grad = device.empty(scores.shape)
    launch(_hinge_backward, scores.shape[0], ROW_THREADS, scores, labels, margin, grad)
    return grad

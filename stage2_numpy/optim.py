"""Optimizer steps, in place (week 7): p, g and the state arrays have one shape; each returns None.

`weight_decay` adds weight_decay * p to the gradient first (L2, as torch.optim). The updates follow
torch.optim's formulas, so a step here matches a step there. p and the state arrays must be
float32 and C-contiguous: the step writes into them.
"""

import math

import numpy as np

from ._checks import checks


def _decayed(g, p, weight_decay):
    """g + weight_decay * p (a new array), or g itself when there is no decay."""
    return g + weight_decay * p if weight_decay else g


def sgd_step(p, g, lr, weight_decay=0):
    """p -= lr * g."""
    p, g, lr, weight_decay = checks.sgd_step(p, g, lr, weight_decay)
    # BEGIN SOLUTION week 7, task sgd_step
    p -= lr * _decayed(g, p, weight_decay)
    # END SOLUTION


def momentum_step(p, g, v, lr, momentum, nesterov=False, weight_decay=0):
    """v = momentum * v + g; p -= lr * (g + momentum * v if nesterov else v)."""
    p, g, v, lr, momentum, nesterov, weight_decay = checks.momentum_step(
        p, g, v, lr, momentum, nesterov, weight_decay
    )
    # BEGIN SOLUTION week 7, task momentum_step
    g = _decayed(g, p, weight_decay)
    v *= momentum
    v += g
    p -= lr * (g + momentum * v if nesterov else v)
    # END SOLUTION


def rmsprop_step(p, g, s, lr, alpha=0.99, eps=1e-8, weight_decay=0):
    """s = alpha * s + (1 - alpha) * g^2; p -= lr * g / (sqrt(s) + eps)."""
    p, g, s, lr, alpha, eps, weight_decay = checks.rmsprop_step(
        p, g, s, lr, alpha, eps, weight_decay
    )
    # BEGIN SOLUTION week 7, task rmsprop_step
    g = _decayed(g, p, weight_decay)
    s *= alpha
    s += (1 - alpha) * (g * g)
    p -= lr * g / (np.sqrt(s) + eps)
    # END SOLUTION


def adam_step(p, g, m, v, t, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0):
    """Adam, step number t from 1: m and v are running means of g and g^2, bias-corrected.

    m = beta1*m + (1-beta1)*g; v = beta2*v + (1-beta2)*g^2;
    p -= lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps).
    """
    p, g, m, v, t, lr, beta1, beta2, eps, weight_decay = checks.adam_step(
        p, g, m, v, t, lr, beta1, beta2, eps, weight_decay
    )
    # BEGIN SOLUTION week 7, task adam_step
    g = _decayed(g, p, weight_decay)
    m *= beta1
    m += (1 - beta1) * g
    v *= beta2
    v += (1 - beta2) * (g * g)
    # sqrt(v / c2) = sqrt(v) / sqrt(c2): the bias corrections are scalars, applied once
    denominator = np.sqrt(v)
    denominator *= 1 / math.sqrt(1 - beta2**t)
    denominator += eps
    p -= (lr / (1 - beta1**t)) * m / denominator
    # END SOLUTION

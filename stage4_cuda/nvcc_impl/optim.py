"""Optimizer steps (csrc/optim.cu, week 14), in place on device arrays: one thread per parameter.
`weight_decay` adds weight_decay * p to g first."""

import numpy as np

from ._checks import checks
from ._library import call


def sgd_step(p, g, lr, weight_decay=0.0):
    """p -= lr * (g + weight_decay * p)."""
    p, g, lr, weight_decay = checks.sgd_step(p, g, lr, weight_decay)
    call("s2c_cuda_sgd_step", p, g, p.size, lr, weight_decay)


def momentum_step(p, g, v, lr, momentum, nesterov=False, weight_decay=0.0):
    """v = momentum * v + g; p -= lr * (g + momentum * v if nesterov else v)."""
    p, g, v, lr, momentum, nesterov, weight_decay = checks.momentum_step(
        p, g, v, lr, momentum, nesterov, weight_decay)
    call("s2c_cuda_momentum_step", p, g, v, p.size, lr, momentum, nesterov, weight_decay)


def rmsprop_step(p, g, s, lr, alpha=0.99, eps=1e-8, weight_decay=0.0):
    """s = alpha * s + (1 - alpha) * g^2; p -= lr * g / (sqrt(s) + eps)."""
    p, g, s, lr, alpha, eps, weight_decay = checks.rmsprop_step(p, g, s, lr, alpha, eps,
                                                                weight_decay)
    call("s2c_cuda_rmsprop_step", p, g, s, p.size, lr, alpha, eps, weight_decay)


def adam_step(p, g, m, v, t, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
    """Adam with bias correction; t is the step number, from 1. The corrections 1 - beta^t are
    computed here in double, rounded to float32 as the numba variant's are."""
    p, g, m, v, t, lr, beta1, beta2, eps, weight_decay = checks.adam_step(
        p, g, m, v, t, lr, beta1, beta2, eps, weight_decay)
    beta1, beta2 = float(np.float32(beta1)), float(np.float32(beta2))
    call("s2c_cuda_adam_step", p, g, m, v, p.size, lr, beta1, beta2, eps, weight_decay,
         1 - beta1**t, 1 - beta2**t)

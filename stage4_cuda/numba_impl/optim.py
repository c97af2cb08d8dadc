"""Optimizer steps (week 14), in place on device arrays: one thread per parameter, which reads
p, g and the state and writes p and the state back (7 arrays' worth of bytes for Adam: bound by
memory bandwidth, the roofline of these kernels). `weight_decay` adds weight_decay * p to g first.
"""

import math

from numba import cuda, float32

from . import _checks as checks
from ._device import flat, launch_elementwise

ONE = float32(1)


def _params(op, p, g, *states):
    """Check p (updated in place), g of p's shape and the state arrays (in place, p's shape)."""
    p = checks.in_place(op, "p", p)
    g = checks.same_shape(op, "g", g, "p", p.shape)
    checked = [checks.in_place(op, name, state, p.shape) for name, state in states]
    return [flat(array) for array in (p, g, *checked)]


def _rates(op, **values):
    """Check lr, weight_decay and the momentum-like scalars: finite and >= 0; as float32."""
    return [checks.real(op, name, value, 0) for name, value in values.items()]


@cuda.jit
def _sgd(p, g, lr, weight_decay):
    # BEGIN SOLUTION week 14, task sgd_step
    i = cuda.grid(1)
    if i < p.size:
        p[i] -= lr * (g[i] + weight_decay * p[i])
    # END SOLUTION


def sgd_step(p, g, lr, weight_decay=0.0):
    """p -= lr * (g + weight_decay * p)."""
    op = "sgd_step"
    p, g = _params(op, p, g)
    launch_elementwise(_sgd, p.size, p, g, *_rates(op, lr=lr, weight_decay=weight_decay))


@cuda.jit
def _momentum(p, g, v, lr, momentum, weight_decay, nesterov):
    # BEGIN SOLUTION week 14, task momentum_step
    i = cuda.grid(1)
    if i < p.size:
        grad = g[i] + weight_decay * p[i]
        v[i] = momentum * v[i] + grad
        p[i] -= lr * (grad + momentum * v[i] if nesterov else v[i])
    # END SOLUTION


def momentum_step(p, g, v, lr, momentum, nesterov=False, weight_decay=0.0):
    """v = momentum * v + g; p -= lr * (g + momentum * v if nesterov else v)."""
    op = "momentum_step"
    p, g, v = _params(op, p, g, ("v", v))
    rates = _rates(op, lr=lr, momentum=momentum, weight_decay=weight_decay)
    nesterov = checks.flag(op, "nesterov", nesterov)
    launch_elementwise(_momentum, p.size, p, g, v, *rates, nesterov)


@cuda.jit
def _rmsprop(p, g, s, lr, alpha, eps, weight_decay):
    # BEGIN SOLUTION week 14, task rmsprop_step
    i = cuda.grid(1)
    if i < p.size:
        grad = g[i] + weight_decay * p[i]
        s[i] = alpha * s[i] + (ONE - alpha) * grad * grad
        p[i] -= lr * grad / (math.sqrt(s[i]) + eps)
    # END SOLUTION


def rmsprop_step(p, g, s, lr, alpha=0.99, eps=1e-8, weight_decay=0.0):
    """s = alpha * s + (1 - alpha) * g^2; p -= lr * g / (sqrt(s) + eps)."""
    op = "rmsprop_step"
    p, g, s = _params(op, p, g, ("s", s))
    lr, weight_decay = _rates(op, lr=lr, weight_decay=weight_decay)
    alpha = checks.real(op, "alpha", alpha, 0, 1)
    eps = checks.real(op, "eps", eps, 0, low_open=True)
    launch_elementwise(_rmsprop, p.size, p, g, s, lr, alpha, eps, weight_decay)


@cuda.jit
def _adam(p, g, m, v, lr, beta1, beta2, eps, weight_decay, correction1, correction2):
    # correction1 = 1 - beta1^t and correction2 = 1 - beta2^t come from the host, once per step.
    # BEGIN SOLUTION week 14, task adam_step
    i = cuda.grid(1)
    if i < p.size:
        grad = g[i] + weight_decay * p[i]
        m[i] = beta1 * m[i] + (ONE - beta1) * grad
        v[i] = beta2 * v[i] + (ONE - beta2) * grad * grad
        p[i] -= lr * (m[i] / correction1) / (math.sqrt(v[i] / correction2) + eps)
    # END SOLUTION


def adam_step(p, g, m, v, t, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
    """Adam with bias correction; t is the step number, from 1."""
    op = "adam_step"
    p, g, m, v = _params(op, p, g, ("m", m), ("v", v))
    t = checks.integer(op, "t", t, 1)
    lr, weight_decay = _rates(op, lr=lr, weight_decay=weight_decay)
    beta1 = checks.real(op, "beta1", beta1, 0, 1, high_open=True)
    beta2 = checks.real(op, "beta2", beta2, 0, 1, high_open=True)
    eps = checks.real(op, "eps", eps, 0, low_open=True)
    correction1 = float32(1 - float(beta1) ** t)
    correction2 = float32(1 - float(beta2) ** t)
    launch_elementwise(
        _adam, p.size, p, g, m, v, lr, beta1, beta2, eps, weight_decay, correction1, correction2
    )

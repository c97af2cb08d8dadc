"""Optimizer steps (week 14), in place on device arrays: one thread per parameter, which reads
p, g and the state and writes p and the state back (7 arrays' worth of bytes for Adam: bound by
memory bandwidth, the roofline of these kernels). `weight_decay` adds weight_decay * p to g first.

Each thread loads every value it needs into a local variable before it stores anything: after a
store to v[i] the compiler must load p[i] again (v might be p), and loads issued together are in
flight together (elementwise.py says why that decides the speed).
"""

import math

from numba import cuda, float32

from ._checks import checks
from ._device import flat, launch_elementwise

ONE = float32(1)


def _flat(*arrays):
    """The checked p, g and state arrays seen flat: one thread per parameter."""
    return [flat(array) for array in arrays]


def _float32(*values):
    """The checked scalars as float32, so that a kernel receiving them computes in float32."""
    return [float32(value) for value in values]


@cuda.jit(device=True)
def _decayed(grad, p, weight_decay):
    """grad + weight_decay * p, or grad itself without decay (0 * p would make an Inf p NaN,
    where PyTorch keeps the state finite)."""
    return grad + weight_decay * p if weight_decay != 0 else grad


@cuda.jit
def _sgd(p, g, lr, weight_decay):
    # BEGIN SOLUTION week 14, task sgd_step
    i = cuda.grid(1)
    if i < p.size:
        weight = p[i]
        p[i] = weight - lr * _decayed(g[i], weight, weight_decay)
    # END SOLUTION


def sgd_step(p, g, lr, weight_decay=0.0):
    """p -= lr * (g + weight_decay * p)."""
    p, g, lr, weight_decay = checks.sgd_step(p, g, lr, weight_decay)
    p, g = _flat(p, g)
    launch_elementwise(_sgd, p.size, p, g, *_float32(lr, weight_decay))


@cuda.jit
def _momentum(p, g, v, lr, momentum, weight_decay, nesterov):
    # BEGIN SOLUTION week 14, task momentum_step
    i = cuda.grid(1)
    if i < p.size:
        weight, velocity = p[i], v[i]
        grad = _decayed(g[i], weight, weight_decay)
        velocity = momentum * velocity + grad
        v[i] = velocity
        p[i] = weight - lr * (grad + momentum * velocity if nesterov else velocity)
    # END SOLUTION


def momentum_step(p, g, v, lr, momentum, nesterov=False, weight_decay=0.0):
    """v = momentum * v + g; p -= lr * (g + momentum * v if nesterov else v)."""
    p, g, v, lr, momentum, nesterov, weight_decay = checks.momentum_step(
        p, g, v, lr, momentum, nesterov, weight_decay)
    p, g, v = _flat(p, g, v)
    launch_elementwise(_momentum, p.size, p, g, v, *_float32(lr, momentum, weight_decay),
                       nesterov)


@cuda.jit
def _rmsprop(p, g, s, lr, alpha, eps, weight_decay):
    # BEGIN SOLUTION week 14, task rmsprop_step
    i = cuda.grid(1)
    if i < p.size:
        weight, square = p[i], s[i]
        grad = _decayed(g[i], weight, weight_decay)
        square = alpha * square + (ONE - alpha) * grad * grad
        s[i] = square
        p[i] = weight - lr * grad / (math.sqrt(square) + eps)
    # END SOLUTION


def rmsprop_step(p, g, s, lr, alpha=0.99, eps=1e-8, weight_decay=0.0):
    """s = alpha * s + (1 - alpha) * g^2; p -= lr * g / (sqrt(s) + eps)."""
    p, g, s, lr, alpha, eps, weight_decay = checks.rmsprop_step(p, g, s, lr, alpha, eps,
                                                                weight_decay)
    p, g, s = _flat(p, g, s)
    launch_elementwise(_rmsprop, p.size, p, g, s, *_float32(lr, alpha, eps, weight_decay))


@cuda.jit
def _adam(p, g, m, v, lr, beta1, beta2, eps, weight_decay, correction1, correction2):
    # correction1 = 1 - beta1^t and correction2 = 1 - beta2^t come from the host, once per step.
    # BEGIN SOLUTION week 14, task adam_step
    i = cuda.grid(1)
    if i < p.size:
        weight, first, second = p[i], m[i], v[i]
        grad = _decayed(g[i], weight, weight_decay)
        first = beta1 * first + (ONE - beta1) * grad
        second = beta2 * second + (ONE - beta2) * grad * grad
        m[i], v[i] = first, second
        p[i] = weight - lr * (first / correction1) / (math.sqrt(second / correction2) + eps)
    # END SOLUTION


def adam_step(p, g, m, v, t, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
    """Adam with bias correction; t is the step number, from 1."""
    p, g, m, v, t, lr, beta1, beta2, eps, weight_decay = checks.adam_step(
        p, g, m, v, t, lr, beta1, beta2, eps, weight_decay)
    p, g, m, v = _flat(p, g, m, v)
    lr, beta1, beta2, eps, weight_decay = _float32(lr, beta1, beta2, eps, weight_decay)
    correction1 = float32(1 - float(beta1) ** t)
    correction2 = float32(1 - float(beta2) ** t)
    launch_elementwise(
        _adam, p.size, p, g, m, v, lr, beta1, beta2, eps, weight_decay, correction1, correction2
    )

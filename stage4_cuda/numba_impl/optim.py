"""Optimizer steps (week 14), in place on device arrays: each thread updates PER_THREAD
parameters a grid apart, reading p, g and the state and writing p and the state back (7 arrays'
worth of bytes for Adam: bound by memory bandwidth, the roofline of these kernels).
`weight_decay` adds weight_decay * p to g first.

Each thread loads every value it needs, for all its parameters, before it stores anything: loads
issued together are in flight together (elementwise.py says why that decides the speed), and
after a store to v[i] the compiler would have to load p[i] again (v might be p).
"""

import math

from numba import cuda, float32

from ..runtime.checks import checks
from ..runtime.device import flat
from .elementwise import PER_THREAD, launch_per_thread

ONE = float32(1)


def _flat(*arrays):
    """The checked p, g and state arrays seen flat."""
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
    first, grid = cuda.grid(1), cuda.gridsize(1)
    weights = cuda.local.array(PER_THREAD, float32)
    grads = cuda.local.array(PER_THREAD, float32)
    for e in range(PER_THREAD):  # every load first
        i = first + e * grid
        if i < p.size:
            weights[e], grads[e] = p[i], g[i]
    for e in range(PER_THREAD):
        i = first + e * grid
        if i < p.size:
            p[i] = weights[e] - lr * _decayed(grads[e], weights[e], weight_decay)
    # END SOLUTION


def sgd_step(p, g, lr, weight_decay=0.0):
    """p -= lr * (g + weight_decay * p)."""
    p, g, lr, weight_decay = checks.sgd_step(p, g, lr, weight_decay)
    p, g = _flat(p, g)
    launch_per_thread(_sgd, p.size, p, g, *_float32(lr, weight_decay))


@cuda.jit
def _momentum(p, g, v, lr, momentum, weight_decay, nesterov):
    # BEGIN SOLUTION week 14, task momentum_step
    first, grid = cuda.grid(1), cuda.gridsize(1)
    weights = cuda.local.array(PER_THREAD, float32)
    grads = cuda.local.array(PER_THREAD, float32)
    velocities = cuda.local.array(PER_THREAD, float32)
    for e in range(PER_THREAD):  # every load first
        i = first + e * grid
        if i < p.size:
            weights[e], grads[e], velocities[e] = p[i], g[i], v[i]
    for e in range(PER_THREAD):
        i = first + e * grid
        if i < p.size:
            grad = _decayed(grads[e], weights[e], weight_decay)
            velocity = momentum * velocities[e] + grad
            v[i] = velocity
            p[i] = weights[e] - lr * (grad + momentum * velocity if nesterov else velocity)
    # END SOLUTION


def momentum_step(p, g, v, lr, momentum, nesterov=False, weight_decay=0.0):
    """v = momentum * v + g; p -= lr * (g + momentum * v if nesterov else v)."""
    p, g, v, lr, momentum, nesterov, weight_decay = checks.momentum_step(
        p, g, v, lr, momentum, nesterov, weight_decay)
    p, g, v = _flat(p, g, v)
    launch_per_thread(_momentum, p.size, p, g, v, *_float32(lr, momentum, weight_decay),
                       nesterov)


@cuda.jit
def _rmsprop(p, g, s, lr, alpha, eps, weight_decay):
    # BEGIN SOLUTION week 14, task rmsprop_step
    first, grid = cuda.grid(1), cuda.gridsize(1)
    weights = cuda.local.array(PER_THREAD, float32)
    grads = cuda.local.array(PER_THREAD, float32)
    squares = cuda.local.array(PER_THREAD, float32)
    for e in range(PER_THREAD):  # every load first
        i = first + e * grid
        if i < p.size:
            weights[e], grads[e], squares[e] = p[i], g[i], s[i]
    for e in range(PER_THREAD):
        i = first + e * grid
        if i < p.size:
            grad = _decayed(grads[e], weights[e], weight_decay)
            square = alpha * squares[e] + (ONE - alpha) * grad * grad
            s[i] = square
            p[i] = weights[e] - lr * grad / (math.sqrt(square) + eps)
    # END SOLUTION


def rmsprop_step(p, g, s, lr, alpha=0.99, eps=1e-8, weight_decay=0.0):
    """s = alpha * s + (1 - alpha) * g^2; p -= lr * g / (sqrt(s) + eps)."""
    p, g, s, lr, alpha, eps, weight_decay = checks.rmsprop_step(p, g, s, lr, alpha, eps,
                                                                weight_decay)
    p, g, s = _flat(p, g, s)
    launch_per_thread(_rmsprop, p.size, p, g, s, *_float32(lr, alpha, eps, weight_decay))


@cuda.jit
def _adam(p, g, m, v, lr, beta1, beta2, eps, weight_decay, correction1, correction2):
    # correction1 = 1 - beta1^t and correction2 = 1 - beta2^t come from the host, once per step.
    # BEGIN SOLUTION week 14, task adam_step
    start, grid = cuda.grid(1), cuda.gridsize(1)
    weights = cuda.local.array(PER_THREAD, float32)
    grads = cuda.local.array(PER_THREAD, float32)
    firsts = cuda.local.array(PER_THREAD, float32)  # the first and second moments
    seconds = cuda.local.array(PER_THREAD, float32)
    for e in range(PER_THREAD):  # every load first
        i = start + e * grid
        if i < p.size:
            weights[e], grads[e], firsts[e], seconds[e] = p[i], g[i], m[i], v[i]
    for e in range(PER_THREAD):
        i = start + e * grid
        if i < p.size:
            grad = _decayed(grads[e], weights[e], weight_decay)
            first = beta1 * firsts[e] + (ONE - beta1) * grad
            second = beta2 * seconds[e] + (ONE - beta2) * grad * grad
            m[i], v[i] = first, second
            p[i] = weights[e] - lr * (first / correction1) / (math.sqrt(second / correction2) + eps)
    # END SOLUTION


def adam_step(p, g, m, v, t, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
    """Adam with bias correction; t is the step number, from 1."""
    p, g, m, v, t, lr, beta1, beta2, eps, weight_decay = checks.adam_step(
        p, g, m, v, t, lr, beta1, beta2, eps, weight_decay)
    p, g, m, v = _flat(p, g, m, v)
    lr, beta1, beta2, eps, weight_decay = _float32(lr, beta1, beta2, eps, weight_decay)
    correction1 = float32(1 - float(beta1) ** t)
    correction2 = float32(1 - float(beta2) ** t)
    launch_per_thread(
        _adam, p.size, p, g, m, v, lr, beta1, beta2, eps, weight_decay, correction1, correction2
    )

"""Optimizer steps (week 12, csrc/optim.c), in place, as torch.optim defines them. p, g and the
state arrays share one shape (any); p and the state arrays must be float32, C-contiguous and
writeable, since C updates them where they are. weight_decay adds weight_decay * p to g first.
Each returns None."""

from ._checks import checks
from ._native import call, pointer


def sgd_step(p, g, lr, weight_decay=0):
    """p -= lr * g."""
    p, g, lr, weight_decay = checks.sgd_step(p, g, lr, weight_decay)
    call("s2c_sgd_step", pointer(p), pointer(g), p.size, lr, weight_decay)


def momentum_step(p, g, v, lr, momentum, nesterov=False, weight_decay=0):
    """v = momentum * v + g; p -= lr * (g + momentum * v if nesterov else v)."""
    p, g, v, lr, momentum, nesterov, weight_decay = checks.momentum_step(
        p, g, v, lr, momentum, nesterov, weight_decay
    )
    call(
        "s2c_momentum_step",
        pointer(p),
        pointer(g),
        pointer(v),
        p.size,
        lr,
        momentum,
        int(nesterov),
        weight_decay,
    )


def rmsprop_step(p, g, s, lr, alpha=0.99, eps=1e-8, weight_decay=0):
    """s = alpha * s + (1 - alpha) * g^2; p -= lr * g / (sqrt(s) + eps)."""
    p, g, s, lr, alpha, eps, weight_decay = checks.rmsprop_step(
        p, g, s, lr, alpha, eps, weight_decay
    )
    call(
        "s2c_rmsprop_step", pointer(p), pointer(g), pointer(s), p.size, lr, alpha, eps, weight_decay
    )


def adam_step(p, g, m, v, t, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0):
    """Adam at step t (from 1): m, v running means of g and g^2, bias-corrected by 1 - beta^t;
    p -= lr * m_hat / (sqrt(v_hat) + eps)."""
    p, g, m, v, t, lr, beta1, beta2, eps, weight_decay = checks.adam_step(
        p, g, m, v, t, lr, beta1, beta2, eps, weight_decay
    )
    call(
        "s2c_adam_step",
        *map(pointer, (p, g, m, v)),
        p.size,
        t,
        lr,
        beta1,
        beta2,
        eps,
        weight_decay,
    )

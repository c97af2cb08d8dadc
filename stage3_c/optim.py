"""Optimizer steps (week 12, csrc/optim.c), in place, as torch.optim defines them. p, g and the
state arrays share one shape (any); p and the state arrays must be float32, C-contiguous and
writeable, since C updates them where they are. weight_decay adds weight_decay * p to g first.
Each returns None."""

from . import _checks as checks
from ._native import call, pointer


def _parameters(op, p, g, lr, weight_decay, **states):
    """Check p, g, lr >= 0, weight_decay >= 0 and the state arrays (named by keyword, each of p's
    shape); returns (p, g, [states in order], lr, weight_decay)."""
    p = checks.in_place(op, "p", p)
    g = checks.same_shape(op, "g", g, "p", p.shape)
    arrays = [checks.in_place(op, name, array, p.shape) for name, array in states.items()]
    lr = checks.real(op, "lr", lr, 0)
    weight_decay = checks.real(op, "weight_decay", weight_decay, 0)
    return p, g, arrays, lr, weight_decay


def sgd_step(p, g, lr, weight_decay=0):
    """p -= lr * g."""
    p, g, _, lr, weight_decay = _parameters("sgd_step", p, g, lr, weight_decay)
    call("s2c_sgd_step", pointer(p), pointer(g), p.size, lr, weight_decay)


def momentum_step(p, g, v, lr, momentum, nesterov=False, weight_decay=0):
    """v = momentum * v + g; p -= lr * (g + momentum * v if nesterov else v)."""
    op = "momentum_step"
    p, g, (v,), lr, weight_decay = _parameters(op, p, g, lr, weight_decay, v=v)
    momentum = checks.real(op, "momentum", momentum, 0)
    nesterov = checks.flag(op, "nesterov", nesterov)
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
    op = "rmsprop_step"
    p, g, (s,), lr, weight_decay = _parameters(op, p, g, lr, weight_decay, s=s)
    alpha = checks.real(op, "alpha", alpha, 0, 1)
    eps = checks.real(op, "eps", eps, 0, low_open=True)
    call(
        "s2c_rmsprop_step", pointer(p), pointer(g), pointer(s), p.size, lr, alpha, eps, weight_decay
    )


def adam_step(p, g, m, v, t, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0):
    """Adam at step t (from 1): m, v running means of g and g^2, bias-corrected by 1 - beta^t;
    p -= lr * m_hat / (sqrt(v_hat) + eps)."""
    op = "adam_step"
    p, g, (m, v), lr, weight_decay = _parameters(op, p, g, lr, weight_decay, m=m, v=v)
    t = checks.integer(op, "t", t, 1, 2**63 - 1)
    beta1 = checks.real(op, "beta1", beta1, 0, 1, high_open=True)
    beta2 = checks.real(op, "beta2", beta2, 0, 1, high_open=True)
    eps = checks.real(op, "eps", eps, 0, low_open=True)
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

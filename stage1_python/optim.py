"""Optimizer steps (week 4). Each updates the parameter p and its state in place (the caller's own
lists) and returns None. g is the gradient; weight_decay adds weight_decay * p to it first (L2, as
torch.optim). p, g and the state (v, s, m) have one shape, any rank.
"""

from ._checks import checks
from ._tensor import rows, sqrt


def _decayed(grad, p, weight_decay):
    """grad + weight_decay * p, or grad itself without decay (0 * p would make an Inf p NaN)."""
    return grad + weight_decay * p if weight_decay else grad


def sgd_step(p, g, lr, weight_decay=0):
    """p -= lr * g."""
    p, g, lr, weight_decay = checks.sgd_step(p, g, lr, weight_decay)
    # BEGIN SOLUTION week 4, task sgd_step
    for p_row, g_row in zip(rows(p), rows(g), strict=True):  # the innermost lists: assign into them
        for j, grad in enumerate(g_row):
            grad = _decayed(grad, p_row[j], weight_decay)
            p_row[j] -= lr * grad
    # END SOLUTION


def momentum_step(p, g, v, lr, momentum, nesterov=False, weight_decay=0):
    """v = momentum * v + g; p -= lr * (g + momentum * v if nesterov else v)."""
    p, g, v, lr, momentum, nesterov, weight_decay = checks.momentum_step(
        p, g, v, lr, momentum, nesterov, weight_decay
    )
    # BEGIN SOLUTION week 4, task momentum_step
    for p_row, g_row, v_row in zip(rows(p), rows(g), rows(v), strict=True):
        for j, grad in enumerate(g_row):
            grad = _decayed(grad, p_row[j], weight_decay)
            v_row[j] = momentum * v_row[j] + grad
            # Nesterov steps with the gradient plus the velocity it is about to reach.
            p_row[j] -= lr * (grad + momentum * v_row[j] if nesterov else v_row[j])
    # END SOLUTION


def rmsprop_step(p, g, s, lr, alpha=0.99, eps=1e-8, weight_decay=0):
    """s = alpha * s + (1 - alpha) * g^2; p -= lr * g / (sqrt(s) + eps)."""
    p, g, s, lr, alpha, eps, weight_decay = checks.rmsprop_step(
        p, g, s, lr, alpha, eps, weight_decay
    )
    # BEGIN SOLUTION week 4, task rmsprop_step
    for p_row, g_row, s_row in zip(rows(p), rows(g), rows(s), strict=True):
        for j, grad in enumerate(g_row):
            grad = _decayed(grad, p_row[j], weight_decay)
            s_row[j] = alpha * s_row[j] + (1 - alpha) * grad * grad
            p_row[j] -= lr * grad / (sqrt(s_row[j]) + eps)
    # END SOLUTION


def adam_step(p, g, m, v, t, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0):
    """Adam, step t (from 1): m and v are running averages of g and g^2, bias-corrected.

    m = beta1*m + (1-beta1)*g; v = beta2*v + (1-beta2)*g^2;
    p -= lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps).
    """
    p, g, m, v, t, lr, beta1, beta2, eps, weight_decay = checks.adam_step(
        p, g, m, v, t, lr, beta1, beta2, eps, weight_decay
    )
    # BEGIN SOLUTION week 4, task adam_step
    # m and v start at 0, so early averages are too small by (1 - beta^t): divide it out.
    m_correction = 1 - beta1**t
    v_correction = 1 - beta2**t
    for p_row, g_row, m_row, v_row in zip(rows(p), rows(g), rows(m), rows(v), strict=True):
        for j, grad in enumerate(g_row):
            grad = _decayed(grad, p_row[j], weight_decay)
            m_row[j] = beta1 * m_row[j] + (1 - beta1) * grad
            v_row[j] = beta2 * v_row[j] + (1 - beta2) * grad * grad
            p_row[j] -= lr * (m_row[j] / m_correction) / (sqrt(v_row[j] / v_correction) + eps)
    # END SOLUTION

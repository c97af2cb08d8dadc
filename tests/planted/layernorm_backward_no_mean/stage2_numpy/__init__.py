"""Planted bug: layernorm_backward forgets the gradient through the row's mean (the mean(g) term
of dx); the term through the variance, dgamma and dbeta are right."""

import numpy as np

from tests.planted.reference import *  # noqa: F403


def layernorm_backward(dy, x, gamma, saved):
    mean, invstd = (statistic[..., None] for statistic in saved)
    x_hat = (x - mean) * invstd
    g = dy * gamma
    dx = invstd * (g - x_hat * (g * x_hat).mean(axis=-1, keepdims=True))  # the bug: no mean(g)
    d = x.shape[-1]
    dbeta = dy.reshape(-1, d).sum(axis=0)
    dgamma = (dy * x_hat).reshape(-1, d).sum(axis=0)
    return dx.astype(np.float32), dgamma.astype(np.float32), dbeta.astype(np.float32)

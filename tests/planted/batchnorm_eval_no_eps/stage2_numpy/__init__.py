"""Planted bug: batchnorm_forward in evaluation divides by sqrt(running_var), forgetting eps;
training is right. Only an eps of the running variances' size shows it."""

import numpy as np

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403


def batchnorm_forward(x, gamma, beta, running_mean, running_var, training, momentum=0.1,
                      eps=1e-5):
    if training:
        return _stage2.batchnorm_forward(x, gamma, beta, running_mean, running_var, training,
                                         momentum, eps)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    invstd = (1 / np.sqrt(running_var)).astype(np.float32)
    y = (x - running_mean.reshape(shape)) * (gamma * invstd).reshape(shape) + beta.reshape(shape)
    return y.astype(np.float32), (running_mean.copy(), invstd)

"""Planted bug: softmax takes each row's maximum and sum over its first 4096 columns only, as a
kernel whose block of 4096 threads never strides along a longer row would: right for rows of up
to 4096 classes, wrong for a vocabulary."""

import numpy as np

from tests.planted.reference import *  # noqa: F403

BLOCK = 4096


def softmax(x):
    head = x[:, :BLOCK]
    shifted = np.exp(x - head.max(axis=1, keepdims=True))
    return (shifted / shifted[:, :BLOCK].sum(axis=1, keepdims=True)).astype(np.float32)

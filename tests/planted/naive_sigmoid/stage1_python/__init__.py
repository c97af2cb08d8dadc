"""Planted bug in stage 1: the naive sigmoid 1 / (1 + exp(-x)), whose math.exp(1000.0) raises
OverflowError for x = -1000."""

import math

from stage1_python import *  # noqa: F403
from stage1_python import _tensor


def sigmoid(x):
    return _tensor.map_elements(lambda v: 1.0 / (1.0 + math.exp(-v)), x)

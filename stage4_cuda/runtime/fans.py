"""The fans of a weight shape, as PyTorch computes them: both variants' initializers
(xavier_uniform, he_normal) scale the shared random stream's numbers by them."""

import math


def fans(shape):
    """(fan_in, fan_out) as PyTorch: shape[1] * receptive field, shape[0] * receptive field."""
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive

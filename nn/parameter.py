"""A trainable array, its gradient, and whether L2 weight decay applies to it."""

from dataclasses import dataclass
from typing import Any


@dataclass
class Parameter:
    """One trainable tensor of a layer.

    `value` and `grad` are native arrays of the layer's tier with the same shape; `backward` fills
    `grad`, an optimizer reads it. `decay` is False for biases and batchnorm's scale and shift:
    L2 weight decay is meant to shrink weights, and shrinking those would only fight the data.
    """

    value: Any
    grad: Any = None
    decay: bool = True

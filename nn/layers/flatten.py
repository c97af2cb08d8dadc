"""[N, C, H, W] -> [N, C*H*W]: images into vectors for the dense layers that follow."""

from math import prod

from nn.layers.base import Layer
from nn.tensor import reshape, shape_of


class Flatten(Layer):
    """Row-major flattening of everything but the batch dimension; a view on NumPy tiers."""

    def build(self, tier, in_shape, seeds):
        self.tier = tier
        return (prod(in_shape),)

    def forward(self, x):
        self.x_shape = shape_of(x)
        return reshape(self.tier, x, (self.x_shape[0], prod(self.x_shape[1:])))

    def backward(self, dout):
        return reshape(self.tier, dout, self.x_shape)

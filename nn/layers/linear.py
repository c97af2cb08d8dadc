"""Fully connected layer: y = x @ w.T + b."""

from nn.layers.base import Layer
from nn.layers.init import initial_weights
from nn.parameter import Parameter
from nn.tensor import full


class Linear(Layer):
    """x [N, in_features] -> y [N, out_features]; weight [out, in] (as PyTorch), bias [out]."""

    def __init__(self, in_features, out_features, init="he"):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.init = init

    def build(self, tier, in_shape, seeds):
        if tuple(in_shape) != (self.in_features,):
            raise ValueError(
                f"{self.describe()} expects inputs of shape ({self.in_features},), "
                f"got {tuple(in_shape)}"
            )
        self.tier = tier
        weight_shape = (self.out_features, self.in_features)
        self.params = {
            "weight": Parameter(initial_weights(tier, self.init, weight_shape, next(seeds))),
            "bias": Parameter(full(tier, (self.out_features,), 0.0), decay=False),
        }
        return (self.out_features,)

    def forward(self, x):
        """y [N, out] = x @ weight.T + bias; keeps x [N, in] for backward."""
        # BEGIN SOLUTION week 9, task Linear.forward
        self.x = x
        return self.tier.linear_forward(x, self.params["weight"].value, self.params["bias"].value)
        # END SOLUTION

    def backward(self, dout):
        """dx [N, in] from dout [N, out]; fills weight.grad [out, in] and bias.grad [out]."""
        # BEGIN SOLUTION week 9, task Linear.backward
        weight, bias = self.params["weight"], self.params["bias"]
        dx, weight.grad, bias.grad = self.tier.linear_backward(self.x, weight.value, dout)
        return dx
        # END SOLUTION

    def describe(self):
        return f"Linear({self.in_features}->{self.out_features})"

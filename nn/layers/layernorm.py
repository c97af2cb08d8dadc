"""Layer normalization over the last dimension: each token's (or example's) features."""

from nn.layers.base import Layer
from nn.parameter import Parameter
from nn.tensor import full


class LayerNorm(Layer):
    """x [N, D] or [N, T, D] -> the same shape, each row of D features normalized by its own mean
    and variance (no batch statistics, so training and evaluation compute the same), then scaled
    by `gamma` [D] (starts at 1) and shifted by `beta` [D] (starts at 0)."""

    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.dim = dim
        self.eps = eps

    def build(self, tier, in_shape, seeds):
        in_shape = tuple(in_shape)
        if not in_shape or in_shape[-1] != self.dim:
            raise ValueError(f"{self.describe()} expects (..., {self.dim}), got {in_shape}")
        self.tier = tier
        self.params = {
            "gamma": Parameter(full(tier, (self.dim,), 1.0), decay=False),
            "beta": Parameter(full(tier, (self.dim,), 0.0), decay=False),
        }
        return in_shape

    def forward(self, x):
        """y (x's shape); keeps x and each row's mean and 1/std for the backward."""
        # BEGIN SOLUTION week 23, task LayerNorm.forward
        self.x = x
        gamma, beta = self.params["gamma"].value, self.params["beta"].value
        y, self.saved = self.tier.layernorm(x, gamma, beta, self.eps)
        return y
        # END SOLUTION

    def backward(self, dout):
        """dx (x's shape) from dout; fills gamma.grad and beta.grad [D]."""
        # BEGIN SOLUTION week 23, task LayerNorm.backward
        gamma, beta = self.params["gamma"], self.params["beta"]
        dx, gamma.grad, beta.grad = self.tier.layernorm_backward(
            dout, self.x, gamma.value, self.saved
        )
        return dx
        # END SOLUTION

    def describe(self):
        return f"LayerNorm({self.dim})"

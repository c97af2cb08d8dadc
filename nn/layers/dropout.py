"""Inverted dropout: zero each element with probability p in training, scale the rest by 1/(1-p)."""

from nn.layers.base import Layer
from nn.seeds import derive_seed


class Dropout(Layer):
    """Identity in evaluation mode; in training a fresh mask per call, drawn by the tier.

    The mask's seed comes from the layer's seed (given at build) and the number of training calls
    so far; both are saved in checkpoints, so a resumed run draws the masks it would have drawn.
    """

    def __init__(self, p=0.5):
        super().__init__()
        if not 0 <= p < 1:
            raise ValueError(f"Dropout: p must be in [0, 1), got {p}")
        self.p = p

    def build(self, tier, in_shape, seeds):
        self.seed = next(seeds)
        self.calls = 0
        return super().build(tier, in_shape, seeds)

    def own_buffers(self):
        return {"seed": self.seed, "calls": self.calls}

    def load_buffer(self, name, value):
        if name not in ("seed", "calls"):
            super().load_buffer(name, value)
        setattr(self, name, int(value))

    def forward(self, x):
        if not self.training or self.p == 0:
            self.mask = None
            return x
        y, self.mask = self.tier.dropout_forward(x, self.p, derive_seed(self.seed, self.calls))
        self.calls += 1
        return y

    def backward(self, dout):
        if self.mask is None:
            return dout
        return self.tier.dropout_backward(dout, self.mask, self.p)

    def describe(self):
        return f"Dropout(p={self.p})"

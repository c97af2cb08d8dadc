"""Batch normalization, dense ([N, C]) or spatial ([N, C, H, W]), per channel C."""

from nn.layers.base import Layer
from nn.parameter import Parameter
from nn.tensor import full


class BatchNorm(Layer):
    """Normalize each channel with the batch's statistics (training) or the running ones (eval).

    Training also updates the running mean and variance in place (the tier's op does it), so that
    evaluation, which may see a single image, does not depend on the other images of its batch.
    Learns a scale `gamma` (starts at 1) and a shift `beta` (starts at 0) per channel.
    """

    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.num_features = num_features
        self.momentum = momentum
        self.eps = eps

    def build(self, tier, in_shape, seeds):
        in_shape = tuple(in_shape)
        if len(in_shape) not in (1, 3) or in_shape[0] != self.num_features:
            raise ValueError(
                f"{self.describe()} expects ({self.num_features},) or ({self.num_features}, H, W),"
                f" got {in_shape}"
            )
        self.tier = tier
        channels = (self.num_features,)
        self.params = {
            "gamma": Parameter(full(tier, channels, 1.0), decay=False),
            "beta": Parameter(full(tier, channels, 0.0), decay=False),
        }
        self.running_mean = full(tier, channels, 0.0)
        self.running_var = full(tier, channels, 1.0)
        return in_shape

    def own_buffers(self):
        return {"running_mean": self.running_mean, "running_var": self.running_var}

    def load_buffer(self, name, value):
        if name not in self.own_buffers():
            super().load_buffer(name, value)
        setattr(self, name, value)

    def forward(self, x):
        """Normalized x (same shape); batch statistics in training, running ones in evaluation."""
        # BEGIN SOLUTION week 10, task BatchNorm.forward
        self.x = x
        y, self.saved = self.tier.batchnorm_forward(
            x,
            self.params["gamma"].value,
            self.params["beta"].value,
            self.running_mean,
            self.running_var,
            self.training,
            self.momentum,
            self.eps,
        )
        return y
        # END SOLUTION

    def backward(self, dout):
        """dx from dout (same shape); fills gamma.grad and beta.grad [C]."""
        if not self.training:
            raise RuntimeError(f"{self.describe()}: backward needs training mode")
        # BEGIN SOLUTION week 10, task BatchNorm.backward
        gamma, beta = self.params["gamma"], self.params["beta"]
        dx, gamma.grad, beta.grad = self.tier.batchnorm_backward(
            dout, self.x, gamma.value, self.saved
        )
        return dx
        # END SOLUTION

    def describe(self):
        return f"BatchNorm({self.num_features})"

"""2-D convolution (cross-correlation, as PyTorch's Conv2d) with stride and zero padding."""

from nn.layers.base import Layer
from nn.layers.init import initial_weights
from nn.parameter import Parameter
from nn.tensor import full


def conv_output_size(size, kernel, stride, padding):
    """Output length along one axis: (size + 2*padding - kernel) // stride + 1."""
    return (size + 2 * padding - kernel) // stride + 1


class Conv2d(Layer):
    """x [N, C, H, W] -> y [N, K, OH, OW]; weight [K, C, k, k], bias [K]."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, init="he"):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.init = init

    def build(self, tier, in_shape, seeds):
        in_shape = tuple(in_shape)
        if len(in_shape) != 3 or in_shape[0] != self.in_channels:
            raise ValueError(
                f"{self.describe()} expects images of shape ({self.in_channels}, H, W), "
                f"got {in_shape}"
            )
        _, height, width = in_shape
        out_h, out_w = (
            conv_output_size(size, self.kernel_size, self.stride, self.padding)
            for size in (height, width)
        )
        if out_h < 1 or out_w < 1:
            raise ValueError(f"{self.describe()}: input {in_shape} is smaller than the kernel")
        self.tier = tier
        weight_shape = (self.out_channels, self.in_channels, self.kernel_size, self.kernel_size)
        self.params = {
            "weight": Parameter(initial_weights(tier, self.init, weight_shape, next(seeds))),
            "bias": Parameter(full(tier, (self.out_channels,), 0.0), decay=False),
        }
        return (self.out_channels, out_h, out_w)

    def forward(self, x):
        """y [N, K, OH, OW] from x [N, C, H, W]; keeps x for backward."""
        # BEGIN SOLUTION week 9, task Conv2d.forward
        self.x = x
        weight, bias = self.params["weight"].value, self.params["bias"].value
        return self.tier.conv2d_forward(x, weight, bias, self.stride, self.padding)
        # END SOLUTION

    def backward(self, dout):
        """dx [N, C, H, W] (None when needs_input_grad is False) from dout [N, K, OH, OW];
        fills weight.grad [K, C, k, k] and bias.grad [K]."""
        # BEGIN SOLUTION week 9, task Conv2d.backward
        weight, bias = self.params["weight"], self.params["bias"]
        dx, weight.grad, bias.grad = self.tier.conv2d_backward(
            self.x, weight.value, dout, self.stride, self.padding, need_dx=self.needs_input_grad
        )
        return dx
        # END SOLUTION

    def describe(self):
        extras = "".join(
            f", {name}={value}"
            for name, value, default in (("stride", self.stride, 1), ("padding", self.padding, 0))
            if value != default
        )
        return f"Conv2d({self.in_channels}->{self.out_channels}, k={self.kernel_size}{extras})"

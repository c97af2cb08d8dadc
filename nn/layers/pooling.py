"""Max and average pooling over k x k windows (no padding)."""

from nn.layers.base import Layer
from nn.layers.conv import conv_output_size
from nn.tensor import shape_of


class _Pool2d(Layer):
    """Shared shape logic: x [N, C, H, W] -> [N, C, OH, OW], OH = (H - k) // stride + 1."""

    def __init__(self, kernel_size, stride=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride

    def build(self, tier, in_shape, seeds):
        in_shape = tuple(in_shape)
        if len(in_shape) != 3:
            raise ValueError(f"{self.describe()} expects images (C, H, W), got {in_shape}")
        channels, height, width = in_shape
        out_h, out_w = (
            conv_output_size(size, self.kernel_size, self.stride, 0) for size in (height, width)
        )
        if out_h < 1 or out_w < 1:
            raise ValueError(f"{self.describe()}: input {in_shape} is smaller than the window")
        self.tier = tier
        return (channels, out_h, out_w)

    def describe(self):
        stride = "" if self.stride == self.kernel_size else f", stride={self.stride}"
        return f"{type(self).__name__}(k={self.kernel_size}{stride})"


class MaxPool2d(_Pool2d):
    """The largest value of each window; the gradient flows only to that element."""

    def forward(self, x):
        self.x_shape = shape_of(x)
        y, self.argmax = self.tier.maxpool2d_forward(x, self.kernel_size, self.stride)
        return y

    def backward(self, dout):
        return self.tier.maxpool2d_backward(
            dout, self.argmax, self.x_shape, self.kernel_size, self.stride
        )


class AvgPool2d(_Pool2d):
    """The mean of each window; the gradient is spread evenly over it."""

    def forward(self, x):
        self.x_shape = shape_of(x)
        return self.tier.avgpool2d_forward(x, self.kernel_size, self.stride)

    def backward(self, dout):
        return self.tier.avgpool2d_backward(dout, self.x_shape, self.kernel_size, self.stride)

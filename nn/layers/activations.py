"""Elementwise nonlinearities; any input shape, output of the same shape."""

from nn.layers.base import Layer


class ReLU(Layer):
    """max(0, x): the gradient passes where the input was positive."""

    def forward(self, x):
        self.x = x
        return self.tier.relu(x)

    def backward(self, dout):
        return self.tier.relu_backward(self.x, dout)


class LeakyReLU(Layer):
    """x where x > 0, alpha * x elsewhere: a small slope keeps negative units learning."""

    def __init__(self, alpha=0.01):
        super().__init__()
        self.alpha = alpha

    def forward(self, x):
        self.x = x
        return self.tier.leaky_relu(x, self.alpha)

    def backward(self, dout):
        return self.tier.leaky_relu_backward(self.x, dout, self.alpha)

    def describe(self):
        return f"LeakyReLU(alpha={self.alpha})"


class Sigmoid(Layer):
    """1 / (1 + exp(-x)); its backward needs only the output, so that is what is kept."""

    def forward(self, x):
        self.y = self.tier.sigmoid(x)
        return self.y

    def backward(self, dout):
        return self.tier.sigmoid_backward(self.y, dout)


class Tanh(Layer):
    """tanh(x); like Sigmoid, its backward needs only the output."""

    def forward(self, x):
        self.y = self.tier.tanh(x)
        return self.y

    def backward(self, dout):
        return self.tier.tanh_backward(self.y, dout)


class GELU(Layer):
    """x * Phi(x), Phi the standard normal's distribution function ('none': exact, with erf;
    'tanh': the tanh approximation), as PyTorch's approximate= chooses."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        self.x = x
        return self.tier.gelu(x, self.approximate)

    def backward(self, dout):
        return self.tier.gelu_backward(self.x, dout, self.approximate)

    def describe(self):
        return f"GELU(approximate={self.approximate!r})"

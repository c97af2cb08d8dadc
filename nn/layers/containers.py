"""Layers made of layers: a chain (Sequential) and a block with a skip connection (Residual)."""

from nn.layers.base import Layer


class Sequential(Layer):
    """Apply layers in order; backward runs them in reverse. Children are named '0', '1', ...

    `names[i]` is the name of `layers[i]`: its position as written, kept when a rewrite at build
    time (nn/layers/fusion.py) merges two layers into one.
    """

    def __init__(self, *layers):
        super().__init__()
        self.layers = list(layers)
        self.names = [str(index) for index in range(len(self.layers))]

    def children(self):
        return dict(zip(self.names, self.layers, strict=True))

    def build(self, tier, in_shape, seeds):
        self.tier = tier
        shape = tuple(in_shape)
        for index, layer in enumerate(self.layers):
            try:
                shape = layer.build(tier, shape, seeds)
            except ValueError as error:
                raise ValueError(f"layer {index}: {error}") from None
            layer.output_shape = shape
        return shape

    def forward(self, x):
        """Each layer's output is the next one's input; returns the last output."""
        # BEGIN SOLUTION week 9, task Sequential.forward
        for layer in self.layers:
            x = layer.forward(x)
        return x
        # END SOLUTION

    def backward(self, dout):
        """The chain rule: each layer's input gradient is the gradient of the layer before it."""
        # BEGIN SOLUTION week 9, task Sequential.backward
        for layer in reversed(self.layers):
            dout = layer.backward(dout)
        return dout
        # END SOLUTION

    def describe(self):
        return f"Sequential({len(self.layers)} layers)"


class Residual(Layer):
    """out = body(x) + shortcut(x): the skip gives the gradient a path that bypasses the body.

    `shortcut` is None for the identity (then body must keep the shape), or a layer (e.g. a 1x1
    strided convolution) that maps x to the body's output shape.
    """

    def __init__(self, body, shortcut=None):
        super().__init__()
        self.body = body
        self.shortcut = shortcut

    def children(self):
        found = {"body": self.body}
        if self.shortcut is not None:
            found["shortcut"] = self.shortcut
        return found

    def build(self, tier, in_shape, seeds):
        self.tier = tier
        body_shape = self.body.output_shape = self.body.build(tier, in_shape, seeds)
        skip_shape = tuple(in_shape)
        if self.shortcut is not None:
            skip_shape = self.shortcut.output_shape = self.shortcut.build(tier, in_shape, seeds)
        if body_shape != skip_shape:
            raise ValueError(
                f"Residual: the body gives {body_shape} but the shortcut gives {skip_shape}"
            )
        return body_shape

    def forward(self, x):
        """body(x) + x, or body(x) + shortcut(x); the sum through the tier's `add`."""
        # BEGIN SOLUTION week 10, task Residual.forward
        skip = x if self.shortcut is None else self.shortcut.forward(x)
        return self.tier.add(self.body.forward(x), skip)
        # END SOLUTION

    def backward(self, dout):
        """The input gradient through both branches (their gradients add up)."""
        # BEGIN SOLUTION week 10, task Residual.backward
        # The sum's gradient reaches both branches unchanged; their input gradients add up.
        dskip = dout if self.shortcut is None else self.shortcut.backward(dout)
        return self.tier.add(self.body.backward(dout), dskip)
        # END SOLUTION

    def describe(self):
        return "Residual(identity)" if self.shortcut is None else "Residual(projection)"

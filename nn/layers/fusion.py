"""Fused layers: a MaxPool2d followed by a ReLU becomes one MaxPoolReLU where the tier has the op.

relu(maxpool(x)) in one pass reads the input and writes the pooled map once, where the two ops
write it, read it and write it again; backward likewise (the pooling routes dy only where the
fused output is positive, as ReLU's backward would pass it). Same numbers, bit for bit: a max and
a comparison, no arithmetic. The tier says it can by having maxpool2d_relu_forward and
maxpool2d_relu_backward (stage 4's nvcc variant: an extra, not an op of the contract).

The fusion is a rewrite of the model's layer lists when it is built (nn/network.py, Model.build):
the layers as written stay plain MaxPool2d and ReLU on every tier. The fused layer keeps the
pool's name among its Sequential's children, and neither layer has parameters or buffers, so the
model's parameter names and its checkpoints are the same on every tier.
"""

from nn.layers.activations import ReLU
from nn.layers.containers import Sequential
from nn.layers.pooling import MaxPool2d
from nn.tensor import shape_of

FUSED_OPS = ("maxpool2d_relu_forward", "maxpool2d_relu_backward")


class MaxPoolReLU(MaxPool2d):
    """relu(maxpool(x)) with the tier's fused op each way; x [N, C, H, W] -> [N, C, OH, OW]."""

    def forward(self, x):
        self.x_shape = shape_of(x)
        self.y, self.argmax = self.tier.maxpool2d_relu_forward(x, self.kernel_size, self.stride)
        return self.y

    def backward(self, dout):
        return self.tier.maxpool2d_relu_backward(
            dout, self.argmax, self.y, self.x_shape, self.kernel_size, self.stride
        )


def fuse_pool_relu(layer, tier):
    """Rewrite `layer` and every Sequential inside it so that each MaxPool2d directly followed by
    a ReLU is one MaxPoolReLU, where `tier` has the fused ops; elsewhere nothing changes."""
    if not all(hasattr(tier, op) for op in FUSED_OPS):
        return
    for child in layer.children().values():
        fuse_pool_relu(child, tier)
    if isinstance(layer, Sequential):
        layer.layers, layer.names = _fused(layer.layers, layer.names)


def _fused(layers, names):
    """(layers, names) with each (MaxPool2d, ReLU) pair replaced by a MaxPoolReLU named as the
    pool."""
    fused_layers, fused_names, index = [], [], 0
    while index < len(layers):
        layer, name = layers[index], names[index]
        follower = layers[index + 1] if index + 1 < len(layers) else None
        if type(layer) is MaxPool2d and type(follower) is ReLU:
            layer = MaxPoolReLU(layer.kernel_size, layer.stride)
            index += 1
        fused_layers.append(layer)
        fused_names.append(name)
        index += 1
    return fused_layers, fused_names

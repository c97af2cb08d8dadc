"""`Model`: a network of layers with what the trainer needs to know: its name, input shape, classes,
loss (nn/models.py builds the curriculum's models from it by name)."""

from itertools import count
from math import prod

from nn.layers import Sequential
from nn.layers.fusion import fuse_pool_relu
from nn.losses import LOSSES
from nn.seeds import derive_seed
from nn.tensor import shape_of


class Model:
    """`net` (a Sequential) bound to a tier, with initial weights drawn from `seed`.

    `input_shape` is one example's shape, e.g. (1, 28, 28); `options` are the builder's keyword
    arguments (kept so a checkpoint can rebuild the same model).
    """

    def __init__(self, name, net, input_shape, num_classes, loss, options=None):
        if not isinstance(net, Sequential):
            raise TypeError("Model: net must be a Sequential")
        self.name = name
        self.net = net
        self.input_shape = tuple(input_shape)
        self.num_classes = num_classes
        self.loss = LOSSES[loss]
        self.options = dict(options or {})
        self.tier = None
        # The input is data, which needs no gradient: the first layer may skip computing one.
        net.layers[0].needs_input_grad = False

    def build(self, tier, seed):
        """Allocate every parameter on `tier`; parameter k gets init seed derive_seed(seed, k).

        Where `tier` has fused ops for a pair of layers, the pair becomes one fused layer first
        (nn/layers/fusion.py): the same numbers, the same parameter names.
        """
        fuse_pool_relu(self.net, tier)
        seeds = (derive_seed(seed, index) for index in count())
        output_shape = self.net.build(tier, self.input_shape, seeds)
        expected = (self.loss.outputs_for(self.num_classes),)
        if output_shape != expected:
            raise ValueError(
                f"model {self.name!r} outputs {output_shape} per example, but its loss "
                f"{self.loss.name} needs {expected}"
            )
        self.tier = tier
        self.seed = seed
        return self

    def forward(self, x):
        return self.net.forward(x)

    def backward(self, dout):
        """Gradients into every parameter's .grad (nothing is returned: see needs_input_grad)."""
        self.net.backward(dout)

    def parameters(self):
        return self.net.parameters()

    def buffers(self):
        return self.net.buffers()

    def load_buffer(self, name, value):
        self.net.load_buffer(name, value)

    def train(self, mode=True):
        self.net.train(mode)

    def eval(self):
        self.net.train(False)

    def parameter_count(self):
        return sum(prod(shape_of(p.value)) for p in self.parameters().values())

    def layer_rows(self):
        """One row per layer, nested ones after their container, in order: (depth, layer,
        output shape or None, parameter count); depth 0 for the model's own layers."""
        rows = []
        _layer_rows(self.net, 0, rows)
        return rows

    def summary(self):
        """A table of layers (nested ones indented), output shapes and parameter counts."""
        rows = [("layer", "output shape", "parameters")]
        for depth, layer, shape, count_here in self.layer_rows():
            shape = "" if shape is None else str(tuple(shape))
            rows.append(("  " * depth + layer.describe(), shape, f"{count_here:,}"))
        widths = [max(len(row[column]) for row in rows) for column in range(3)]
        lines = [f"model {self.name}: input {self.input_shape}, {self.num_classes} classes"]
        for index, row in enumerate(rows):
            lines.append(
                f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:>{widths[2]}}"
            )
            if index == 0:
                lines.append("-" * (sum(widths) + 4))
        lines.append(f"total parameters: {self.parameter_count():,}")
        return "\n".join(lines)


def _layer_rows(layer, depth, rows):
    """Append one row per child of `layer` (recursively), at `depth`."""
    for child in layer.children().values():
        count_here = sum(prod(shape_of(p.value)) for p in child.parameters().values())
        rows.append((depth, child, child.output_shape, count_here))
        _layer_rows(child, depth + 1, rows)

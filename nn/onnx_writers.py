"""ONNX node writers: one per layer kind, in a registry keyed by the layer's class.

`write_layer(graph, layer, x, path)` appends the nodes that compute `layer` on tensor `x` to
`graph` (a GraphWriter) and returns the name of its output tensor. Node and tensor names come from
the layer's dotted path in the model ('3', '2.body.0'), and each initializer is named as the
checkpoint names the parameter ('3.weight'), so an error in either file names the same layer.

Another exporter (an int8 one writing QuantizeLinear / DequantizeLinear pairs, say) registers its
own writers with `writes(LayerClass, registry=ITS_REGISTRY)` and reuses GraphWriter and the
containers' walk (`write_layer(..., registry=ITS_REGISTRY)`).
"""

import numpy as np
from onnx import helper, numpy_helper

from nn.layers import (
    AvgPool2d,
    BatchNorm,
    Conv2d,
    Dropout,
    Flatten,
    LeakyReLU,
    Linear,
    MaxPool2d,
    ReLU,
    Residual,
    Sequential,
    Sigmoid,
    Tanh,
)


class GraphWriter:
    """The nodes and initializers (constant tensors) of a graph being written."""

    def __init__(self):
        self.nodes = []
        self.initializers = []

    def constant(self, name, array):
        """Add float32 `array` as initializer `name`; returns the name."""
        self.initializers.append(numpy_helper.from_array(np.asarray(array, np.float32), name))
        return name

    def node(self, op_type, inputs, path, **attributes):
        """Add one node `op_type` on `inputs`; node and output are named 'PATH:OP_TYPE'."""
        name = f"{path}:{op_type}"
        self.nodes.append(helper.make_node(op_type, inputs, [name], name=name, **attributes))
        return name

    def rename_output(self, tensor, new_name):
        """Give tensor `tensor` (the output of the last node) the name `new_name`."""
        last = self.nodes[-1]
        if list(last.output) != [tensor]:
            raise ValueError(f"tensor {tensor!r} is not the last node's output")
        last.output[0] = new_name
        return new_name


NODE_WRITERS = {}  # {layer class: writer(graph, layer, x, path, registry) -> output tensor}


def writes(*layer_classes, registry=NODE_WRITERS):
    """Register the decorated function as the writer of `layer_classes` in `registry`."""

    def register(writer):
        for layer_class in layer_classes:
            registry[layer_class] = writer
        return writer

    return register


def write_layer(graph, layer, x, path, registry=NODE_WRITERS):
    """Write `layer` (at dotted `path` in its model) on tensor `x`; returns its output tensor."""
    writer = registry.get(type(layer))
    if writer is None:
        raise ValueError(f"layer {path} ({layer.describe()}) has no ONNX node writer")
    return writer(graph, layer, x, path, registry)


def parameter(graph, layer, path, name):
    """The layer's parameter `name` as an initializer named as in a checkpoint."""
    value = layer.tier.to_numpy(layer.params[name].value)
    return graph.constant(f"{path}.{name}", value)


@writes(Sequential)
def write_sequential(graph, layer, x, path, registry):
    for name, child in layer.children().items():
        x = write_layer(graph, child, x, f"{path}.{name}" if path else name, registry)
    return x


@writes(Residual)
def write_residual(graph, layer, x, path, registry):
    body = write_layer(graph, layer.body, x, f"{path}.body", registry)
    skip = x if layer.shortcut is None else write_layer(
        graph, layer.shortcut, x, f"{path}.shortcut", registry
    )
    return graph.node("Add", [body, skip], path)


@writes(Conv2d)
def write_conv(graph, layer, x, path, registry):
    # BEGIN SOLUTION week 19, task write_conv
    k, s, p = layer.kernel_size, layer.stride, layer.padding
    inputs = [x, parameter(graph, layer, path, "weight"), parameter(graph, layer, path, "bias")]
    return graph.node("Conv", inputs, path, kernel_shape=[k, k], strides=[s, s], pads=[p] * 4)
    # END SOLUTION


@writes(Linear)
def write_linear(graph, layer, x, path, registry):
    # Gemm's B transposed is our weight [out, in] as it is stored: y = x @ W.T + b
    inputs = [x, parameter(graph, layer, path, "weight"), parameter(graph, layer, path, "bias")]
    return graph.node("Gemm", inputs, path, transB=1)


@writes(BatchNorm)
def write_batchnorm(graph, layer, x, path, registry):
    tier = layer.tier
    inputs = [
        x,
        parameter(graph, layer, path, "gamma"),
        parameter(graph, layer, path, "beta"),
        graph.constant(f"{path}.running_mean", tier.to_numpy(layer.running_mean)),
        graph.constant(f"{path}.running_var", tier.to_numpy(layer.running_var)),
    ]
    return graph.node("BatchNormalization", inputs, path, epsilon=layer.eps)


@writes(MaxPool2d, AvgPool2d)
def write_pool(graph, layer, x, path, registry):
    op_type = "MaxPool" if isinstance(layer, MaxPool2d) else "AveragePool"
    k, s = layer.kernel_size, layer.stride
    return graph.node(op_type, [x], path, kernel_shape=[k, k], strides=[s, s])


@writes(ReLU, Tanh, Sigmoid)
def write_activation(graph, layer, x, path, registry):
    # A ReLU fused into the pooling before it (nn/layers/fusion.py) is still a ReLU of the model
    op_type = {ReLU: "Relu", Tanh: "Tanh", Sigmoid: "Sigmoid"}[type(layer)]
    return graph.node(op_type, [x], path)


@writes(LeakyReLU)
def write_leaky_relu(graph, layer, x, path, registry):
    return graph.node("LeakyRelu", [x], path, alpha=float(layer.alpha))


@writes(Flatten)
def write_flatten(graph, layer, x, path, registry):
    return graph.node("Flatten", [x], path, axis=1)


@writes(Dropout)
def write_dropout(graph, layer, x, path, registry):
    return x  # the identity in inference

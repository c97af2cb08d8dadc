"""ONNX node writers: one per layer kind, in a registry keyed by the layer's class.

`write_layer(graph, layer, x, path)` appends the nodes that compute `layer` on tensor `x` to
`graph` (a GraphWriter) and returns the name of its output tensor. Node and tensor names come from
the layer's dotted path in the model ('3', '2.body.0'), and each initializer is named as the
checkpoint names the parameter ('3.weight', or '3.int8_weight' for an int8 layer), so an error in
either file names the same layer.

An int8 model (nn/quantized.py) holds a QuantizedLayer where the float model holds a Conv2d or a
Linear, so the same walk writes it: its writer gives the QDQ form (QuantizeLinear and
DequantizeLinear on the input, DequantizeLinear on the int8 weights, then the float layer's Conv or
Gemm), which runtimes fuse into int8 kernels. Another exporter registers its own writers with
`writes(LayerClass, registry=ITS_REGISTRY)` and reuses GraphWriter and the containers' walk
(`write_layer(..., registry=ITS_REGISTRY)`).
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
from nn.layers.fusion import MaxPoolReLU
from nn.quantized import QuantizedLayer


class GraphWriter:
    """The nodes and initializers (constant tensors) of a graph being written."""

    def __init__(self):
        self.nodes = []
        self.initializers = []

    def constant(self, name, array, dtype=np.float32):
        """Add `array` as initializer `name` of `dtype` (float32 unless said); returns the name."""
        self.initializers.append(numpy_helper.from_array(np.asarray(array, dtype), name))
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
    """Write `layer` (at dotted `path` in its model) on tensor `x`; returns its output tensor.
    A layer without a writer of its own takes its nearest base class's: a chained int8 model's
    FusedReLU and CodesMaxPool2d compute what ReLU and MaxPool2d do, on int8 codes, and a
    FusedMaxPool2d stands where the pooling its convolution's kernel does belongs."""
    writer = next((registry[cls] for cls in type(layer).__mro__ if cls in registry), None)
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


def conv_node(graph, conv, inputs, path):
    """The Conv node of Conv2d `conv` on `inputs` (x, weight, bias): the float graph's and the
    QDQ graph's (whose weight is dequantized) alike."""
    # BEGIN SOLUTION week 19, task conv_node
    k, s, p = conv.kernel_size, conv.stride, conv.padding
    return graph.node("Conv", inputs, path, kernel_shape=[k, k], strides=[s, s], pads=[p] * 4)
    # END SOLUTION


def gemm_node(graph, linear, inputs, path):
    """The Gemm node of a Linear on `inputs` (x, weight, bias)."""
    # Gemm's B transposed is our weight [out, in] as it is stored: y = x @ W.T + b
    return graph.node("Gemm", inputs, path, transB=1)


@writes(Conv2d)
def write_conv(graph, layer, x, path, registry):
    inputs = [x, parameter(graph, layer, path, "weight"), parameter(graph, layer, path, "bias")]
    return conv_node(graph, layer, inputs, path)


@writes(Linear)
def write_linear(graph, layer, x, path, registry):
    inputs = [x, parameter(graph, layer, path, "weight"), parameter(graph, layer, path, "bias")]
    return gemm_node(graph, layer, inputs, path)


@writes(QuantizedLayer)
def write_quantized(graph, layer, x, path, registry):
    """QDQ: x through QuantizeLinear and DequantizeLinear (per tensor: the layer's input scale and
    int8 zero point), the int8 weights through DequantizeLinear (per output channel, axis 0, zero
    point 0), then the float layer's Conv or Gemm with the float32 bias. The codes are the layer's
    own; a runtime may run the product in int8 or in float on the dequantized values."""
    host = layer.host
    scale = graph.constant(f"{path}.input_scale", host["input_scale"])
    zero = graph.constant(f"{path}.input_zero_point", host["input_zero_point"], np.int8)
    codes = graph.node("QuantizeLinear", [x, scale, zero], f"{path}.input")
    x = graph.node("DequantizeLinear", [codes, scale, zero], f"{path}.input")
    weight = [
        graph.constant(f"{path}.int8_weight", host["weight"], np.int8),
        graph.constant(f"{path}.weight_scale", host["weight_scale"]),
        graph.constant(f"{path}.weight_zero_point", np.zeros(len(host["weight_scale"])), np.int8),
    ]
    weight = graph.node("DequantizeLinear", weight, f"{path}.weight", axis=0)
    bias = graph.constant(f"{path}.bias", host["bias"])
    product = conv_node if isinstance(layer.original, Conv2d) else gemm_node
    return product(graph, layer.original, [x, weight, bias], path)


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


@writes(MaxPoolReLU)
def write_pool_relu(graph, layer, x, path, registry):
    # one layer of the model where the tier fuses them (nn/layers/fusion.py), two nodes here
    return graph.node("Relu", [write_pool(graph, layer, x, path, registry)], path)


@writes(ReLU, Tanh, Sigmoid)
def write_activation(graph, layer, x, path, registry):
    op_type = next(name for cls, name in ((ReLU, "Relu"), (Tanh, "Tanh"), (Sigmoid, "Sigmoid"))
                   if isinstance(layer, cls))  # fmt: skip
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

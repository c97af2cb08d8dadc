"""ONNX nodes to nn layers: one reader per op type, and the walk from the graph's input to its
logits that turns a chain of nodes into a Sequential and a fork joined by an Add into a Residual.

`read_graph(graph)` returns a `ReadGraph`: the layers (each with the arrays it must be given once
built), the input's shape and the normalization the graph applies first (Sub of a mean, Div by a
std, per channel). Anything nn has no layer for, an op or an attribute or a structure, is an
UnsupportedNodeError naming the node (its name and op type); an inconsistent graph is an
OnnxFileError. The file's own checks (size, opset, tensors, onnx.checker) are nn/import_onnx.py's.
"""

from dataclasses import dataclass, field

import numpy as np
from onnx import helper, numpy_helper

from nn.layers import (
    AvgPool2d,
    BatchNorm,
    Conv2d,
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
from nn.onnx_format import OnnxFileError, UnsupportedNodeError


@dataclass
class ReadLayer:
    """A layer read from `node`, and the arrays to load into it once built: {param: array} and
    {buffer attribute: array}."""

    layer: object
    node: str
    params: dict = field(default_factory=dict)
    buffers: dict = field(default_factory=dict)


@dataclass
class ReadGraph:
    net: Sequential
    read_layers: list  # every ReadLayer, nested ones included
    input_shape: tuple
    mean: np.ndarray  # per channel (feature), float64
    std: np.ndarray


def describe(node):
    return f"node {node.name or '(unnamed)'!r} ({node.op_type})"


def unsupported(node, what):
    return UnsupportedNodeError(f"{describe(node)}: {what}")


class Graph:
    """Lookups over a GraphProto: initializers, producers and consumers of tensors."""

    def __init__(self, graph):
        self.graph = graph
        self.initializers = {tensor.name: tensor for tensor in graph.initializer}
        self.consumers = {}
        for node in graph.node:
            for name in node.input:
                self.consumers.setdefault(name, []).append(node)
        self.outputs = {output.name for output in graph.output}
        self.order = {id(node): index for index, node in enumerate(graph.node)}

    def constant(self, node, index, required=True):
        """Input `index` of `node` as a float64 array; it must be an initializer."""
        if index >= len(node.input) or not node.input[index]:
            if required:
                raise OnnxFileError(f"{describe(node)}: input {index} is missing")
            return None
        name = node.input[index]
        if name not in self.initializers:
            raise unsupported(node, f"input {name!r} must be a constant (an initializer)")
        return numpy_helper.to_array(self.initializers[name]).astype(np.float64)

    def users(self, tensor):
        return self.consumers.get(tensor, [])


def attributes(node, allowed):
    """{name: value} of `node`'s attributes; UnsupportedNodeError for one outside `allowed`
    ({name: a predicate the value must satisfy, or None for any}), naming it."""
    found = {}
    for attribute in node.attribute:
        value = helper.get_attribute_value(attribute)
        if isinstance(value, bytes):
            value = value.decode(errors="replace")
        if attribute.name not in allowed:
            raise unsupported(node, f"attribute {attribute.name}={value!r} is not supported")
        is_valid = allowed[attribute.name]
        if is_valid is not None and not is_valid(value):
            raise unsupported(node, f"attribute {attribute.name}={value!r} is not supported")
        found[attribute.name] = value
    return found


def square(values):
    """One size from a pair of equal sizes (nn's layers take square windows)."""
    return len(values) == 2 and values[0] == values[1]


def all_equal(value):
    return lambda values: all(v == value for v in values)


def zero_pads(values):
    return all(v == 0 for v in values)


def decimal(value):
    """The shortest decimal of a float32 attribute (0.1, not 0.10000000149011612): the number
    that was written."""
    return float(str(np.float32(value)))


NODE_READERS = {}  # {op type: reader(node, graph) -> ReadLayer, or None for the identity}


def reads(*op_types):
    def register(reader):
        for op_type in op_types:
            NODE_READERS[op_type] = reader
        return reader

    return register


@reads("Conv")
def read_conv(node, graph):
    found = attributes(node, {
        "kernel_shape": square, "strides": square, "pads": lambda p: len(set(p)) == 1,
        "dilations": all_equal(1), "group": lambda g: g == 1, "auto_pad": lambda a: a == "NOTSET",
    })
    weight = graph.constant(node, 1)
    if weight.ndim != 4 or weight.shape[2] != weight.shape[3]:
        raise unsupported(node, f"weight of shape {list(weight.shape)}: nn's Conv2d takes a "
                          "square kernel [K, C, k, k]")
    out_channels, in_channels, kernel, _ = weight.shape
    bias = graph.constant(node, 2, required=False)
    bias = np.zeros(out_channels) if bias is None else bias
    if "kernel_shape" in found and found["kernel_shape"][0] != kernel:
        raise OnnxFileError(f"{describe(node)}: kernel_shape {found['kernel_shape']} does not "
                            f"fit the weight's {list(weight.shape)}")
    stride = found.get("strides", [1, 1])[0]
    padding = found.get("pads", [0])[0]
    layer = Conv2d(in_channels, out_channels, kernel, stride=stride, padding=padding)
    return ReadLayer(layer, node.name, {"weight": weight, "bias": bias})


@reads("Gemm")
def read_gemm(node, graph):
    found = attributes(node, {
        "alpha": lambda a: a == 1.0, "beta": lambda b: b == 1.0, "transA": lambda t: t == 0,
        "transB": lambda t: t in (0, 1),
    })
    weight = graph.constant(node, 1)
    if weight.ndim != 2:
        raise OnnxFileError(f"{describe(node)}: weight of shape {list(weight.shape)} is not 2-D")
    if not found.get("transB", 0):
        weight = weight.T  # nn keeps [out, in]
    return linear_layer(node, weight, graph.constant(node, 2, required=False))


@reads("MatMul")
def read_matmul(node, graph):
    attributes(node, {})
    weight = graph.constant(node, 1)
    if weight.ndim != 2:
        raise OnnxFileError(f"{describe(node)}: weight of shape {list(weight.shape)} is not 2-D")
    return linear_layer(node, weight.T, None)


def linear_layer(node, weight, bias):
    out_features, in_features = weight.shape
    bias = np.zeros(out_features) if bias is None else np.broadcast_to(bias, (out_features,))
    return ReadLayer(Linear(in_features, out_features), node.name, {"weight": weight,
                                                                    "bias": np.array(bias)})


@reads("BatchNormalization")
def read_batchnorm(node, graph):
    found = attributes(node, {"epsilon": None, "momentum": None,
                              "training_mode": lambda t: t == 0})
    gamma, beta, mean, var = (graph.constant(node, index) for index in range(1, 5))
    channels = len(gamma)
    if any(array.shape != (channels,) for array in (beta, mean, var)):
        raise OnnxFileError(f"{describe(node)}: scale, bias, mean and var must all be "
                            f"[{channels}]")
    layer = BatchNorm(channels, eps=decimal(found.get("epsilon", 1e-5)))
    return ReadLayer(layer, node.name, {"gamma": gamma, "beta": beta},
                     {"running_mean": mean, "running_var": var})


@reads("MaxPool", "AveragePool")
def read_pool(node, graph):
    found = attributes(node, {
        "kernel_shape": square, "strides": square, "pads": zero_pads, "dilations": all_equal(1),
        "ceil_mode": lambda c: c == 0, "storage_order": lambda s: s == 0,
        "count_include_pad": None, "auto_pad": lambda a: a in ("NOTSET", "VALID"),
    })
    if len(node.output) > 1 and node.output[1]:
        raise unsupported(node, "the Indices output is not supported")
    if "kernel_shape" not in found:
        raise OnnxFileError(f"{describe(node)}: kernel_shape is missing")
    kernel = found["kernel_shape"][0]
    stride = found.get("strides", [1, 1])[0]
    pool = MaxPool2d if node.op_type == "MaxPool" else AvgPool2d
    return ReadLayer(pool(kernel, stride), node.name)


@reads("Relu", "Tanh", "Sigmoid")
def read_activation(node, graph):
    attributes(node, {})
    layer = {"Relu": ReLU, "Tanh": Tanh, "Sigmoid": Sigmoid}[node.op_type]()
    return ReadLayer(layer, node.name)


@reads("LeakyRelu")
def read_leaky_relu(node, graph):
    found = attributes(node, {"alpha": None})
    return ReadLayer(LeakyReLU(decimal(found.get("alpha", 0.01))), node.name)


@reads("Flatten")
def read_flatten(node, graph):
    attributes(node, {"axis": lambda a: a == 1})
    return ReadLayer(Flatten(), node.name)


@reads("Dropout", "Identity")
def read_identity(node, graph):
    attributes(node, {"seed": None, "ratio": None})
    if len(node.input) > 2 and node.input[2] and node.input[2] in graph.initializers:
        if graph.constant(node, 2).any():
            raise unsupported(node, "training_mode=true is not an inference graph")
    return None


# Ops the walk handles itself: the normalization at the input, the residual join, the output.
STRUCTURAL_OPS = ("Sub", "Div", "Add", "Softmax")
SUPPORTED_OPS = tuple(sorted((*NODE_READERS, *STRUCTURAL_OPS)))


def read_graph(proto_graph):
    """The ReadGraph of a checked GraphProto with one input (the data) and the logits among its
    outputs (or a Softmax of them)."""
    graph = Graph(proto_graph)
    inputs = [value for value in proto_graph.input if value.name not in graph.initializers]
    if len(inputs) != 1:
        raise OnnxFileError(f"the graph must have one input (the images), it has {len(inputs)}")
    input_shape = static_shape(inputs[0])
    tensor, mean, std = read_normalization(graph, inputs[0].name, input_shape[0])
    read_layers = []
    layers, _ = read_chain(graph, tensor, None, read_layers)
    if not layers:
        raise OnnxFileError("the graph computes nothing between its input and its output")
    return ReadGraph(Sequential(*layers), read_layers, input_shape, mean, std)


def static_shape(value_info):
    """(C, H, W) or (F,) of the input [N, ...]: every size but the batch's must be given."""
    dims = value_info.type.tensor_type.shape.dim
    sizes = [dim.dim_value if dim.HasField("dim_value") else None for dim in dims]
    if len(sizes) not in (2, 4) or any(size is None or size < 1 for size in sizes[1:]):
        shown = [size if size is not None else "?" for size in sizes]
        raise OnnxFileError(f"input {value_info.name!r} has shape {shown}: nn takes [N, C, H, W] "
                            "images or [N, F] points, every size but N given")
    return tuple(sizes[1:])


def read_normalization(graph, tensor, channels):
    """(the tensor after it, mean, std): a Sub of a constant, then a Div by one, where the graph
    starts with them (each one optional)."""
    mean, std = np.zeros(channels), np.ones(channels)
    for op_type in ("Sub", "Div"):
        users = graph.users(tensor)
        if len(users) == 1 and users[0].op_type == op_type and users[0].input[0] == tensor:
            node = users[0]
            value = per_channel(node, graph.constant(node, 1), channels)
            if op_type == "Sub":
                mean = value
            elif np.any(value == 0):
                raise OnnxFileError(f"{describe(node)}: divides by zero")
            else:
                std = value
            tensor = node.output[0]
    return tensor, mean, std


def per_channel(node, value, channels):
    """A constant of `channels` values, or one, broadcast over a channel axis, as [channels]."""
    flat = value.reshape(-1)
    squeezed = [size for size in value.shape if size != 1]
    if flat.size not in (1, channels) or len(squeezed) > 1:
        raise unsupported(node, f"a constant of shape {list(value.shape)} is not one value per "
                          f"channel ({channels})")
    return np.broadcast_to(flat, (channels,)).astype(np.float64)


def read_chain(graph, tensor, join, read_layers):
    """(layers, last tensor) from `tensor` to the logits (join None) or up to `join`, the Add
    node where a residual branch ends."""
    layers = []
    while True:
        users = graph.users(tensor)
        if join is not None and join in users:
            if len(users) > 1:
                raise unsupported(join, "a branch feeding both this Add and other nodes")
            return layers, tensor
        if join is None and (tensor in graph.outputs or not users
                             or (len(users) == 1 and users[0].op_type == "Softmax")):
            return layers, tensor
        if len(users) == 1:
            node = users[0]
            read = read_node(node, graph)
            if read is not None:
                read_layers.append(read)
                layers.append(read.layer)
            if not node.output or len(node.output) > 1 and any(node.output[1:]):
                raise unsupported(node, "a node with more than one output")
            tensor = node.output[0]
        elif len(users) == 2:
            residual, tensor = read_residual(graph, tensor, users, read_layers)
            layers.append(residual)
        else:
            raise unsupported(users[0], f"tensor {tensor!r} feeds {len(users)} nodes: nn's "
                              "graphs branch in two, for a residual block")


def read_node(node, graph):
    """The ReadLayer of `node` (None for an identity), by the reader of its op type."""
    if node.op_type in STRUCTURAL_OPS:
        raise unsupported(node, "nn reads this op only as a residual join (Add), the output's "
                          "Softmax or the input's normalization (Sub, Div)")
    if node.op_type not in NODE_READERS:
        raise unsupported(node, "nn has no layer for this op")
    return NODE_READERS[node.op_type](node, graph)


def read_residual(graph, tensor, users, read_layers):
    """(Residual, its output tensor) for the fork of `tensor` into `users` (two nodes), joined
    by the first Add both branches reach."""
    join = first_common_add(graph, users)
    if join is None:
        raise unsupported(users[0], f"tensor {tensor!r} branches into two paths that no Add "
                          "joins")
    branches = []
    for node in users:
        if node is join:
            branches.append(([], tensor))
            continue
        read = read_node(node, graph)
        head = [] if read is None else [read.layer]
        if read is not None:
            read_layers.append(read)
        rest, end = read_chain(graph, node.output[0], join, read_layers)
        branches.append((head + rest, end))
    ends = [end for _, end in branches]
    if sorted(ends) != sorted(join.input):
        raise unsupported(join, "does not add the two branches of one residual block")
    # the body is Add's first input (as nn.export writes it), the shortcut the second
    branches.sort(key=lambda branch: list(join.input).index(branch[1]))
    (body, _), (skip, _) = branches
    if not body:  # identity first: swap, the body is the branch with layers
        body, skip = skip, body
    shortcut = Sequential(*skip) if skip else None
    return Residual(Sequential(*body), shortcut), join.output[0]


def first_common_add(graph, users):
    """The first Add (in the graph's order) reachable from both nodes `users`, or None."""
    reached = [reachable(graph, node) for node in users]
    common = [node for node in reached[0].values() if id(node) in reached[1]]
    adds = [node for node in common if node.op_type == "Add"]
    return min(adds, key=lambda node: graph.order[id(node)]) if adds else None


def reachable(graph, start):
    """{id(node): node} of `start` and every node downstream of it."""
    found, stack = {}, [start]
    while stack:
        node = stack.pop()
        if id(node) in found:
            continue
        found[id(node)] = node
        for output in node.output:
            stack.extend(graph.users(output))
    return found

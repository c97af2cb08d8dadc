"""Read an ONNX graph back into nn and run it on a tier: `python -m nn.import_onnx model.onnx`.

    python -m nn.import_onnx model.onnx --stage 3

A graph in nn's op set (what nn.export writes, or the same ops exported elsewhere: Conv, Gemm or
MatMul, BatchNormalization, Relu, Tanh, Sigmoid, LeakyRelu, MaxPool, AveragePool, Flatten, Add
joining a residual block, Dropout and Identity, a Sub and a Div normalizing the input, a final
Softmax) becomes an nn model on the tier chosen, which prints its layers and, when the file's
metadata or --data names the data set, its test accuracy (last line `test_accuracy=0.XXXX`).

The file is checked before anything is built from it: its size, its opset, every tensor's bytes
against the shape it claims (external data is refused), the op of every node, then onnx.checker's
full check with shape inference. Any failure is one line on stderr and an exit status of its kind
(nn/exits.py, listed by --help): a node nn has no layer for is named by its name and op type.
"""

import argparse
import json
import sys
from dataclasses import dataclass
from math import prod
from pathlib import Path

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import TensorProto

from nn.data import DATA_NAMES, Normalizer
from nn.evaluate import (
    add_data_dir_argument,
    add_tier_arguments,
    report_accuracy,
    test_split,
    tier_for_evaluation,
)
from nn.exits import EPILOG, reporting
from nn.losses import LOSSES
from nn.network import Model
from nn.onnx_format import MAX_FILE_BYTES, MIN_READ_OPSET, OnnxFileError, UnsupportedNodeError
from nn.onnx_readers import SUPPORTED_OPS, describe, read_graph
from nn.tensor import shape_of

DEFAULT_DOMAINS = ("", "ai.onnx")
# The ops of quantized graphs: QDQ pairs and the integer-arithmetic forms.
QUANTIZED_OPS = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv",
                 "QLinearMatMul", "ConvInteger", "MatMulInteger"}  # fmt: skip


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m nn.import_onnx", description=__doc__.split("\n")[0], epilog=EPILOG
    )
    parser.add_argument("onnx_file", type=Path, metavar="FILE.onnx")
    add_tier_arguments(parser)
    add_data_dir_argument(parser)
    parser.add_argument("--data", choices=DATA_NAMES,
                        help="the data set to evaluate on (default: the file's metadata)")
    return parser.parse_args(argv)


@dataclass
class Imported:
    """An ONNX file read into nn: the model (built on a tier, in evaluation mode), the graph's
    input normalization and the file's metadata_props."""

    model: Model
    normalizer: Normalizer
    metadata: dict


def load_onnx(path):
    """The checked onnx.ModelProto in file `path`; OnnxFileError (UnsupportedNodeError for a node
    nn has no layer for) saying what is wrong."""
    path = Path(path)
    if not path.is_file():
        raise OnnxFileError(f"ONNX file {path} does not exist")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise OnnxFileError(f"ONNX file {path} holds {size:,} bytes, more than the "
                            f"{MAX_FILE_BYTES:,} nn reads")
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(path.read_bytes())
    except (DecodeError, RuntimeWarning, ValueError) as error:
        raise OnnxFileError(f"ONNX file {path} is truncated or not ONNX ({error})") from None
    if not proto.HasField("graph"):
        raise OnnxFileError(f"ONNX file {path} is truncated or not ONNX (it holds no graph)")
    check_opset(path, proto)
    check_float_graph(path, proto)
    for tensor in proto.graph.initializer:
        check_tensor(path, tensor)
    for node in proto.graph.node:
        if node.domain not in DEFAULT_DOMAINS or node.op_type not in SUPPORTED_OPS:
            domain = f" of domain {node.domain!r}" if node.domain not in DEFAULT_DOMAINS else ""
            raise UnsupportedNodeError(
                f"ONNX file {path}: {describe(node)}{domain} is not an op nn has a layer for "
                f"(nn reads {', '.join(SUPPORTED_OPS)})"
            )
        for attribute in node.attribute:
            if attribute.type in (onnx.AttributeProto.TENSOR, onnx.AttributeProto.GRAPH):
                raise UnsupportedNodeError(f"ONNX file {path}: {describe(node)}: attribute "
                                           f"{attribute.name} holds a tensor or a graph")
    try:
        onnx.checker.check_model(proto, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        raise OnnxFileError(f"ONNX file {path} fails onnx.checker: {first_line}") from None
    return proto


def check_opset(path, proto):
    """OnnxFileError unless the file imports the default domain at an opset nn reads, only."""
    newest = onnx.defs.onnx_opset_version()
    versions = {entry.domain: entry.version for entry in proto.opset_import}
    others = sorted(set(versions) - set(DEFAULT_DOMAINS))
    if others:
        raise OnnxFileError(f"ONNX file {path} imports the opset domains {others}: nn reads "
                            "only the default domain")
    version = next((versions[domain] for domain in DEFAULT_DOMAINS if domain in versions), None)
    if version is None:
        raise OnnxFileError(f"ONNX file {path} declares no opset")
    if not MIN_READ_OPSET <= version <= newest:
        raise OnnxFileError(f"ONNX file {path} has opset {version}: nn reads opsets "
                            f"{MIN_READ_OPSET} to {newest}")


def check_float_graph(path, proto):
    """UnsupportedNodeError for a quantized graph (QDQ, as nn.export writes an int8 checkpoint
    and ONNX Runtime's quantize_static does), saying what runs it instead."""
    quantized = sorted({node.op_type for node in proto.graph.node} & QUANTIZED_OPS)
    if quantized:
        raise UnsupportedNodeError(
            f"ONNX file {path} is a quantized graph ({', '.join(quantized)} nodes): nn imports "
            "float32 graphs; run this one in ONNX Runtime, or import the float32 export and "
            "quantize it with python -m nn.quantize"
        )


def check_tensor(path, tensor):
    """OnnxFileError unless initializer `tensor` is float32 stored in the file, holding exactly
    the bytes its shape claims (a hostile file may claim gigabytes it does not hold)."""
    where = f"ONNX file {path}: tensor {tensor.name!r}"
    if tensor.data_location == TensorProto.EXTERNAL or tensor.external_data:
        raise OnnxFileError(f"{where} keeps its data in another file: nn reads self-contained "
                            "files only")
    if tensor.data_type != TensorProto.FLOAT:
        kind = TensorProto.DataType.Name(tensor.data_type) if tensor.data_type in \
            TensorProto.DataType.values() else tensor.data_type
        raise OnnxFileError(f"{where} holds {kind}: nn reads float32 tensors")
    if any(dim < 0 for dim in tensor.dims):
        raise OnnxFileError(f"{where} claims a negative size {list(tensor.dims)}")
    claimed = prod(tensor.dims) * 4
    if claimed > MAX_FILE_BYTES:
        raise OnnxFileError(f"{where} claims shape {list(tensor.dims)} ({claimed:,} bytes), "
                            f"more than the {MAX_FILE_BYTES:,} nn reads")
    held = len(tensor.raw_data) if tensor.HasField("raw_data") else 4 * len(tensor.float_data)
    if held != claimed:
        raise OnnxFileError(f"{where} claims shape {list(tensor.dims)} ({claimed:,} bytes) but "
                            f"holds {held:,} bytes")


def import_model(path, tier):
    """The Imported model of ONNX file `path`, built on `tier` with the file's weights."""
    proto = load_onnx(path)
    metadata = {entry.key: entry.value for entry in proto.metadata_props}
    try:
        read = read_graph(proto.graph)
    except OnnxFileError as error:  # the same kind, naming the file
        raise type(error)(f"ONNX file {path}: {error}") from None
    try:
        output_shape = read.net.build(tier, read.input_shape, iter(range(1 << 30)))
    except ValueError as error:
        raise OnnxFileError(f"ONNX file {path}: the layers do not fit together: {error}") from None
    if len(output_shape) != 1:
        raise OnnxFileError(f"ONNX file {path}: the graph outputs {list(output_shape)} per "
                            "example, not a vector of logits")
    loss = metadata.get("loss") if metadata.get("loss") in LOSSES else "cross_entropy"
    outputs = output_shape[0]
    num_classes = 2 if loss == "binary_cross_entropy" else outputs
    name = metadata.get("model") or proto.graph.name or Path(path).stem
    model = Model(name, read.net, read.input_shape, num_classes, loss)
    model.build(tier, seed=0)  # the initial weights are replaced by the file's
    for found in read.read_layers:
        for key, value in found.params.items():
            found.layer.params[key].value = native(tier, value, found.layer.params[key].value)
        for key, value in found.buffers.items():
            setattr(found.layer, key, native(tier, value, getattr(found.layer, key)))
    model.eval()
    check_class_names(path, metadata, num_classes)
    normalizer = Normalizer(read.mean, read.std, is_image=len(read.input_shape) == 3)
    return Imported(model, normalizer, metadata)


def check_class_names(path, metadata, num_classes):
    """OnnxFileError unless metadata's class_names, if given, is a JSON list of `num_classes`."""
    if "class_names" not in metadata:
        return
    try:
        names = json.loads(metadata["class_names"])
    except json.JSONDecodeError:
        names = None
    if not isinstance(names, list) or len(names) != num_classes:
        raise OnnxFileError(f"ONNX file {path}: metadata class_names must be a JSON list of "
                            f"{num_classes} names, got {metadata['class_names']:.80}")


def native(tier, value, like):
    """`value` as a float32 native array of `tier`, shaped as `like` (a built layer's array)."""
    return tier.from_numpy(np.ascontiguousarray(value, dtype=np.float32).reshape(shape_of(like)))


def main(argv=None):
    args = parse_args(argv)
    return reporting(lambda: import_and_evaluate(args))


def import_and_evaluate(args):
    tier = tier_for_evaluation(args)
    imported = import_model(args.onnx_file, tier)
    model, metadata = imported.model, imported.metadata
    print(model.summary())
    data = args.data or metadata.get("data")
    if data is None:
        print("the file names no data set: give --data to evaluate it")
        return 0
    if data not in DATA_NAMES:
        raise ValueError(f"the file's data set {data!r} is not one of {list(DATA_NAMES)}: "
                         "give --data")
    test = test_split({"data": data}, args.data_dir)
    title = f"{args.onnx_file} ({model.name}) on {data}, stage {args.stage} ({tier.NAME})"
    report_accuracy(model, imported.normalizer, test, title)
    return 0


if __name__ == "__main__":
    sys.exit(main())


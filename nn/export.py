"""Export a trained model to ONNX: `python -m nn.export --checkpoint CKPT --out model.onnx`.

An int8 checkpoint (nn.quantize's) exports the same way, as a QDQ graph: each int8 layer is a
QuantizeLinear and DequantizeLinear pair on its input (per-tensor scale and int8 zero point),
a DequantizeLinear on its int8 weights (per output channel, axis 0), then its Conv or Gemm; the
rest is the float graph's, and the calibration rides along in metadata_props ("quantization").

The graph is standard ONNX (opset nn/onnx_format.py states), built with the onnx package's own
helpers: its input is what a user has, float32 pixels in [0, 1] laid out [N, C, H, W] (an image's
bytes / 255; the batch N is dynamic), the data set's normalization is its first two nodes (Sub,
Div), then one node writer per layer (nn/onnx_writers.py; Dropout, the identity in inference, is
left out), and two outputs: the logits and their Softmax (a one-logit binary model: its Sigmoid,
the probability of class 1). The model's name, data set, class names and input layout ride along
in metadata_props. The file passes onnx.checker's full check before it is written, and it is
written to a temporary name and renamed when complete. Any failure is one line on stderr and an
exit status of its kind (nn/exits.py, listed by --help).
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from nn.backend import load_tier
from nn.checkpoint import CheckpointError, write_atomically
from nn.data import Normalizer
from nn.exits import EPILOG, reporting
from nn.onnx_format import (
    INPUT,
    INPUT_LAYOUT,
    IR_VERSION,
    LOGITS,
    OPSET,
    PROBABILITIES,
    OnnxFileError,
)
from nn.onnx_writers import NODE_WRITERS, GraphWriter, write_layer
from nn.predict import load_model

PRODUCER = "scratch2cuda nn.export"
QDQ_FORMAT = "QDQ: int8 weights per output channel (axis 0), activations per tensor"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m nn.export", description=__doc__.split("\n")[0], epilog=EPILOG
    )
    parser.add_argument("--checkpoint", type=Path, required=True,
                        help="a checkpoint written by nn.train (e.g. runs/.../best.npz), or an "
                        "int8 one written by nn.quantize (exported as a QDQ graph)")
    parser.add_argument("--out", type=Path, required=True,
                        help="the ONNX file to write (replaced if it exists)")
    return parser.parse_args(argv)


def export_model(model, meta, registry=NODE_WRITERS):
    """The checked onnx.ModelProto of `model` (built, in evaluation mode) and its checkpoint
    record `meta` (data, class_names, normalizer, model_options), through the node writers of
    `registry`."""
    graph = GraphWriter()
    normalizer = Normalizer.from_json(meta["normalizer"])
    x = normalize(graph, normalizer)
    x = write_layer(graph, model.net, x, "", registry)
    if not graph.nodes or graph.nodes[-1].output[0] != x:  # the net ended on an identity
        x = graph.node("Identity", [x], "output")
    logits = graph.rename_output(x, LOGITS)
    if model.loss.name == "binary_cross_entropy":  # one logit: p(class 1)
        graph.node("Sigmoid", [logits], "output")
    else:
        graph.node("Softmax", [logits], "output", axis=1)
    graph.rename_output(graph.nodes[-1].output[0], PROBABILITIES)

    outputs = model.loss.outputs_for(model.num_classes)
    proto = helper.make_model(
        helper.make_graph(
            graph.nodes,
            model.name,
            [helper.make_tensor_value_info(INPUT, TensorProto.FLOAT, ["N", *model.input_shape])],
            [helper.make_tensor_value_info(name, TensorProto.FLOAT, ["N", outputs])
             for name in (LOGITS, PROBABILITIES)],
            graph.initializers,
        ),
        producer_name=PRODUCER,
        opset_imports=[helper.make_opsetid("", OPSET)],
        ir_version=IR_VERSION,
        doc_string=f"{model.name} trained on {meta['data']} by scratch2cuda's nn",
    )
    properties = {
        "model": model.name,
        "data": meta["data"],
        "loss": model.loss.name,
        "class_names": json.dumps(meta["class_names"]),
        "input_layout": INPUT_LAYOUT["image" if normalizer.is_image else "points"],
        "model_options": json.dumps(meta["model_options"]),
    }
    if "quantization" in meta:
        calibration = meta["quantization"]
        properties["quantization"] = json.dumps({
            "format": QDQ_FORMAT, "method": calibration.get("method"),
            "calibration": calibration.get("calibration"),
        })  # fmt: skip
    helper.set_model_props(proto, properties)
    try:
        onnx.checker.check_model(proto, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as error:
        # The first complaint names the node written wrong; those after it follow from it.
        first = str(error).strip().splitlines()[0]
        raise OnnxFileError(f"the graph written fails onnx.checker's full check: {first}") from None
    return proto


def normalize(graph, normalizer):
    """Sub the mean, Div by the std, per channel (per feature): the float32 constants nn's
    Normalizer uses, so the graph computes what training saw."""
    shape = (1, -1, 1, 1) if normalizer.is_image else (1, -1)
    mean = graph.constant("normalizer.mean", normalizer.mean.astype(np.float32).reshape(shape))
    std = graph.constant("normalizer.std", normalizer.std.astype(np.float32).reshape(shape))
    return graph.node("Div", [graph.node("Sub", [INPUT, mean], "normalize"), std], "normalize")


def save_onnx(proto, path):
    """Write `proto` to `path` atomically (a temporary name, renamed when complete)."""
    write_atomically(path, lambda file: file.write(proto.SerializeToString()))


def main(argv=None):
    args = parse_args(argv)
    return reporting(lambda: export(args))


def export(args):
    if args.out.resolve() == args.checkpoint.resolve():
        raise ValueError(f"--out {args.out} is the checkpoint itself: choose another file")
    if args.out.is_dir():
        raise ValueError(f"--out must be a file, got the folder {args.out}")
    model, meta = load_model(args.checkpoint, load_tier(2))
    if model.input_shape != tuple(meta["input_shape"]):
        raise CheckpointError(f"checkpoint {args.checkpoint}: input_shape "
                              f"{meta['input_shape']} does not fit model {model.name}")
    proto = export_model(model, meta)
    save_onnx(proto, args.out)
    kind = "int8 QDQ" if "quantization" in meta else f"{model.parameter_count():,} parameters"
    print(f"{model.name} ({kind}, {len(proto.graph.node)} nodes, opset {OPSET}) passed "
          "onnx.checker's full check")
    print(f"wrote {args.out}: input {INPUT} [N, {', '.join(map(str, model.input_shape))}], "
          f"outputs {LOGITS} and {PROBABILITIES}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

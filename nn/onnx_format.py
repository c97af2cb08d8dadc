"""What nn's ONNX files hold (opset, tensor names, metadata keys) and what reading one refuses.

This module does not import `onnx`: the commands' error handling (nn/exits.py) needs the errors
without paying for the package.
"""

# Opset 17: every op the exporter writes has had its present form since opset 15 or earlier, and
# runtimes from 2022 on (ONNX Runtime 1.12+, TensorRT 8.5+) read it. IR version 8 goes with it.
OPSET = 17
IR_VERSION = 8
# Reading takes opsets from 13 (Softmax over one axis, as written here) to the newest this onnx
# package knows: the supported ops mean the same thing over that range.
MIN_READ_OPSET = 13

INPUT = "pixels"  # float32 [N, C, H, W] in [0, 1] (an image's bytes / 255), or [N, F] points
LOGITS = "logits"
PROBABILITIES = "probabilities"
INPUT_LAYOUT = {
    "image": "NCHW float32 pixels in [0, 1] (an image's bytes / 255); N dynamic; the data set's "
    "normalization is inside the graph",
    "points": "NF float32 features; N dynamic; the data set's normalization is inside the graph",
}
# metadata_props: each value a string (JSON where it is a list or an object)
METADATA_KEYS = ("model", "data", "loss", "class_names", "input_layout", "model_options")

# A file is read whole into memory: refuse what no model of this course comes near (the largest,
# the Tiny-ImageNet CNN, takes 17 MB) before reading it.
MAX_FILE_BYTES = 1 << 30


class OnnxFileError(ValueError):
    """An ONNX file that cannot be read: missing, truncated, hostile, or inconsistent."""


class UnsupportedNodeError(OnnxFileError):
    """A valid ONNX graph with a node (or a structure) nn has no layer for."""

"""INT8 models: Linear and Conv2d layers whose products run in int8 (int8 x int8 -> int32), and
the checkpoints that hold them.

A quantized layer keeps
- its weights as int8 codes, symmetric per output channel: w[m] ~ weight_scale[m] * weight[m],
  weight_scale[m] = max |w[m]| / 127 (zero point 0);
- its input's per-tensor scale and zero point (asymmetric: x ~ input_scale * (q - input_zero)),
  calibrated on training images (nn/quantize.py);
- its float32 bias.
Its forward quantizes x (the tier's quantize_int8), then one int8 GEMM (int8_linear, or
int8_conv2d through im2col) gives y = input_scale * weight_scale[m] * (int32 sum) + bias[m] in
float32: the next layers (ReLU, pooling, flatten, batchnorm) run in float32 as before.

A quantized checkpoint is an ordinary checkpoint (nn/checkpoint.py: one .npz written atomically,
the same meta) with a "quantization" entry in its meta and, for each quantized layer at dotted
path P, the arrays an exporter reads (a QDQ ONNX graph has one QuantizeLinear per input and one
DequantizeLinear per weight):
    int8/P.weight              int8 [M, ...]    the codes
    int8/P.weight_scale        float32 [M]      per output channel (axis 0), zero point 0
    int8/P.input_scale         float32 []       per tensor
    int8/P.input_zero_point    int8 []
    int8/P.bias                float32 [M]
The layers' float weights are not stored; every other parameter and buffer is, under param/ and
buffer/ as in any checkpoint.
"""

import numpy as np

from nn.checkpoint import CheckpointError, _check_names, _checked
from nn.layers.base import Layer
from nn.layers.conv import Conv2d
from nn.layers.linear import Linear
from nn.tensor import shape_of

QUANTIZED_TYPES = (Linear, Conv2d)
ARRAYS = ("weight", "weight_scale", "input_scale", "input_zero_point", "bias")
DTYPES = {"weight": np.int8, "weight_scale": np.float32, "input_scale": np.float32,
          "input_zero_point": np.int8, "bias": np.float32}  # fmt: skip
INT8_PREFIX = "int8/"


def quantize_weights(weight):
    """Per-output-channel symmetric int8: (codes int8 like `weight`, scales float32 [M]).

    A channel of zeros gets scale 1 (its codes are zeros whatever the scale)."""
    flat = weight.reshape(weight.shape[0], -1).astype(np.float64)
    largest = np.abs(flat).max(axis=1)
    scale = np.where(largest > 0, largest / 127, 1.0).astype(np.float32)
    codes = np.clip(np.rint(flat / scale[:, None]), -127, 127).astype(np.int8)
    return codes.reshape(weight.shape), scale


def activation_range(low, high):
    """(scale, zero_point) of an asymmetric int8 code covering [low, high], widened to hold 0.0
    exactly (zero padding and ReLU's zeros must stay exact): x = scale * (q - zero_point)."""
    low, high = min(float(low), 0.0), max(float(high), 0.0)
    if high == low:
        return 1.0, 0
    scale = np.float32((high - low) / 255)
    zero = int(np.clip(np.rint(-128 - low / scale), -128, 127))
    return float(scale), zero


class QuantizedLayer(Layer):
    """An int8 stand-in for a built Linear or Conv2d (`original`), on the same tier."""

    def __init__(self, original, weight, weight_scale, input_scale, input_zero_point, bias):
        super().__init__()
        self.original = original
        self.tier = tier = original.tier
        self.output_shape = original.output_shape
        self.training = False
        self.input_scale = float(np.float32(input_scale))
        self.input_zero_point = int(input_zero_point)
        self.host = {
            "weight": np.asarray(weight, dtype=np.int8),
            "weight_scale": np.asarray(weight_scale, dtype=np.float32),
            "input_scale": np.float32(input_scale),
            "input_zero_point": np.int8(input_zero_point),
            "bias": np.asarray(bias, dtype=np.float32),
        }
        # What the GEMM multiplies each int32 sum by: the input's scale times the channel's.
        combined = (self.input_scale * self.host["weight_scale"].astype(np.float64))
        self.weight = tier.from_numpy(self.host["weight"])
        self.scale = tier.from_numpy(combined.astype(np.float32))
        self.bias = tier.from_numpy(self.host["bias"])

    def forward(self, x):
        """y float32 from x float32, through int8 codes and one int8 GEMM."""
        q = self.tier.quantize_int8(x, self.input_scale, self.input_zero_point)
        zero = self.input_zero_point
        if isinstance(self.original, Conv2d):
            return self.tier.int8_conv2d(q, zero, self.weight, self.scale, self.bias,
                                         self.original.stride, self.original.padding)  # fmt: skip
        return self.tier.int8_linear(q, zero, self.weight, self.scale, self.bias)

    def backward(self, dout):
        raise NotImplementedError("an int8 model runs inference only: train the float model")

    def describe(self):
        return f"Int8{self.original.describe()}"


def quantizable_layers(layer, prefix=""):
    """{dotted path: layer} of every Linear and Conv2d inside `layer`, in build order."""
    found = {}
    for name, child in layer.children().items():
        path = f"{prefix}{name}"
        if isinstance(child, QUANTIZED_TYPES):
            found[path] = child
        else:
            found |= quantizable_layers(child, f"{path}.")
    return found


def replace_layer(root, path, new):
    """Put `new` in place of the layer at dotted `path` under `root` (Sequential's list, or a
    Residual's attribute)."""
    *parents, last = path.split(".")
    parent = root
    for name in parents:
        parent = parent.children()[name]
    if hasattr(parent, "layers"):
        parent.layers[int(last)] = new
    else:
        setattr(parent, last, new)


def quantize_model(model, input_ranges):
    """Swap every Linear and Conv2d of built `model` for its QuantizedLayer, in place.

    `input_ranges` maps each layer's path (quantizable_layers) to its calibrated (low, high)."""
    for path, layer in quantizable_layers(model.net).items():
        weight = model.tier.to_numpy(layer.params["weight"].value)
        codes, weight_scale = quantize_weights(weight)
        scale, zero = activation_range(*input_ranges[path])
        bias = model.tier.to_numpy(layer.params["bias"].value)
        quantized = QuantizedLayer(layer, codes, weight_scale, scale, zero, bias)
        replace_layer(model.net, path, quantized)
    model.net.layers[0].needs_input_grad = False
    return model


def quantized_arrays(model):
    """{array name: NumPy array} of a quantized model: int8/... for its int8 layers, param/ and
    buffer/ for the rest, as a checkpoint stores them."""
    arrays = {}
    layers = quantized_layers(model)
    for path, layer in layers.items():
        for name in ARRAYS:
            arrays[f"{INT8_PREFIX}{path}.{name}"] = np.asarray(layer.host[name])
    for name, parameter in model.parameters().items():
        arrays[f"param/{name}"] = model.tier.to_numpy(parameter.value)
    for name, value in model.buffers().items():
        arrays[f"buffer/{name}"] = np.asarray(value) if isinstance(value, int) else (
            model.tier.to_numpy(value))  # fmt: skip
    return arrays


def quantized_layers(model):
    """{dotted path: QuantizedLayer} of a quantized model."""
    found = {}

    def walk(layer, prefix):
        for name, child in layer.children().items():
            if isinstance(child, QuantizedLayer):
                found[f"{prefix}{name}"] = child
            else:
                walk(child, f"{prefix}{name}.")

    walk(model.net, "")
    return found


def restore_quantized(path, arrays, model):
    """Make built float `model` (built from the checkpoint's meta) the int8 model whose `arrays`
    the checkpoint at `path` holds: every name, shape and dtype checked, as
    nn.checkpoint.restore checks a float one."""
    layers = quantizable_layers(model.net)
    stored = sorted({name[len(INT8_PREFIX):].rsplit(".", 1)[0] for name in arrays
                     if name.startswith(INT8_PREFIX)})  # fmt: skip
    if stored != sorted(layers):
        raise CheckpointError(f"checkpoint {path}: its int8 layers {stored} are not the model's "
                              f"Linear and Conv2d layers {sorted(layers)}")  # fmt: skip
    for layer_path, layer in layers.items():
        key = f"{INT8_PREFIX}{layer_path}."
        weight_shape = shape_of(layer.params["weight"].value)
        shapes = {"weight": weight_shape, "weight_scale": weight_shape[:1], "input_scale": (),
                  "input_zero_point": (), "bias": weight_shape[:1]}  # fmt: skip
        missing = [key + name for name in ARRAYS if key + name not in arrays]
        if missing:
            raise CheckpointError(f"checkpoint {path}: int8 layer {layer_path} lacks "
                                  f"{', '.join(missing)}")  # fmt: skip
        values = {name: _checked(path, arrays, key + name, shapes[name]) for name in ARRAYS}
        for name, dtype in DTYPES.items():
            if values[name].dtype != dtype:
                raise CheckpointError(f"checkpoint {path}: {key}{name} holds "
                                      f"{values[name].dtype}, not {np.dtype(dtype)}")  # fmt: skip
        if not (values["weight_scale"] > 0).all() or not values["input_scale"] > 0:
            raise CheckpointError(f"checkpoint {path}: {key}weight_scale and {key}input_scale "
                                  "must be > 0")  # fmt: skip
        replace_layer(model.net, layer_path, QuantizedLayer(layer, *(values[n] for n in ARRAYS)))
    tier = model.tier
    parameters = model.parameters()
    _check_names(path, "parameters", parameters, arrays, "param/")
    for name, param in parameters.items():
        stored = _checked(path, arrays, f"param/{name}", shape_of(param.value))
        param.value = tier.from_numpy(stored)
    buffers = model.buffers()
    _check_names(path, "buffers", buffers, arrays, "buffer/")
    for name, value in buffers.items():
        if isinstance(value, int):
            model.load_buffer(name, int(_checked(path, arrays, f"buffer/{name}", ())))
        else:
            stored = _checked(path, arrays, f"buffer/{name}", shape_of(value))
            model.load_buffer(name, tier.from_numpy(stored))
    return model

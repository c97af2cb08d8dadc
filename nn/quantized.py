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

Where only ReLU, max-pooling, Flatten and Dropout stand between two quantized layers of one
Sequential, the float y never needs to exist (chain_int8): the first layer writes the second's
input codes straight from its sums (the tier's int8_linear_to_int8 / int8_conv2d_to_int8, scale
and bias divided by the second's input scale), the ReLU becomes a clamp at the zero point inside
that same pass (ReLU commutes with max-pooling and flattening: both are monotonic), the pooling
runs on the codes (maxpool2d_int8: codes keep their values' order), and the second layer takes
the codes as they are. Float32 then appears only at the model's input and its logits.

Where the tier has the fused inference extras (FUSED_OPS: stage 4's nvcc variant), a quantized
layer's weights are laid out for its GEMM once, when it is made (int8_pack_weights), not at every
call. There fuse_int8 goes further than chain_int8: a chained Conv2d and the one MaxPool2d(2)
between it and the next quantized layer run as one kernel (int8_conv2d_pool_to_int8: the
convolution, the requantization with its ReLU, the pooling of the codes), which for a first layer
quantizes the float32 input as it reads it. The codes are the unfused path's, bit for bit (the
kernel takes the max of the same codes maxpool2d_int8 pools). A chained model is fused unless
asked not to be (`fused=False`: bench.int8 times both paths side by side).

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
from nn.layers.activations import ReLU
from nn.layers.base import Layer
from nn.layers.containers import Sequential
from nn.layers.conv import Conv2d
from nn.layers.dropout import Dropout
from nn.layers.flatten import Flatten
from nn.layers.fusion import MaxPoolReLU
from nn.layers.linear import Linear
from nn.layers.pooling import MaxPool2d
from nn.tensor import shape_of

QUANTIZED_TYPES = (Linear, Conv2d)
CHAINED_OPS = ("int8_linear_to_int8", "int8_conv2d_to_int8", "maxpool2d_int8")
FUSED_OPS = ("int8_pack_weights", "int8_linear_packed", "int8_conv2d_pool_to_int8")
FUSED_POOL = 2  # the max-pooling int8_conv2d_pool_to_int8 takes in: 2x2 windows at stride 2
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
        combined = self.input_scale * self.host["weight_scale"].astype(np.float64)
        self.weight = tier.from_numpy(self.host["weight"])
        self.scale = tier.from_numpy(combined.astype(np.float32))
        self.bias = tier.from_numpy(self.host["bias"])
        self.takes_codes = False  # chain_int8: the input arrives as this layer's codes
        self.output_code = None  # chain_int8: (scale, zero point, relu) of the codes it writes
        # the weights as the GEMM reads them, laid out once where the tier can (FUSED_OPS)
        fused = all(hasattr(tier, op) for op in FUSED_OPS)
        self.packed = tier.int8_pack_weights(self.weight) if fused else None
        self.pool = 1  # fuse_int8: the max-pooling of the codes this layer's kernel does

    def write_codes(self, scale, zero_point, relu):
        """From now on, forward writes int8 codes of (relu of) y under `scale` and `zero_point`:
        the GEMM's scale and bias divided by `scale`."""
        self.output_code = (float(scale), int(zero_point), bool(relu))
        self.code_scale = self.tier.from_numpy(
            (self.input_scale * self.host["weight_scale"].astype(np.float64) / scale
             ).astype(np.float32))  # fmt: skip
        self.code_bias = self.tier.from_numpy(
            (self.host["bias"].astype(np.float64) / scale).astype(np.float32)
        )

    def forward(self, x):
        """y float32 (or, chained, the next layer's int8 codes) from x float32 (or, chained, this
        layer's input codes), through one int8 GEMM."""
        tier, zero = self.tier, self.input_zero_point
        conv = isinstance(self.original, Conv2d)
        window = (self.original.stride, self.original.padding) if conv else ()
        if conv and self.packed is not None and self.output_code is not None:
            _, y_zero, relu = self.output_code
            x_scale = None if self.takes_codes else self.input_scale  # floats: quantized inside
            return tier.int8_conv2d_pool_to_int8(x, zero, self.packed, self.code_scale,
                                                 self.code_bias, y_zero, *window, pool=self.pool,
                                                 relu=relu, x_scale=x_scale)  # fmt: skip
        q = x if self.takes_codes else tier.quantize_int8(x, self.input_scale, zero)
        if not conv and self.packed is not None:
            if self.output_code is None:
                return tier.int8_linear_packed(q, zero, self.packed, self.scale, self.bias)
            _, y_zero, relu = self.output_code
            return tier.int8_linear_packed(q, zero, self.packed, self.code_scale, self.code_bias,
                                           y_zero, relu=relu)  # fmt: skip
        if self.output_code is None:
            op = tier.int8_conv2d if conv else tier.int8_linear
            return op(q, zero, self.weight, self.scale, self.bias, *window)
        _, y_zero, relu = self.output_code
        op = tier.int8_conv2d_to_int8 if conv else tier.int8_linear_to_int8
        return op(q, zero, self.weight, self.code_scale, self.code_bias, y_zero, *window,
                  relu=relu)  # fmt: skip

    def dequantize(self, y):
        """forward's output as floats (NumPy): y itself, or the value its codes stand for."""
        y = self.tier.to_numpy(y)
        if self.output_code is None:
            return y
        scale, zero, _ = self.output_code
        return (scale * (y.astype(np.float64) - zero)).astype(np.float32)

    def backward(self, dout):
        raise NotImplementedError("an int8 model runs inference only: train the float model")

    def describe(self):
        pooled = f" + MaxPool2d({self.pool}) on its codes" if self.pool > 1 else ""
        return f"Int8{self.original.describe()}{pooled}"


class CodesMaxPool2d(MaxPool2d):
    """A MaxPool2d between chained quantized layers: it pools int8 codes (maxpool2d_int8)."""

    def __init__(self, pool):
        super().__init__(pool.kernel_size, pool.stride)
        self.tier, self.output_shape = pool.tier, pool.output_shape

    def forward(self, x):
        return self.tier.maxpool2d_int8(x, self.kernel_size, self.stride)

    def backward(self, dout):
        raise NotImplementedError("an int8 model runs inference only: train the float model")


class FusedReLU(ReLU):
    """A ReLU between chained quantized layers: the layer before it already clamps its codes at
    the zero point (the code of 0.0), so it passes them on."""

    def __init__(self, relu):
        super().__init__()
        self.tier, self.output_shape = relu.tier, relu.output_shape

    def forward(self, x):
        return x

    def backward(self, dout):
        raise NotImplementedError("an int8 model runs inference only: train the float model")


class FusedMaxPool2d(MaxPool2d):
    """A MaxPool2d between chained quantized layers whose pooling the convolution before it does
    (fuse_int8): it passes the pooled codes on."""

    def __init__(self, pool):
        super().__init__(pool.kernel_size, pool.stride)
        self.tier, self.output_shape = pool.tier, pool.output_shape

    def forward(self, x):
        return x

    def backward(self, dout):
        raise NotImplementedError("an int8 model runs inference only: train the float model")


PASSED_CODES = (ReLU, MaxPool2d, Flatten, Dropout)  # what may stand between chained layers


def chain_int8(layer, tier):
    """In every Sequential inside `layer`, chain each QuantizedLayer to the next one when only
    ReLU, MaxPool2d, Flatten and Dropout (inference: the identity) stand between them, and
    `tier` has the ops (CHAINED_OPS): int8 codes flow between them, never floats. In place."""
    if not all(hasattr(tier, op) for op in CHAINED_OPS):
        return
    for layers in _sequences(layer):
        for first, producer in enumerate(layers):
            if not isinstance(producer, QuantizedLayer):
                continue
            between = first + 1
            while between < len(layers) and isinstance(layers[between], PASSED_CODES):
                between += 1
            if between == len(layers) or not isinstance(layers[between], QuantizedLayer):
                continue
            consumer = layers[between]
            relu = any(isinstance(layers[i], (ReLU, MaxPoolReLU))
                       for i in range(first + 1, between))  # fmt: skip
            producer.write_codes(consumer.input_scale, consumer.input_zero_point, relu)
            consumer.takes_codes = True
            for i in range(first + 1, between):
                if isinstance(layers[i], ReLU):
                    layers[i] = FusedReLU(layers[i])
                elif isinstance(layers[i], MaxPool2d):
                    layers[i] = CodesMaxPool2d(layers[i])


def fuse_int8(layer, tier):
    """In every Sequential inside `layer` (chained by chain_int8), give each chained quantized
    Conv2d the one MaxPool2d(2) (stride 2) between it and the next quantized layer, where `tier`
    has the fused ops (FUSED_OPS): the convolution's kernel pools its codes, the pool passes them
    on. In place."""
    if not all(hasattr(tier, op) for op in FUSED_OPS):
        return
    for layers in _sequences(layer):
        for first, producer in enumerate(layers):
            if not (isinstance(producer, QuantizedLayer) and isinstance(producer.original, Conv2d)
                    and producer.output_code is not None):  # fmt: skip
                continue
            between = first + 1
            while between < len(layers) and not isinstance(layers[between], QuantizedLayer):
                between += 1
            pools = [i for i in range(first + 1, between)
                     if isinstance(layers[i], CodesMaxPool2d)]  # fmt: skip
            if len(pools) != 1:
                continue
            pool = layers[pools[0]]
            if pool.kernel_size == pool.stride == FUSED_POOL:
                producer.pool = FUSED_POOL
                producer.output_shape = pool.output_shape
                layers[pools[0]] = FusedMaxPool2d(pool)


def _sequences(layer):
    """The layer lists of every Sequential inside `layer` (itself included), innermost first."""
    for child in layer.children().values():
        yield from _sequences(child)
    if isinstance(layer, Sequential):
        yield layer.layers


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
    if hasattr(parent, "layers"):  # by name: a fused Sequential's names skip positions
        parent.layers[parent.names.index(last)] = new
    else:
        setattr(parent, last, new)


def quantize_model(model, input_ranges, chained=True, fused=True):
    """Swap every Linear and Conv2d of built `model` for its QuantizedLayer, in place; `chained`:
    int8 codes flow between the layers where they can (chain_int8), else floats do; `fused`: a
    chained convolution pools its codes itself where the tier can (fuse_int8).

    `input_ranges` maps each layer's path (quantizable_layers) to its calibrated (low, high)."""
    for path, layer in quantizable_layers(model.net).items():
        weight = model.tier.to_numpy(layer.params["weight"].value)
        codes, weight_scale = quantize_weights(weight)
        scale, zero = activation_range(*input_ranges[path])
        bias = model.tier.to_numpy(layer.params["bias"].value)
        quantized = QuantizedLayer(layer, codes, weight_scale, scale, zero, bias)
        replace_layer(model.net, path, quantized)
    model.net.layers[0].needs_input_grad = False
    link_int8(model.net, model.tier, chained, fused)
    return model


def link_int8(net, tier, chained, fused):
    """chain_int8, then fuse_int8 where `fused`, on `net` (in place); nothing unless `chained`."""
    if chained:
        chain_int8(net, tier)
        if fused:
            fuse_int8(net, tier)


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


def restore_quantized(path, arrays, model, chained=True, fused=True):
    """Make built float `model` (built from the checkpoint's meta) the int8 model whose `arrays`
    the checkpoint at `path` holds: every name, shape and dtype checked, as
    nn.checkpoint.restore checks a float one; `chained` and `fused` as for quantize_model."""
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
    link_int8(model.net, tier, chained, fused)
    return model

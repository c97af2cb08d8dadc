"""Our int8 model against its QDQ export run by ONNX Runtime: the same codes, the same predictions.

The QDQ graph (nn/export.py on an int8 checkpoint) holds our codes, scales and zero points. ONNX
Runtime fuses its QuantizeLinear / DequantizeLinear pairs into its int8 kernels (QLinearConv,
QGemm), which sum in int32 as we do but requantize a layer's output to the next layer's codes in
their own float steps, where we scale the int32 sum, add the bias, then divide by the next scale;
an unfused layer sums dequantized floats in another order. The results differ in the last bits,
and a value that falls within those bits of a rounding boundary (x / scale = k + 0.5) gets the
neighbouring code. From there the image's later layers see other inputs. So per image:
- if every QuantizeLinear gave our codes, the logits agree to float32 rounding (FLOAT_TOLERANCE)
  and so does the argmax;
- if not, at the first layer where codes differ, each difference is one code and sits at a
  rounding boundary (our x / scale within TIE_WIDTH of k + 0.5): the rounding of a near tie, not
  a wrong scale, zero point or weight (any of which moves most codes of most images, and most by
  more than one). ONNX Runtime runs as a user runs it, its graph optimizations (the fusions) on.
`compare_qdq` measures both, and the argmax agreement over all images; an image whose argmax
differs is counted apart when our margin (the top logit over the next) exceeds the logits'
quantization step (the most one input code of the last int8 layer moves a logit: its input scale
times the largest weight_scale[m] * |code|).
"""

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper

from bench.onnx_parity import PROVIDER, user_inputs
from nn.onnx_format import INPUT, LOGITS
from nn.quantized import quantized_layers

FLOAT_TOLERANCE = 1e-4  # |ours - theirs| <= FLOAT_TOLERANCE * (1 + |ours|), codes all equal
# |x / scale - (k + 0.5)| within which float32 rounding decides the code: the differences seen on
# LeNet-5 and the Fashion CNN reach 1e-3 of a code; a hundredth leaves room
TIE_WIDTH = 1e-2
BATCH = 500


def with_code_outputs(proto):
    """A copy of QDQ graph `proto` whose outputs also give each QuantizeLinear's codes, in the
    order of the graph; returns (copy, the layer path of each code output)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    paths = []
    for node in proto.graph.node:
        if node.op_type == "QuantizeLinear":
            copy.graph.output.append(helper.make_tensor_value_info(node.output[0],
                                                                   TensorProto.INT8, None))
            paths.append(node.name.removesuffix(".input:QuantizeLinear"))
    return copy, paths


def layer_inputs(model, images):
    """{path: the float input of each int8 layer} for one forward pass of normalized `images`,
    and the logits."""
    tier, inputs = model.tier, {}
    layers = quantized_layers(model)
    for path, layer in layers.items():

        def recorded(x, layer=layer, path=path):
            inputs[path] = tier.to_numpy(x)
            return type(layer).forward(layer, x)

        layer.forward = recorded
    try:
        logits = tier.to_numpy(model.forward(tier.from_numpy(images)))
    finally:
        for layer in layers.values():
            del layer.forward
    return inputs, logits


def compare_batch(model, session, paths, raw, normalizer):
    """Per image of `raw` inputs: (argmax agrees, codes all equal, max |logit difference| when
    they are, first layer's differences all one code at a tie when they are not)."""
    layers = quantized_layers(model)
    inputs, ours = layer_inputs(model, normalizer(raw))
    results = session.run([LOGITS, *(f"{p}.input:QuantizeLinear" for p in paths)],
                          {INPUT: user_inputs(raw, normalizer)})  # fmt: skip
    theirs, codes = results[0], dict(zip(paths, results[1:], strict=True))
    count = len(raw)
    same_codes = np.ones(count, bool)
    ties_only = np.ones(count, bool)
    for path in paths:
        layer = layers[path]
        x = inputs[path]
        ours_codes = np.asarray(model.tier.to_numpy(
            model.tier.quantize_int8(model.tier.from_numpy(x), layer.input_scale,
                                     layer.input_zero_point)))  # fmt: skip
        differs = (ours_codes != codes[path]).reshape(count, -1)
        first_here = differs.any(axis=1) & same_codes  # the first layer where this image differs
        ratio = (x / np.float32(layer.input_scale)).reshape(count, -1)
        at_tie = np.abs(ratio - np.floor(ratio) - 0.5) <= TIE_WIDTH
        one_code = np.abs(ours_codes.astype(int) - codes[path]).reshape(count, -1) == 1
        ties_only &= ~first_here | np.all(~differs | (at_tie & one_code), axis=1)
        same_codes &= ~differs.any(axis=1)
    difference = np.abs(ours - theirs) / (1 + np.abs(ours))
    top = np.sort(ours, axis=1)
    return {
        "agree": model.loss.predict(ours) == model.loss.predict(theirs),
        "margin": top[:, -1] - top[:, -2] if ours.shape[1] > 1 else np.abs(ours[:, 0]),
        "same_codes": same_codes,
        "ties_only": ties_only,
        "close": np.all(difference <= FLOAT_TOLERANCE, axis=1),
        "difference": difference.max(axis=1),
    }


def logit_step(model):
    """The most one input code of the model's last int8 layer moves one of its outputs."""
    last = list(quantized_layers(model).values())[-1]
    host = last.host
    largest = np.abs(host["weight"].reshape(len(host["weight"]), -1).astype(np.float64)).max(axis=1)
    return float(last.input_scale * np.max(host["weight_scale"] * largest))


def compare_qdq(model, proto, raw, normalizer):
    """Our int8 `model` (on its tier) against ONNX Runtime on its QDQ export `proto`, over `raw`
    inputs (uint8 images or points), in batches: the record's counts."""
    probe, paths = with_code_outputs(proto)
    session = onnxruntime.InferenceSession(probe.SerializeToString(), providers=[PROVIDER])
    parts = [compare_batch(model, session, paths, raw[start:start + BATCH], normalizer)
             for start in range(0, len(raw), BATCH)]  # fmt: skip
    found = {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}
    same = found["same_codes"]
    step = logit_step(model)
    return {
        "logit_step": step,
        "disagreements_beyond_one_step": int((~found["agree"] & (found["margin"] > step)).sum()),
        "images": len(raw),
        "argmax_agreement": float(found["agree"].mean()),
        "argmax_disagreements": int((~found["agree"]).sum()),
        "images_with_other_codes": int((~same).sum()),
        "other_codes_only_at_ties": bool(found["ties_only"].all()),
        "disagreements_with_same_codes": int((~found["agree"] & same).sum()),
        "max_relative_difference_same_codes": float(found["difference"][same].max(initial=0.0)),
        "same_codes_within_tolerance": bool(found["close"][same].all()),
    }

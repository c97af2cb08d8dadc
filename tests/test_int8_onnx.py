"""int8 models as ONNX QDQ graphs: checked, holding our codes, run by ONNX Runtime with our int8
forward's codes and predictions; the int8 checkpoint through nn.export, nn.evaluate and
nn.predict, and a damaged one refused in one line.

What ONNX Runtime must match (bench/qdq_parity.py): on every image where each QuantizeLinear gave
our codes, the logits to float32 rounding and the argmax; where a code differs, the first layer's
differences each one code at a rounding tie; no argmax differing where our margin exceeds one
quantization step of the logits."""

import re

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from onnx_cases import blobs_checkpoint, built, random_inputs

from bench.qdq_parity import compare_qdq, layer_inputs
from nn import evaluate, export, predict
from nn.checkpoint import read_checkpoint, write_arrays
from nn.data import Normalizer, load_data
from nn.exits import CHECKPOINT
from nn.export import export_model
from nn.quantize import calibrate, predictions
from nn.quantize import main as quantize_main
from nn.quantized import quantize_model, quantized_layers

IMAGES = 300


def quantized(name, tier, rng):
    """(seeded int8 model of kind `name` calibrated on random images, its record, its normalizer,
    IMAGES raw inputs to compare on)."""
    model, meta = built(name, tier)
    normalizer = Normalizer.from_json(meta["normalizer"])
    inputs = random_inputs(model.input_shape, IMAGES, rng)
    # unchained, as the QDQ graph computes: floats quantized at each int8 layer's input
    quantize_model(model, calibrate(model, normalizer(inputs[:100]), "minmax"), chained=False)
    meta["quantization"] = {"method": "minmax", "calibration": 100}
    return model, meta, normalizer, inputs


@pytest.fixture
def numpy_tier():
    import stage2_numpy

    return stage2_numpy


@pytest.mark.parametrize("name", ["every_layer", "lenet5"])
def test_the_qdq_graph_is_checked_and_holds_our_codes(name, numpy_tier, rng):
    model, meta, _, _ = quantized(name, numpy_tier, rng)
    proto = export_model(model, meta)
    onnx.checker.check_model(proto, full_check=True)
    tensors = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    nodes = {node.name: node for node in proto.graph.node}
    for path, layer in quantized_layers(model).items():
        np.testing.assert_array_equal(tensors[f"{path}.int8_weight"], layer.host["weight"])
        assert tensors[f"{path}.int8_weight"].dtype == np.int8
        np.testing.assert_array_equal(tensors[f"{path}.weight_scale"], layer.host["weight_scale"])
        assert tensors[f"{path}.input_zero_point"].dtype == np.int8
        assert tensors[f"{path}.input_zero_point"] == layer.input_zero_point
        assert tensors[f"{path}.input_scale"] == np.float32(layer.input_scale)
        weight = nodes[f"{path}.weight:DequantizeLinear"]
        assert [a.i for a in weight.attribute if a.name == "axis"] == [0]  # per output channel
        product = nodes[f"{path}:Conv"] if f"{path}:Conv" in nodes else nodes[f"{path}:Gemm"]
        assert list(product.input[:2]) == [f"{path}.input:DequantizeLinear", weight.output[0]]
    assert not any(name.endswith(".weight") for name in tensors)  # no float weight left in


@pytest.mark.parametrize("name", ["every_layer", "lenet5", "resnet_mini", "mlp"])
def test_runtime_runs_the_qdq_graph_as_our_int8_forward(name, numpy_tier, rng):
    model, meta, normalizer, inputs = quantized(name, numpy_tier, rng)
    row = compare_qdq(model, export_model(model, meta), inputs, normalizer)
    # Enough images with every code ours that the float comparison below says something (random
    # untrained LeNet-5: about half; a near tie flips one of its 1,176 second-layer codes)
    assert row["images_with_other_codes"] <= IMAGES * 0.8, row
    assert row["same_codes_within_tolerance"] and row["disagreements_with_same_codes"] == 0, row
    assert row["other_codes_only_at_ties"], row
    assert row["disagreements_beyond_one_step"] == 0, row
    assert row["argmax_agreement"] >= 0.99, row


@pytest.mark.parametrize("planted", ["zero point negated", "one weight scale for all channels",
                                     "a weight code off by one"])
def test_the_comparison_catches_a_planted_export_mistake(planted, numpy_tier, rng):
    model, meta, normalizer, inputs = quantized("lenet5", numpy_tier, rng)
    proto = export_model(model, meta)
    tensors = {tensor.name: tensor for tensor in proto.graph.initializer}
    name = {"zero point negated": "3.input_zero_point",
            "one weight scale for all channels": "0.weight_scale",
            "a weight code off by one": "11.int8_weight"}[planted]
    value = numpy_helper.to_array(tensors[name]).copy()
    if planted == "zero point negated":
        value = np.int8(-max(int(value), -127))
    elif planted == "one weight scale for all channels":
        value[:] = value.max()
    else:
        # in the last layer, whose outputs are the logits, at the input most images feed: its
        # logit then moves on those images (a code off by one in an earlier layer can move its
        # output by less than the next layer's rounding tie width, and nothing downstream shows)
        inputs_of_last, _ = layer_inputs(model, normalizer(inputs))
        column = int(np.argmax((inputs_of_last["11"] > 0).mean(axis=0)))
        value[0, column] += -1 if value[0, column] > 0 else 1
    tensors[name].CopyFrom(numpy_helper.from_array(np.asarray(value), name))
    row = compare_qdq(model, proto, inputs, normalizer)
    caught = not (row["other_codes_only_at_ties"] and row["same_codes_within_tolerance"])
    assert caught, row


@pytest.fixture(scope="module")
def int8_checkpoint(tmp_path_factory):
    """An int8 checkpoint of nn.quantize: an MLP on the synthetic blobs (int8 layers 1 and 3)."""
    folder = tmp_path_factory.mktemp("int8-onnx")
    path, _ = blobs_checkpoint(folder / "float.npz")
    out = folder / "int8.npz"
    assert quantize_main(["--checkpoint", str(path), "--out", str(out), "--stage", "2",
                          "--calibration", "200"]) == 0  # fmt: skip
    return out


def test_an_int8_checkpoint_exports_evaluates_and_predicts(int8_checkpoint, tmp_path, capsys,
                                                           numpy_tier):
    out = tmp_path / "int8.onnx"
    assert export.main(["--checkpoint", str(int8_checkpoint), "--out", str(out)]) == 0
    assert "(int8 QDQ," in capsys.readouterr().out
    ops = {node.op_type for node in onnx.load(out).graph.node}
    assert {"QuantizeLinear", "DequantizeLinear", "Gemm"} <= ops
    assert evaluate.main(["--checkpoint", str(int8_checkpoint)]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    model, meta = predict.load_model(int8_checkpoint, numpy_tier)
    test = load_data(meta["data"], None, 0, 1000).test
    accuracy = np.mean(predictions(model, Normalizer.from_json(meta["normalizer"])(test.inputs))
                       == test.labels)  # fmt: skip
    assert last == f"test_accuracy={accuracy:.4f}"
    assert predict.main(["--checkpoint", str(int8_checkpoint), "--index", "3"]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("1. ")


def damaged(source, folder, change):
    """A copy of int8 checkpoint `source` with its arrays changed by `change(arrays)`."""
    meta, arrays = read_checkpoint(source)
    change(arrays)
    path = folder / "damaged.npz"
    write_arrays(path, arrays, meta)
    return path


DAMAGES = {
    "missing weight_scale": (
        lambda a: a.pop("int8/1.weight_scale"), r"int8 layer 1 lacks int8/1\.weight_scale$"),
    "float weights": (
        lambda a: a.update({"int8/1.weight": a["int8/1.weight"].astype(np.float32)}),
        r"int8/1\.weight holds float32, not int8$"),
    "int16 zero point": (
        lambda a: a.update({"int8/3.input_zero_point": a["int8/3.input_zero_point"]
                            .astype(np.int16)}),
        r"int8/3\.input_zero_point holds int16, not int8$"),
    "float64 input scale": (
        lambda a: a.update({"int8/1.input_scale": a["int8/1.input_scale"].astype(np.float64)}),
        r"int8/1\.input_scale holds float64, not float32$"),
    "zero weight scale": (
        lambda a: a["int8/3.weight_scale"].__setitem__(0, 0.0),
        r"int8/3\.weight_scale and int8/3\.input_scale must be > 0$"),
}


@pytest.mark.parametrize("damage", DAMAGES)
@pytest.mark.parametrize("command", ["export", "evaluate"])
def test_a_damaged_int8_checkpoint_is_one_line_and_its_exit_status(
        damage, command, int8_checkpoint, tmp_path, capsys):
    change, message = DAMAGES[damage]
    path = damaged(int8_checkpoint, tmp_path, change)
    out = tmp_path / "model.onnx"
    argv = ["--checkpoint", str(path)] + (["--out", str(out)] if command == "export" else [])
    status = {"export": export.main, "evaluate": evaluate.main}[command](argv)
    err = capsys.readouterr().err
    assert status == CHECKPOINT, err
    assert err.count("\n") == 1 and err.startswith(f"error: checkpoint {path}: "), err
    assert re.search(message, err.strip()), err
    assert not out.exists()

"""nn.export and nn.import_onnx: every model kind to a checked ONNX graph, ONNX Runtime's logits
against our tiers within the derived bound, and the graph read back into nn on every tier."""

import json

import numpy as np
import onnx
import onnxruntime
import pytest
from conftest import load_tier
from onnx_cases import MODEL_DATA, built, random_inputs, write_checkpoint

from bench.logit_bound import logit_bound
from bench.onnx_parity import compare, runtime_logits, user_inputs
from nn import evaluate, export, import_onnx
from nn.data import Normalizer
from nn.evaluate import logits_of
from nn.export import export_model, save_onnx
from nn.import_onnx import import_model
from nn.onnx_format import INPUT, LOGITS, OPSET, PROBABILITIES
from nn.predict import load_model

KINDS = ["every_layer", *MODEL_DATA]
EXAMPLES = {"tiny_imagenet_cnn": 8}  # the rest: 200 random images (or points)


@pytest.fixture(scope="module")
def numpy_tier():
    return load_tier("numpy")


def exported(name, tier):
    """(model on `tier`, its record, the checked ModelProto, its normalizer)."""
    model, meta = built(name, tier)
    return model, meta, export_model(model, meta), Normalizer.from_json(meta["normalizer"])


@pytest.mark.parametrize("name", KINDS)
def test_every_model_kind_exports_a_checked_graph(name, numpy_tier):
    model, meta, proto, _ = exported(name, numpy_tier)
    onnx.checker.check_model(proto, full_check=True)
    assert [(entry.domain, entry.version) for entry in proto.opset_import] == [("", OPSET)]
    assert [value.name for value in proto.graph.input] == [INPUT]
    assert [value.name for value in proto.graph.output] == [LOGITS, PROBABILITIES]
    batch, *example = proto.graph.input[0].type.tensor_type.shape.dim
    assert batch.dim_param == "N" and not batch.HasField("dim_value")  # a dynamic batch
    assert tuple(dim.dim_value for dim in example) == model.input_shape
    metadata = {entry.key: entry.value for entry in proto.metadata_props}
    assert json.loads(metadata["class_names"]) == meta["class_names"]
    assert metadata["model"] == model.name and metadata["data"] == meta["data"]
    assert metadata["input_layout"].startswith("NCHW" if len(model.input_shape) == 3 else "NF")
    ops = [node.op_type for node in proto.graph.node]
    assert "Dropout" not in ops
    assert ops[:2] == ["Sub", "Div"]  # the data set's normalization is inside the graph
    assert ops[-1] == ("Sigmoid" if name == "xor" else "Softmax")


@pytest.mark.parametrize("name", KINDS)
def test_runtime_logits_match_stages_2_and_3_within_the_bound(name, numpy_tier, rng):
    model, _, proto, normalizer = exported(name, numpy_tier)
    inputs = random_inputs(model.input_shape, EXAMPLES.get(name, 200), rng)
    theirs = runtime_logits(proto.SerializeToString(), user_inputs(inputs, normalizer))
    bound = logit_bound(model, normalizer, inputs)
    labels = model.loss.predict(theirs)
    rows = {"numpy": compare(model, logits_of(model, normalizer, inputs), theirs, bound, labels)}
    try:
        c_tier = load_tier("c")
    except pytest.skip.Exception as skipped:
        print(f"stage 3 not compared: {skipped}")
    else:
        on_c, _ = built(name, c_tier)
        rows["c"] = compare(on_c, logits_of(on_c, normalizer, inputs), theirs, bound, labels)
    for tier_name, row in rows.items():
        assert row["passed"], f"{name} on {tier_name}: {row}"
        assert row["max_abs_difference"] <= row["max_bound"]


def test_the_probabilities_are_the_softmax_of_the_logits(numpy_tier, rng):
    model, _, proto, normalizer = exported("lenet5", numpy_tier)
    session = onnxruntime.InferenceSession(proto.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    pixels = user_inputs(random_inputs(model.input_shape, 5, rng), normalizer)
    logits, probabilities = session.run([LOGITS, PROBABILITIES], {INPUT: pixels})
    expected = np.exp(logits - logits.max(axis=1, keepdims=True))
    np.testing.assert_allclose(probabilities, expected / expected.sum(axis=1, keepdims=True),
                               rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("planted", ["mean one grey level off", "last bias dropped",
                                     "one weight changed by 1%"])
def test_the_parity_check_catches_a_planted_mistake(planted, numpy_tier, rng):
    model, _, proto, normalizer = exported("lenet5", numpy_tier)
    tensors = {tensor.name: tensor for tensor in proto.graph.initializer}
    name = {"mean one grey level off": "normalizer.mean", "last bias dropped": "11.bias",
            "one weight changed by 1%": "3.weight"}[planted]
    value = onnx.numpy_helper.to_array(tensors[name]).copy()
    if name == "normalizer.mean":
        value += 1 / 255
    elif name == "11.bias":
        value[:] = 0
    else:
        value.flat[int(np.argmax(np.abs(value)))] *= 1.01
    tensors[name].CopyFrom(onnx.numpy_helper.from_array(value, name))
    inputs = random_inputs(model.input_shape, 200, rng)
    theirs = runtime_logits(proto.SerializeToString(), user_inputs(inputs, normalizer))
    ours = logits_of(model, normalizer, inputs)
    row = compare(model, ours, theirs, logit_bound(model, normalizer, inputs), np.zeros(200))
    assert not row["passed"] and row["logits_outside_bound"] > 0, row


def test_a_nan_logit_never_passes(numpy_tier, rng):
    model, _, proto, normalizer = exported("mlp", numpy_tier)
    inputs = random_inputs(model.input_shape, 10, rng)
    theirs = runtime_logits(proto.SerializeToString(), user_inputs(inputs, normalizer))
    ours = logits_of(model, normalizer, inputs)
    ours[3, 4] = np.nan
    row = compare(model, ours, theirs, logit_bound(model, normalizer, inputs), np.zeros(10))
    assert not row["passed"] and row["logits_outside_bound"] == 1


@pytest.mark.parametrize("name", ["every_layer", "resnet_mini", "fashion_cnn", "perceptron"])
def test_import_gives_back_the_same_model(name, numpy_tier, tmp_path):
    model, meta, proto, normalizer = exported(name, numpy_tier)
    save_onnx(proto, tmp_path / "model.onnx")
    imported = import_model(tmp_path / "model.onnx", numpy_tier)
    # the same layers but Dropout (the identity in inference, left out), the same arrays in order
    assert layer_lines(imported.model) == layer_lines(model)
    ours = [*model.parameters().values()]
    back = [*imported.model.parameters().values()]
    assert len(back) == len(ours)
    for index, (mine, read) in enumerate(zip(ours, back, strict=True)):  # float32 both ways
        np.testing.assert_array_equal(read.value, mine.value, err_msg=f"parameter {index}")
    arrays = [value for value in model.buffers().values() if not isinstance(value, int)]
    back = [value for value in imported.model.buffers().values() if not isinstance(value, int)]
    for index, (mine, read) in enumerate(zip(arrays, back, strict=True)):
        np.testing.assert_array_equal(read, mine, err_msg=f"buffer {index}")
    np.testing.assert_allclose(imported.normalizer.mean, normalizer.mean, rtol=1e-7)
    np.testing.assert_allclose(imported.normalizer.std, normalizer.std, rtol=1e-7)


def layer_lines(model):
    """(depth, description, output shape) of every layer, Dropout's left out."""
    lines = []

    def walk(layer, depth):
        for child in layer.children().values():
            if child.describe().startswith("Dropout"):
                continue
            lines.append((depth, child.describe(), child.output_shape))
            walk(child, depth + 1)

    walk(model.net, 0)
    return lines


def test_import_runs_on_every_tier(tier, tmp_path, rng):
    """The every-layer network exported from stage 2, read back on each tier (numba's simulator
    included: it is small), gives ONNX Runtime's logits within the bound."""
    reference = load_tier("numpy")
    model, _, proto, normalizer = exported("every_layer", reference)
    save_onnx(proto, tmp_path / "model.onnx")
    imported = import_model(tmp_path / "model.onnx", tier)
    inputs = random_inputs(model.input_shape, 2, rng)
    theirs = runtime_logits(proto.SerializeToString(), user_inputs(inputs, normalizer))
    ours = logits_of(imported.model, imported.normalizer, inputs)
    bound = logit_bound(model, normalizer, inputs)
    row = compare(model, ours, theirs, bound, model.loss.predict(theirs))
    assert row["logits_outside_bound"] == 0 and row["argmax_disagreements"] == 0, row


def test_export_then_evaluate_and_import_report_the_same_accuracy(
        numpy_tier, tmp_path, capsys, shared_data_dir, monkeypatch):
    """The commands end to end on MNIST's test set: nn.evaluate on the checkpoint and
    nn.import_onnx on its export print the same test_accuracy line."""
    monkeypatch.setenv("NN_DATA_DIR", str(shared_data_dir))
    model, meta = built("mlp", numpy_tier)
    checkpoint = write_checkpoint(tmp_path / "mlp.npz", model, meta)
    assert export.main(["--checkpoint", str(checkpoint), "--out", str(tmp_path / "m.onnx")]) == 0
    assert "passed onnx.checker's full check" in capsys.readouterr().out
    assert evaluate.main(["--checkpoint", str(checkpoint)]) == 0
    evaluated = capsys.readouterr().out.splitlines()[-1]
    assert import_onnx.main([str(tmp_path / "m.onnx"), "--stage", "2"]) == 0
    imported = capsys.readouterr().out.splitlines()[-1]
    assert evaluated.startswith("test_accuracy=0.") and imported == evaluated
    loaded, _ = load_model(checkpoint, numpy_tier)
    assert loaded.parameter_count() == model.parameter_count()


def test_a_graph_written_elsewhere_in_the_op_set_is_read(numpy_tier, tmp_path, rng):
    """MatMul, Gemm without transB, Identity, a scalar normalization and only a Softmax output: the
    forms other exporters write, read into the same layers."""
    first, second = rng.normal(size=(4, 5)), rng.normal(size=(5, 3))
    bias = rng.normal(size=3)
    graph = onnx.helper.make_graph(
        [
            onnx.helper.make_node("Div", ["x", "scale"], ["scaled"], name="scale"),
            onnx.helper.make_node("MatMul", ["scaled", "first"], ["hidden"], name="mm"),
            onnx.helper.make_node("Tanh", ["hidden"], ["squashed"], name="tanh"),
            onnx.helper.make_node("Identity", ["squashed"], ["same"], name="id"),
            onnx.helper.make_node("Gemm", ["same", "second", "bias"], ["scores"], name="gemm"),
            onnx.helper.make_node("Softmax", ["scores"], ["p"], name="softmax", axis=-1),
        ],
        "elsewhere",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["batch", 4])],
        [onnx.helper.make_tensor_value_info("p", onnx.TensorProto.FLOAT, ["batch", 3])],
        [onnx.numpy_helper.from_array(np.float32(value), name) for name, value in
         (("scale", 2.0), ("first", first), ("second", second), ("bias", bias))],
    )
    proto = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 18)])
    save_onnx(proto, tmp_path / "elsewhere.onnx")
    imported = import_model(tmp_path / "elsewhere.onnx", numpy_tier)
    assert [layer.describe() for layer in imported.model.net.layers] == [
        "Linear(4->5)", "Tanh()", "Linear(5->3)"]
    points = rng.normal(size=(7, 4)).astype(np.float32)
    expected = np.tanh(points.astype(np.float64) / 2 @ np.float32(first)) @ np.float32(second) \
        + np.float32(bias)
    np.testing.assert_allclose(logits_of(imported.model, imported.normalizer, points), expected,
                               rtol=1e-4, atol=1e-5)


def test_a_fused_max_pool_and_relu_exports_both(numpy_tier, rng):
    """A model whose tier fuses max-pooling and ReLU into one layer (nn/layers/fusion.py, the nvcc
    variant) exports the same graph computations as the model before the rewrite."""
    from nn.layers import Sequential
    from nn.layers.fusion import MaxPoolReLU, _fused

    model, meta, proto, normalizer = exported("fashion_cnn", numpy_tier)
    sequentials = [layer for layer in [model.net, *model.net.children().values()]
                   if isinstance(layer, Sequential)]  # fmt: skip
    for layer in sequentials:
        layer.layers, layer.names = _fused(layer.layers, layer.names)
    assert any(isinstance(layer, MaxPoolReLU) for s in sequentials for layer in s.layers)
    fused = export_model(model, meta)
    inputs = user_inputs(random_inputs(model.input_shape, 50, rng), normalizer)
    unfused_logits = runtime_logits(proto.SerializeToString(), inputs)
    np.testing.assert_array_equal(runtime_logits(fused.SerializeToString(), inputs), unfused_logits)


def test_a_node_written_wrong_fails_the_check_in_one_line(numpy_tier, monkeypatch):
    """A Conv writer giving `pads` for two sides instead of four (the learner's conv_node of
    week 19 gone wrong): the export names the node, in one error, not onnx's traceback."""
    from nn import onnx_writers
    from nn.onnx_format import OnnxFileError

    def two_sided(graph, conv, inputs, path):
        k, s, p = conv.kernel_size, conv.stride, conv.padding
        return graph.node("Conv", inputs, path, kernel_shape=[k, k], strides=[s, s], pads=[p, p])

    monkeypatch.setattr(onnx_writers, "conv_node", two_sided)
    model, meta = built("lenet5", numpy_tier)
    with pytest.raises(OnnxFileError, match=r"full check: .*Conv.*pads has incorrect size"):
        export_model(model, meta)

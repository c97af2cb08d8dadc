"""Bad input to nn.export, nn.import_onnx and nn.evaluate: hostile or broken ONNX files, checkpoints
of another model or cut short. Each is one line on stderr naming the problem, an exit status of its
kind (nn/exits.py), no traceback, and never a file half written in place of a good one."""

import json
import zipfile

import numpy as np
import onnx
import pytest
from conftest import load_tier
from onnx_cases import built, write_checkpoint

from nn import evaluate, exits, export, import_onnx
from nn.export import export_model, save_onnx


@pytest.fixture(scope="module")
def good_proto():
    """The exported every-layer network (a projection shortcut, BatchNorm, every activation)."""
    model, meta = built("every_layer", load_tier("numpy"))
    return export_model(model, meta)


@pytest.fixture
def checkpoint(tmp_path):
    model, meta = built("mlp", load_tier("numpy"))
    return write_checkpoint(tmp_path / "mlp.npz", model, meta)


def one_error_line(capsys):
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    assert "Traceback" not in captured.err + captured.out
    return lines[0]


def node_named(proto, op_type):
    return next(node for node in proto.graph.node if node.op_type == op_type)


def tensor_named(proto, name):
    return next(tensor for tensor in proto.graph.initializer if tensor.name == name)


def truncated(proto):
    return proto.SerializeToString()[: len(proto.SerializeToString()) // 2]


def opset(version):
    def change(proto):
        proto.opset_import[0].version = version

    return change


def unknown_op(proto):
    node = node_named(proto, "Relu")
    node.op_type, node.name = "FooBar", "evil_node"


def shape_mismatch(proto):
    """The last Gemm's weight takes 7 inputs where the layer before gives 6."""
    tensor = tensor_named(proto, "11.weight")
    tensor.CopyFrom(onnx.numpy_helper.from_array(np.ones((3, 7), np.float32), "11.weight"))


def claims_two_gigabytes(proto):
    tensor = tensor_named(proto, "0.weight")
    del tensor.dims[:]
    tensor.dims.extend([1 << 29])  # 2 GiB of float32, with a few bytes behind the claim


def external_data(proto):
    tensor = tensor_named(proto, "0.weight")
    tensor.data_location = onnx.TensorProto.EXTERNAL
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", "/etc/passwd"


def grouped_conv(proto):
    node_named(proto, "Conv").attribute.append(onnx.helper.make_attribute("group", 2))


def dynamic_channels(proto):
    dim = proto.graph.input[0].type.tensor_type.shape.dim[1]
    dim.dim_param = "C"


def non_residual_add(proto):
    """An Add of a constant after the first Relu: no residual join."""
    relu = node_named(proto, "Relu")
    consumer = next(node for node in proto.graph.node if relu.output[0] in node.input)
    shift = onnx.numpy_helper.from_array(np.float32(1), "shift")
    proto.graph.initializer.append(shift)
    add = onnx.helper.make_node("Add", [relu.output[0], "shift"], ["shifted"], name="bias_add")
    proto.graph.node.insert(list(proto.graph.node).index(relu) + 1, add)
    consumer.input[list(consumer.input).index(relu.output[0])] = "shifted"


def quantized(proto):
    """A QuantizeLinear / DequantizeLinear pair on the input, as a QDQ export holds."""
    pixels = proto.graph.input[0].name
    first = next(node for node in proto.graph.node if pixels in node.input)
    scale = onnx.numpy_helper.from_array(np.float32(1 / 255), "pixels_scale")
    zero = onnx.numpy_helper.from_array(np.int8(0), "pixels_zero_point")
    proto.graph.initializer.extend([scale, zero])
    proto.graph.node.insert(0, onnx.helper.make_node(
        "QuantizeLinear", [pixels, "pixels_scale", "pixels_zero_point"], ["pixels_q"]))
    proto.graph.node.insert(1, onnx.helper.make_node(
        "DequantizeLinear", ["pixels_q", "pixels_scale", "pixels_zero_point"], ["pixels_dq"]))
    first.input[list(first.input).index(pixels)] = "pixels_dq"


HOSTILE = {  # name: (change to a good file, exit status, words the message must hold)
    "truncated": (truncated, exits.ONNX_FILE, ["truncated"]),
    "opset 99": (opset(99), exits.ONNX_FILE, ["opset 99", "13 to"]),
    "opset 7": (opset(7), exits.ONNX_FILE, ["opset 7"]),
    "unknown op": (unknown_op, exits.UNSUPPORTED_NODE, ["'evil_node'", "FooBar"]),
    "shape mismatch": (shape_mismatch, exits.ONNX_FILE, ["onnx.checker", "11:Gemm"]),
    "2 GB tensor": (claims_two_gigabytes, exits.ONNX_FILE, ["'0.weight'", "2,147,483,648 bytes"]),
    "external data": (external_data, exits.ONNX_FILE, ["'0.weight'", "another file"]),
    "grouped conv": (grouped_conv, exits.UNSUPPORTED_NODE, ["'0:Conv'", "group=2"]),
    "dynamic channels": (dynamic_channels, exits.ONNX_FILE, ["input 'pixels'", "['?', '?'"]),
    "add of a constant": (non_residual_add, exits.UNSUPPORTED_NODE, ["'bias_add'", "(Add)"]),
    "quantized": (quantized, exits.UNSUPPORTED_NODE,
                  ["quantized graph (DequantizeLinear, QuantizeLinear nodes)", "nn.quantize"]),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_onnx_file_is_one_clear_line(case, good_proto, tmp_path, capsys):
    change, status, words = HOSTILE[case]
    proto = onnx.ModelProto()
    proto.CopyFrom(good_proto)
    changed = change(proto)
    path = tmp_path / "hostile.onnx"
    path.write_bytes(changed if isinstance(changed, bytes) else proto.SerializeToString())
    assert import_onnx.main([str(path), "--stage", "2", "--data", "mnist"]) == status
    line = one_error_line(capsys)
    for word in words:
        assert word in line, line


def test_a_file_that_is_not_onnx_is_refused(checkpoint, tmp_path, capsys):
    assert import_onnx.main([str(checkpoint), "--stage", "2"]) == exits.ONNX_FILE
    assert "not ONNX" in one_error_line(capsys)
    assert import_onnx.main([str(tmp_path / "absent.onnx")]) == exits.ONNX_FILE
    assert "does not exist" in one_error_line(capsys)


def rewrite_meta(path, **changes):
    """Rewrite the checkpoint's JSON record with `changes`, its arrays untouched."""
    with np.load(path) as archive:
        arrays = {name: archive[name] for name in archive.files}
    meta = json.loads(str(arrays["meta"]))
    arrays["meta"] = np.array(json.dumps({**meta, **changes}))
    with open(path, "wb") as file:
        np.savez(file, **arrays)


def cut_short(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 2 // 3])


CHECKPOINTS = {  # name: (change to a good checkpoint, words the message must hold)
    "another model": (lambda path: rewrite_meta(path, model="lenet5", model_options={}),
                      ["does not fit the model's parameters"]),
    "truncated": (cut_short, ["corrupt or not a checkpoint"]),
    "no class names": (lambda path: rewrite_meta(path, class_names="digits"), ["class_names"]),
}


@pytest.mark.parametrize("command", ["export", "evaluate"])
@pytest.mark.parametrize("case", list(CHECKPOINTS))
def test_a_bad_checkpoint_is_one_clear_line(case, command, checkpoint, tmp_path, capsys):
    change, words = CHECKPOINTS[case]
    change(checkpoint)
    out = tmp_path / "model.onnx"
    out.write_bytes(b"a good file from before")
    if command == "export":
        status = export.main(["--checkpoint", str(checkpoint), "--out", str(out)])
    else:
        status = evaluate.main(["--checkpoint", str(checkpoint), "--stage", "2"])
    assert status == exits.CHECKPOINT
    line = one_error_line(capsys)
    assert all(word in line for word in words), line
    assert out.read_bytes() == b"a good file from before"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["mlp.npz", "model.onnx"]


def test_export_refuses_to_write_over_its_checkpoint(checkpoint, capsys):
    before = checkpoint.read_bytes()
    assert export.main(["--checkpoint", str(checkpoint), "--out", str(checkpoint)]) == exits.USAGE
    assert "the checkpoint itself" in one_error_line(capsys)
    assert checkpoint.read_bytes() == before and zipfile.is_zipfile(checkpoint)


def test_an_export_stopped_mid_write_leaves_the_old_file(tmp_path, good_proto):
    out = tmp_path / "model.onnx"
    save_onnx(good_proto, out)
    before = out.read_bytes()

    class StopsMidWrite:
        def SerializeToString(self):  # noqa: N802 (protobuf's name)
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        save_onnx(StopsMidWrite(), out)
    assert out.read_bytes() == before
    assert [path.name for path in tmp_path.iterdir()] == ["model.onnx"]  # no temporary left
    onnx.checker.check_model(onnx.load(out), full_check=True)

"""The int8 ops on every tier, exactly as stage 1 computes them, with the same refusals; and
nn.quantize's int8 checkpoints: written, loaded by nn.predict's loader, refused when bad.

The grader checks the ops in depth (python -m grader --ops quantize_int8,int8_linear,int8_conv2d;
tests/test_int8_planted.py shows it catching planted bugs); these are the cheap checks of each
tier and of the command."""

import re

import numpy as np
import pytest
from onnx_cases import blobs_checkpoint

import stage1_python as oracle
from grader.builders import build_int8_conv2d, build_int8_linear, build_quantize
from nn.predict import load_model
from nn.quantize import main as quantize_main
from nn.quantize import predictions
from nn.quantized import QuantizedLayer, quantized_layers

CASES = [
    ("quantize_int8", build_quantize, ((3, 37), -5, True)),
    ("quantize_int8", build_quantize, ((2, 3, 5), 127, False)),
    ("int8_linear", build_int8_linear, (5, 37, 19, -128)),
    ("int8_conv2d", build_int8_conv2d, (2, 3, 7, 6, 5, 3, 3, 1, 1, 50)),
]


def native(tier, args):
    return [tier.from_numpy(v) if isinstance(v, np.ndarray) else v for v in args.values()]


@pytest.mark.parametrize(("op", "build", "size"), CASES, ids=[f"{c[0]}-{i}" for i, c in
                                                           enumerate(CASES)])  # fmt: skip
def test_every_tier_computes_stage_1s_result_exactly(tier, op, build, size):
    args = build(np.random.default_rng(11), size)
    expected = np.array(getattr(oracle, op)(*native(oracle, args)))
    found = np.asarray(tier.to_numpy(getattr(tier, op)(*native(tier, args))))
    np.testing.assert_array_equal(found, expected.astype(found.dtype))
    if op == "quantize_int8" and tier is not oracle:  # stage 1's codes are Python ints
        assert found.dtype == np.int8


def test_quantize_rounds_halves_to_even_and_clamps(tier):
    x = np.array([[0.5, 1.5, 2.5, -0.5, -1.5, 1000.0, -1000.0, np.nan]], np.float32)
    q = np.asarray(tier.to_numpy(tier.quantize_int8(tier.from_numpy(x), 1.0, 0)))
    np.testing.assert_array_equal(q, [[0, 2, 2, 0, -2, 127, -128, 0]])


def refusals(tier):
    """(call, exception type, message pattern): the same for every tier."""
    codes = np.zeros((2, 4), np.int8)
    weights = np.zeros((3, 4), np.int8)
    ones = np.ones(3, np.float32)
    floats = np.zeros((2, 4), np.float32)
    t = tier.from_numpy
    return [
        (lambda: tier.int8_linear(t(floats), 0, t(weights), t(ones), t(ones)), TypeError,
         r"^int8_linear: x must be an int8 array, got float(32|64)$"),
        (lambda: tier.int8_linear(t(codes), 128, t(weights), t(ones), t(ones)), ValueError,
         r"^int8_linear: x_zero must be an int in \[-128, 127\], got 128$"),
        (lambda: tier.int8_linear(t(codes), 0, t(weights[:, :3]), t(ones), t(ones)), ValueError,
         r"^int8_linear: w must have shape \[M, K=4\] \(K: x's columns\), got \[3, 3\]$"),
        (lambda: tier.int8_linear(t(codes), 0, t(weights), t(ones[:2]), t(ones)), ValueError,
         r"^int8_linear: scale must have shape \[M=3\] \(M: w's rows\), got \[2\]$"),
        (lambda: tier.quantize_int8(t(floats), 0.0, 0), ValueError,
         r"^quantize_int8: scale must be a finite number with 0 < scale, got 0.0$"),
        (lambda: tier.int8_conv2d(t(codes.reshape(1, 1, 2, 4)), 0,
                                  t(np.zeros((3, 1, 3, 3), np.int8)), t(ones), t(ones)),
         ValueError, r"^int8_conv2d: the output height must be >= 1"),
    ]  # fmt: skip


def test_bad_calls_get_the_same_refusal_on_every_tier(tier):
    for call, kind, pattern in refusals(tier):
        with pytest.raises(kind) as raised:
            call()
        assert re.search(pattern, str(raised.value)), str(raised.value)


def test_a_sum_too_long_for_int32_is_refused(tier):
    if tier is oracle:
        pytest.skip("a 65794-long row of Python ints is slow to build and check on stage 1")
    x, w = np.zeros((1, 65794), np.int8), np.zeros((1, 65794), np.int8)
    one = tier.from_numpy(np.ones(1, np.float32))
    with pytest.raises(ValueError, match=r"K \(x's columns\) must be at most 65793, so that an "
                                         r"int32 sum of int8 products cannot overflow"):
        tier.int8_linear(tier.from_numpy(x), 0, tier.from_numpy(w), one, one)


@pytest.fixture(scope="module")
def float_checkpoint(tmp_path_factory):
    return blobs_checkpoint(tmp_path_factory.mktemp("int8") / "float.npz")


@pytest.mark.parametrize("method", ["minmax", "percentile", "entropy"])
def test_an_int8_checkpoint_loads_and_predicts_as_the_float_model(float_checkpoint, tmp_path,
                                                                  method, capsys):
    import stage2_numpy

    path, data = float_checkpoint
    out = tmp_path / "int8.npz"
    assert quantize_main(["--checkpoint", str(path), "--out", str(out), "--stage", "2",
                          "--calibration", "200", "--method", method]) == 0  # fmt: skip
    model, meta = load_model(out, stage2_numpy)
    assert meta["quantization"]["method"] == method
    layers = quantized_layers(model)
    assert layers and all(isinstance(layer, QuantizedLayer) for layer in layers.values())
    assert all(layer.host["weight"].dtype == np.int8 for layer in layers.values())
    float_model, _ = load_model(path, stage2_numpy)
    images = data.normalizer(data.test.inputs)
    agreement = np.mean(predictions(model, images) == predictions(float_model, images))
    assert agreement >= 0.95, agreement


def test_bad_quantize_commands_are_one_line_and_write_nothing(float_checkpoint, tmp_path, capsys):
    path, _ = float_checkpoint
    out = tmp_path / "int8.npz"
    assert quantize_main(["--checkpoint", str(path), "--out", str(out), "--stage", "2",
                          "--calibration", "0"]) == 2  # fmt: skip
    assert "--calibration must be in [1," in capsys.readouterr().err
    broken = tmp_path / "broken.npz"
    broken.write_bytes(path.read_bytes()[:100])
    assert quantize_main(["--checkpoint", str(broken), "--out", str(out), "--stage", "2"]) == 4
    assert "is corrupt or not a checkpoint" in capsys.readouterr().err
    assert quantize_main(["--checkpoint", str(path), "--out", str(path), "--stage", "2"]) == 2
    assert not out.exists()
    assert quantize_main(["--checkpoint", str(path), "--out", str(out), "--stage", "2",
                          "--calibration", "50"]) == 0  # fmt: skip
    again = tmp_path / "twice.npz"
    assert quantize_main(["--checkpoint", str(out), "--out", str(again), "--stage", "2"]) == 2
    assert "already quantized" in capsys.readouterr().err
    assert not again.exists()

"""The int8 ops on every tier, exactly as stage 1 computes them, with the same refusals; and
nn.quantize's int8 checkpoints: written, loaded by nn.predict's loader, refused when bad.

The grader checks the ops in depth (python -m grader --ops quantize_int8,int8_linear,int8_conv2d;
tests/test_int8_planted.py shows it catching planted bugs); these are the cheap checks of each
tier and of the command."""

import io
import re

import numpy as np
import pytest
from onnx_cases import blobs_checkpoint

import stage1_python as oracle
from grader.builders import build_int8_conv2d, build_int8_linear, build_quantize
from nn.backend import load_tier
from nn.models import build_model
from nn.predict import load_model
from nn.quantize import calibrate, entropy_high, predictions
from nn.quantize import main as quantize_main
from nn.quantized import CHAINED_OPS, QuantizedLayer, quantize_model, quantized_layers

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


class WithoutChainedOps:
    """A tier with the ops that chain int8 layers hidden: its quantized models pass floats."""

    def __init__(self, tier):
        self._tier = tier

    def __getattr__(self, name):
        if name in CHAINED_OPS:
            raise AttributeError(name)
        return getattr(self._tier, name)


def lenet5_int8(tier, images):
    """LeNet-5 (seeded random weights) on `tier`, calibrated on `images` and quantized."""
    model = build_model("lenet5", (1, 28, 28), 10)
    model.build(tier, seed=5)
    model.eval()
    return quantize_model(model, calibrate(model, images, "minmax"))


@pytest.mark.parametrize("stage", [2, 3])
def test_chained_layers_pass_int8_codes_as_the_unchained_model_computes_them(stage):
    """Between two quantized layers the codes flow: conv -> codes with the ReLU -> int8 pooling
    -> conv ... -> the last Linear's float logits. The first conv's codes are those of the
    unchained model's float output after the ReLU (requantized from the sums instead of
    quantized from the float32 y: a code may differ by one where the two roundings differ), and
    the logits agree to the quantization's noise."""
    tier = load_tier(stage)
    images = np.random.default_rng(9).standard_normal((16, 1, 28, 28)).astype(np.float32)
    chained, unchained = lenet5_int8(tier, images), lenet5_int8(WithoutChainedOps(tier), images)
    kinds = [type(layer).__name__ for layer in chained.net.layers]
    assert kinds == ["QuantizedLayer", "FusedReLU", "CodesMaxPool2d", "QuantizedLayer",
                     "FusedReLU", "CodesMaxPool2d", "Flatten", "QuantizedLayer", "FusedReLU",
                     "QuantizedLayer", "FusedReLU", "QuantizedLayer"]  # fmt: skip
    layers = list(quantized_layers(chained).values())
    assert [layer.takes_codes for layer in layers] == [False, True, True, True, True]
    assert [layer.output_code is None for layer in layers] == [False] * 4 + [True]
    assert not any(layer.output_code for layer in quantized_layers(unchained).values())

    x = tier.from_numpy(images)
    codes = np.asarray(tier.to_numpy(chained.net.layers[0].forward(x)))
    assert codes.dtype == np.int8
    first = unchained.net.layers[0]
    relu = np.maximum(tier.to_numpy(first.forward(x)), 0)
    scale, zero, _ = chained.net.layers[0].output_code
    expected = np.asarray(tier.to_numpy(tier.quantize_int8(tier.from_numpy(relu), scale, zero)))
    difference = np.abs(codes.astype(np.int64) - expected)
    assert difference.max() <= 1 and np.mean(difference) < 0.01
    assert codes.min() >= zero  # the ReLU: no code below the code of 0.0

    found = tier.to_numpy(chained.forward(x))
    want = tier.to_numpy(unchained.forward(x))
    assert found.dtype == np.float32
    assert np.sqrt(np.mean((found - want) ** 2) / np.mean(want**2)) < 0.05
    assert np.mean(found.argmax(1) == want.argmax(1)) >= 0.85


def test_a_layer_is_replaced_by_its_name_in_a_fused_sequential():
    """Where the tier fused a MaxPool2d and ReLU into one layer (the nvcc variant), the layers
    after them sit one position before their names: a quantized layer goes in by name."""
    from nn.layers import Conv2d, Flatten, Linear, MaxPool2d, ReLU, Sequential
    from nn.layers.fusion import _fused
    from nn.quantized import replace_layer

    net = Sequential(Conv2d(1, 2, 3), MaxPool2d(2, 2), ReLU(), Flatten(), Linear(8, 3))
    net.layers, net.names = _fused(net.layers, net.names)
    assert net.names == ["0", "1", "3", "4"]
    marker = ReLU()
    replace_layer(net, "4", marker)
    assert net.children()["4"] is marker and net.layers[-1] is marker


def test_the_entropy_calibrator_keeps_the_bright_pixels_beside_a_background_spike():
    """MNIST's first layer: 81% of the inputs are the background (the range's low end), the
    strokes reach the top and many sit there. The end chosen must not clip them, as a histogram
    dominated by the spike made it (2.46 of 2.87: a 10% error)."""
    rng = np.random.default_rng(0)
    background, top = -0.42, 2.87
    strokes = np.concatenate([rng.uniform(background, top, 30_000), np.full(20_000, top)])
    sample = np.concatenate([np.full(200_000, background), strokes])
    assert entropy_high(sample, background) >= 0.99 * top


def test_every_written_int8_gemm_rung_answers_its_probe():
    """s2c_int8_gemm_rung_status: S2C_OK for each rung of the repository's C tier (0: the best)."""
    from stage3_c._native import OK, extension
    from stage3_c.quantized import INT8_KERNELS, int8_kernels

    lib = extension().lib
    numbers = [0, *(INT8_KERNELS.index(name) + 1 for name in int8_kernels())]
    assert [lib.s2c_int8_gemm_rung_status(number) for number in numbers] == [OK] * len(numbers)


@pytest.mark.slow
@pytest.mark.week19
def test_an_op_whose_rung_is_a_stub_names_the_rung(tmp_path):
    """Week 19's C ops written, the best rung this CPU has still its stub: the grader's
    'not implemented' names that rung's task, not the op the learner has written."""
    from c_workspace import c_workspace

    from contract import ops_for_week
    from grader.run import Options, grade
    from stage3_c.quantized import int8_kernel

    rung = f"int8_gemm_{int8_kernel()}"
    week19 = {*ops_for_week(3, 19), "int8_gemm_scalar", "int8_gemm_avx2", "int8_gemm_avx_vnni",
              "int8_gemm_avx512_vnni"} - {rung}  # fmt: skip
    c_workspace(tmp_path, solved=week19)
    options = Options(stage=3, impl=str(tmp_path), ops=("int8_linear", "maxpool2d_int8"),
                      quick=True, checks=("correct",))  # fmt: skip
    options.json = str(tmp_path / "grade.json")
    status, record = grade(options, io.StringIO())
    results = {r.op: r for r in record["runs"][0]["results"]}
    assert status == 1
    assert results["maxpool2d_int8"].status == "passed"  # no GEMM: written, and passes
    assert results["int8_linear"].message == (
        f"int8_linear: not implemented (week 19, task {rung})"
    ), results["int8_linear"].message

"""The int8 model's fused inference path (nn.quantized.fuse_int8), as the nvcc variant runs it:
weights packed once when the model is made, each chained Conv2d and the MaxPool2d(2) after it one
call of int8_conv2d_pool_to_int8 (a first layer quantizing its float32 input inside), the linear
layers on their packed weights. Here on stage 2 given those extras composed of its own unfused ops
(WithFusedOps): the rewrite must leave every code and logit as the unfused chained model computes
them, bit for bit, and call what it says. tests/test_int8_fused_emulated.py checks that the nvcc
kernels equal the unfused kernels they stand for; the arguments' checks are checked here."""

import numpy as np
import pytest

from argcheck import quantized as quantized_checks
from nn.backend import load_tier
from nn.layers.fusion import MaxPoolReLU
from nn.layers.pooling import MaxPool2d
from nn.models import build_model
from nn.quantize import calibrate
from nn.quantized import FUSED_OPS, QuantizedLayer, quantize_model, quantized_layers
from stage2_numpy._checks import NumpyArrays


class Packed:
    """What WithFusedOps.int8_pack_weights returns: the codes it was given."""

    def __init__(self, w):
        self.w = w


class WithFusedOps:
    """`tier` with FUSED_OPS made of its own ops (quantize_int8, int8_conv2d_to_int8,
    maxpool2d_int8, int8_linear, int8_linear_to_int8); `calls` records each call's op."""

    def __init__(self, tier):
        self._tier, self.calls = tier, []

    def __getattr__(self, name):
        return getattr(self._tier, name)

    def int8_pack_weights(self, w):
        self.calls.append("int8_pack_weights")
        return Packed(w)

    def int8_linear_packed(self, x, x_zero, weights, scale, b, y_zero=None, relu=False):
        self.calls.append("int8_linear_packed")
        if y_zero is None:
            return self._tier.int8_linear(x, x_zero, weights.w, scale, b)
        return self._tier.int8_linear_to_int8(x, x_zero, weights.w, scale, b, y_zero, relu)

    def int8_conv2d_pool_to_int8(self, x, x_zero, weights, scale, b, y_zero, stride=1, padding=0,
                                 pool=1, relu=False, x_scale=None):  # fmt: skip
        self.calls.append(f"int8_conv2d_pool_to_int8 pool={pool} floats={x_scale is not None}")
        if x_scale is not None:
            x = self._tier.quantize_int8(x, x_scale, x_zero)
        q = self._tier.int8_conv2d_to_int8(x, x_zero, weights.w, scale, b, y_zero, stride,
                                           padding, relu)  # fmt: skip
        return q if pool == 1 else self._tier.maxpool2d_int8(q, pool, pool)


def int8_model(name, tier, images):
    """Model `name` (seeded random weights) on `tier`, calibrated on `images` and quantized, each
    range stretched below 0 so that no zero point is -128: a ReLU left out changes codes."""
    model = build_model(name, (1, 28, 28), 10)
    model.build(tier, seed=5)
    model.eval()
    ranges = calibrate(model, images, "minmax")
    return quantize_model(model, {path: (low - (high - low) / 3, high)
                                  for path, (low, high) in ranges.items()})  # fmt: skip


FUSED_KINDS = {
    "lenet5": ["QuantizedLayer", "FusedReLU", "FusedMaxPool2d", "QuantizedLayer", "FusedReLU",
               "FusedMaxPool2d", "Flatten", "QuantizedLayer", "FusedReLU", "QuantizedLayer",
               "FusedReLU", "QuantizedLayer"],
    "fashion_cnn": ["QuantizedLayer", "FusedMaxPool2d", "FusedReLU", "QuantizedLayer",
                    "FusedMaxPool2d", "FusedReLU", "Flatten", "QuantizedLayer", "FusedReLU",
                    "QuantizedLayer"],
}  # fmt: skip
FORWARD_CALLS = {
    "lenet5": ["int8_conv2d_pool_to_int8 pool=2 floats=True",
               "int8_conv2d_pool_to_int8 pool=2 floats=False"] + ["int8_linear_packed"] * 3,
    "fashion_cnn": ["int8_conv2d_pool_to_int8 pool=2 floats=True",
                    "int8_conv2d_pool_to_int8 pool=2 floats=False"] + ["int8_linear_packed"] * 2,
}  # fmt: skip


@pytest.mark.parametrize("name", FUSED_KINDS)
def test_the_fused_model_computes_the_unfused_models_codes_and_logits(name):
    tier = load_tier(2)
    rng = np.random.default_rng(11)
    images = rng.standard_normal((8, 1, 28, 28)).astype(np.float32)
    images[0, 0, :3, :3] = np.nan  # NaN pixels take the zero point's code on both paths
    fused_tier = WithFusedOps(tier)
    fused, unfused = int8_model(name, fused_tier, images[1:]), int8_model(name, tier, images[1:])
    assert [type(layer).__name__ for layer in fused.net.layers] == FUSED_KINDS[name]
    layers = list(quantized_layers(fused).values())
    assert [layer.pool for layer in layers] == [2, 2] + [1] * (len(layers) - 2)
    assert fused_tier.calls == ["int8_pack_weights"] * len(layers)  # once, when quantized
    assert all(layer.packed is None for layer in quantized_layers(unfused).values())

    fused_tier.calls.clear()
    x = tier.from_numpy(images)
    found, want = fused.forward(x), unfused.forward(x)
    assert fused_tier.calls == FORWARD_CALLS[name]
    np.testing.assert_array_equal(tier.to_numpy(found), tier.to_numpy(want))
    assert not np.isnan(tier.to_numpy(found)).any()

    # the first conv's pooled codes are the unfused path's conv, ReLU and pool, in order
    codes = fused.net.layers[0].forward(x)
    y = x
    for layer in unfused.net.layers[:3]:
        y = layer.forward(y)
    np.testing.assert_array_equal(tier.to_numpy(codes), tier.to_numpy(y))


def test_a_pool_other_than_2_by_2_stays_a_pool_of_codes():
    """MaxPool2d(3) is not the fused kernel's: the conv writes its codes, the pool pools them."""
    from nn.layers import Conv2d, Flatten, Linear, MaxPool2d, ReLU, Sequential
    from nn.network import Model

    tier = WithFusedOps(load_tier(2))
    net = Sequential(Conv2d(1, 4, 3), ReLU(), MaxPool2d(3), Flatten(), Linear(4 * 8 * 8, 10))
    model = Model("pool3", net, (1, 28, 28), 10, "cross_entropy")
    model.build(tier, seed=3)
    model.eval()
    images = np.random.default_rng(2).standard_normal((4, 1, 28, 28)).astype(np.float32)
    quantized = quantize_model(model, calibrate(model, images, "minmax"))
    kinds = [type(layer).__name__ for layer in quantized.net.layers]
    assert kinds == ["QuantizedLayer", "FusedReLU", "CodesMaxPool2d", "Flatten", "QuantizedLayer"]
    assert quantized.net.layers[0].pool == 1


def test_a_quantized_model_is_fused_unless_asked_not_to_be():
    """quantize_model packs the weights once on a tier with the extras and fuses each convolution
    with its pooling; fused=False keeps the chain's kernels (bench.int8 times both)."""
    tier = WithFusedOps(load_tier(2))
    images = np.random.default_rng(6).standard_normal((4, 1, 28, 28)).astype(np.float32)
    kinds = {}
    for fused in (False, True):
        model = build_model("lenet5", (1, 28, 28), 10)
        model.build(tier, seed=5)
        model.eval()
        quantized = quantize_model(model, calibrate(model, images, "minmax"), fused=fused)
        assert all(layer.packed is not None for layer in quantized_layers(quantized).values())
        kinds[fused] = [type(layer).__name__ for layer in quantized.net.layers]
    assert "CodesMaxPool2d" in kinds[False] and kinds[True] == FUSED_KINDS["lenet5"]


def test_without_the_fused_ops_nothing_is_packed_or_fused():
    tier = load_tier(2)
    assert not any(hasattr(tier, op) for op in FUSED_OPS)
    images = np.random.default_rng(4).standard_normal((4, 1, 28, 28)).astype(np.float32)
    model = int8_model("lenet5", tier, images)
    assert all(isinstance(layer, QuantizedLayer) and layer.packed is None and layer.pool == 1
               for layer in quantized_layers(model).values())  # fmt: skip


ADAPTER = NumpyArrays()
X = np.zeros((2, 3, 8, 8), np.int8)
W = np.zeros((4, 3, 3, 3), np.int8)
M = np.ones(4, np.float32)
GOOD = {"x": X, "x_zero": 0, "w": W, "scale": M, "b": M, "y_zero": 0, "stride": 1,
        "padding": 0, "pool": 2, "relu": True, "x_scale": None}  # fmt: skip


@pytest.mark.parametrize(("change", "error", "message"), [
    ({"pool": 3}, ValueError, "pool must be an int in [1, 2], got 3"),
    ({"x": np.zeros((1, 3, 3, 3), np.int8)}, ValueError,
     "pool must be at most the output's height and width, got pool 2 over 1x1"),
    ({"x": X.astype(np.float32)}, TypeError, "x must be an int8 array, got float32"),
    ({"x_scale": 0.5}, TypeError, "x must be a float array, got int8"),
    ({"x": X.astype(np.float32), "x_scale": 0.0}, ValueError, "x_scale must be a finite number"),
    ({"w": np.zeros((4, 2, 3, 3), np.int8)}, ValueError, "w must have shape [M, C=3, R, S]"),
    ({"y_zero": 200}, ValueError, "y_zero must be an int in [-128, 127], got 200"),
    ({"relu": 2}, TypeError, "relu must be True or False, got 2"),
])  # fmt: skip
def test_the_fused_convolutions_bad_arguments_are_named(change, error, message):
    args = GOOD | change
    with pytest.raises(error, match="^int8_conv2d_pool_to_int8: ") as raised:
        quantized_checks.int8_conv2d_pool_to_int8(ADAPTER, *args.values())
    assert message in str(raised.value)


def test_the_fused_convolutions_good_arguments_pass():
    checked = quantized_checks.int8_conv2d_pool_to_int8(ADAPTER, *GOOD.values())
    assert checked[-2:] == (6, 6)
    floats = GOOD | {"x": X.astype(np.float32), "x_scale": 0.5}
    assert quantized_checks.int8_conv2d_pool_to_int8(ADAPTER, *floats.values())[7] == 0.5


def test_packing_refuses_weights_that_are_not_int8():
    with pytest.raises(TypeError, match="^int8_pack_weights: w must be an int8 array"):
        quantized_checks.int8_pack_weights(ADAPTER, np.zeros((4, 9), np.float32))
    with pytest.raises(ValueError, match="^int8_pack_weights: w must have shape"):
        quantized_checks.int8_pack_weights(ADAPTER, np.zeros((4, 9, 2), np.int8))


def test_bench_int8s_layer_errors_compare_a_fused_layers_pooled_codes():
    """bench.int8 compares each layer's output with the float model's: a conv whose kernel pools
    its codes against the float conv's output after the ReLU and the same pooling."""
    int8_bench = pytest.importorskip("bench.int8", reason="bench.int8 needs onnxruntime")
    tier = load_tier(2)
    images = np.random.default_rng(6).standard_normal((8, 1, 28, 28)).astype(np.float32)
    float_model = build_model("lenet5", (1, 28, 28), 10)
    float_model.build(tier, seed=5)
    float_model.eval()
    fused, unfused = (int8_model("lenet5", on, images) for on in (WithFusedOps(tier), tier))
    errors = int8_bench.layer_errors(float_model, fused, images)
    assert errors.keys() == int8_bench.layer_errors(float_model, unfused, images).keys()
    assert max(errors.values()) < 0.1


class WithoutFusedOps:
    """A tier with FUSED_OPS hidden: its int8 models run the unfused chained path."""

    def __init__(self, tier):
        self._tier = tier

    def __getattr__(self, name):
        if name in FUSED_OPS:
            raise AttributeError(name)
        return getattr(self._tier, name)


@pytest.mark.parametrize("batch", [1, 2, 37, 256])
@pytest.mark.parametrize("name", FUSED_KINDS)
def test_on_a_gpu_the_nvcc_fused_kernels_give_the_unfused_codes_and_logits(name, batch):
    """The real kernels (not their emulation, nor compositions): the nvcc variant's fused int8
    model against the same variant's unfused one, on batches of 1, 2, 37 (no whole tile) and 256
    images, the first with NaN pixels."""
    import stage4_cuda.nvcc_impl as nvcc

    available, why = nvcc.available()
    if not available:
        pytest.skip(why)
    tier = load_tier(4, None, "nvcc")
    images = np.random.default_rng(12).standard_normal((256, 1, 28, 28)).astype(np.float32)
    images[0, 0, 10:14, 5:9] = np.nan
    fused, unfused = (int8_model(name, on, images[1:34]) for on in (tier, WithoutFusedOps(tier)))
    assert [layer.pool for layer in quantized_layers(fused).values()][:2] == [2, 2]
    x = tier.from_numpy(images[:batch])
    np.testing.assert_array_equal(tier.to_numpy(fused.forward(x)),
                                  tier.to_numpy(unfused.forward(x)))  # fmt: skip
    codes, y = fused.net.layers[0].forward(x), x
    for layer in unfused.net.layers:  # the first convolution's layers, through its pooling
        y = layer.forward(y)
        if isinstance(layer, (MaxPool2d, MaxPoolReLU)):
            break
    np.testing.assert_array_equal(tier.to_numpy(codes), tier.to_numpy(y))

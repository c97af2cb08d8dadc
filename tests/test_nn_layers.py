"""Gradient checks of nn's layers through real tiers: each layer's backward against central finite
differences of its forward, for the input and every parameter.

Stage 1 computes in float64 (tight check); stage 2 in float32 (a larger step and tolerance). The
inputs keep away from the kinks of ReLU and max-pooling by more than the step, so a finite
difference never straddles one.
"""

import zlib

import numpy as np
import pytest
from conftest import load_tier

from nn.layers import (
    AvgPool2d,
    BatchNorm,
    Conv2d,
    Dropout,
    Flatten,
    LeakyReLU,
    Linear,
    MaxPool2d,
    ReLU,
    Residual,
    Sequential,
    Sigmoid,
    Tanh,
)
from nn.layers.fusion import MaxPoolReLU, fuse_pool_relu
from nn.models import build_model
from nn.seeds import derive_seed

pytestmark = pytest.mark.week09  # week 9 teaches nn/: layers, models, the trainer

# tier name -> (finite-difference step, relative tolerance, absolute tolerance)
TIERS = {"python": (1e-6, 1e-5, 1e-7), "numpy": (1e-2, 2e-2, 2e-3)}
CHECKED_ELEMENTS = 12  # random elements per array (all of them when the array is smaller)


def away_from_zero(rng, shape):
    """Random values with |x| in [0.1, 1.1): no ReLU kink within a step of 1e-2."""
    return rng.choice([-1.0, 1.0], size=shape) * (0.1 + rng.random(shape))


def distinct_values(rng, shape):
    """A random arrangement of values 0.05 apart: no tie in any max-pool window."""
    count = int(np.prod(shape))
    return (rng.permutation(count) * 0.05 - count * 0.025).reshape(shape)


CASES = {
    "linear": (lambda: Linear(5, 3), (4, 5), None),
    "conv_stride_padding": (lambda: Conv2d(2, 3, 3, stride=2, padding=1), (2, 2, 6, 5), None),
    "conv_plain": (lambda: Conv2d(1, 2, 2), (2, 1, 4, 4), None),
    "maxpool": (lambda: MaxPool2d(2), (2, 2, 4, 6), distinct_values),
    "maxpool_overlapping": (lambda: MaxPool2d(3, stride=2), (1, 2, 7, 7), distinct_values),
    "avgpool": (lambda: AvgPool2d(2), (2, 3, 4, 4), None),
    "batchnorm_dense": (lambda: BatchNorm(3), (5, 3), None),
    "batchnorm_spatial": (lambda: BatchNorm(2), (3, 2, 3, 3), None),
    "relu": (lambda: ReLU(), (3, 4), away_from_zero),
    "leaky_relu": (lambda: LeakyReLU(0.1), (3, 4), away_from_zero),
    "sigmoid": (lambda: Sigmoid(), (3, 4), None),
    "tanh": (lambda: Tanh(), (3, 4), None),
    "dropout": (lambda: Dropout(0.4), (4, 6), None),
    "flatten": (lambda: Flatten(), (2, 2, 3, 3), None),
    "residual": (
        lambda: Residual(Sequential(Conv2d(2, 2, 3, padding=1), Tanh(), Conv2d(2, 2, 1))),
        (2, 2, 4, 4),
        None,
    ),
    "residual_projection": (
        lambda: Residual(Sequential(Linear(4, 3), Tanh()), shortcut=Linear(4, 3)),
        (3, 4),
        None,
    ),
    "sequential": (lambda: Sequential(Linear(6, 4), Sigmoid(), Linear(4, 2)), (3, 6), None),
}


def forward_value(tier, layer, x, upstream):
    """sum(forward(x) * upstream) in float64: a scalar whose gradient w.r.t. the output is
    `upstream`. Dropout's call counter is reset so every evaluation draws the same mask."""
    if isinstance(layer, Dropout):
        layer.calls = 0
    out = np.asarray(tier.to_numpy(layer.forward(tier.from_numpy(x))), dtype=np.float64)
    return float((out * upstream).sum())


def numeric_gradient(evaluate, array, indices, step):
    """Central differences of `evaluate()` w.r.t. array[index] for each flat index (in place)."""
    flat = array.reshape(-1)
    gradient = []
    for index in indices:
        original = flat[index]
        flat[index] = original + step
        plus = evaluate()
        flat[index] = original - step
        minus = evaluate()
        flat[index] = original
        gradient.append((plus - minus) / (2 * step))
    return np.array(gradient)


@pytest.mark.parametrize("tier_name", list(TIERS))
@pytest.mark.parametrize("case", list(CASES))
def test_layer_backward_matches_finite_differences(tier_name, case):
    check_layer_gradients(tier_name, case, *CASES[case])


def check_layer_gradients(tier_name, case, make_layer, x_shape, make_input):
    """The layer `make_layer()` builds, on tier `tier_name`, at input shape `x_shape` (drawn by
    `make_input`, or normal): its dx and every parameter's gradient against finite differences."""
    tier = load_tier(tier_name)
    step, rtol, atol = TIERS[tier_name]
    rng = np.random.default_rng(zlib.crc32(case.encode()))
    layer = make_layer()
    seeds = (derive_seed(7, index) for index in range(100))
    out_shape = layer.build(tier, x_shape[1:], seeds)
    x = (make_input or (lambda r, s: r.standard_normal(s)))(rng, x_shape)
    upstream = rng.standard_normal((x_shape[0], *out_shape))

    forward_value(tier, layer, x, upstream)
    analytic_dx = np.asarray(tier.to_numpy(layer.backward(tier.from_numpy(upstream))))
    assert analytic_dx.shape == x_shape

    # the input
    indices = rng.choice(x.size, min(x.size, CHECKED_ELEMENTS), replace=False)
    numeric = numeric_gradient(lambda: forward_value(tier, layer, x, upstream), x, indices, step)
    np.testing.assert_allclose(
        analytic_dx.reshape(-1)[indices], numeric, rtol=rtol, atol=atol, err_msg=f"{case}: dx"
    )
    # each parameter: perturb a NumPy copy and put it back into the layer
    for name, param in layer.parameters().items():
        analytic = np.asarray(tier.to_numpy(param.grad)).reshape(-1)
        values = np.asarray(tier.to_numpy(param.value), dtype=np.float64)

        def evaluate(param=param, values=values):
            param.value = tier.from_numpy(values)
            return forward_value(tier, layer, x, upstream)

        indices = rng.choice(values.size, min(values.size, CHECKED_ELEMENTS), replace=False)
        numeric = numeric_gradient(evaluate, values, indices, step)
        param.value = tier.from_numpy(values)  # unperturbed again for the next parameter
        np.testing.assert_allclose(
            analytic[indices], numeric, rtol=rtol, atol=atol, err_msg=f"{case}: d{name}"
        )


def test_batchnorm_eval_uses_running_statistics():
    tier = load_tier("numpy")
    layer = BatchNorm(3, momentum=0.5)
    layer.build(tier, (3, 2, 2), iter([]))
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((8, 3, 2, 2)) * 2 + 5).astype(np.float32)
    layer.forward(tier.from_numpy(x))  # one training step moves the running stats halfway
    running_mean = tier.to_numpy(layer.running_mean)
    np.testing.assert_allclose(running_mean, 0.5 * x.mean(axis=(0, 2, 3)), rtol=1e-5)
    layer.eval()
    y = tier.to_numpy(layer.forward(tier.from_numpy(x)))
    expected = (x - running_mean[None, :, None, None]) / np.sqrt(
        tier.to_numpy(layer.running_var)[None, :, None, None] + 1e-5
    )
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(tier.to_numpy(layer.running_mean), running_mean)


def test_dropout_draws_a_new_mask_each_call_and_none_in_eval():
    tier = load_tier("numpy")
    layer = Dropout(0.5)
    layer.build(tier, (200,), iter([derive_seed(3, 0)]))
    x = tier.from_numpy(np.ones((2, 200), dtype=np.float32))
    first, second = (tier.to_numpy(layer.forward(x)) for _ in range(2))
    assert set(np.unique(first)) == {0.0, 2.0}
    assert not np.array_equal(first, second)
    layer.eval()
    np.testing.assert_array_equal(tier.to_numpy(layer.forward(x)), np.ones((2, 200)))


@pytest.mark.parametrize(
    ("layer", "in_shape", "message"),
    [
        (Linear(5, 3), (4,), r"Linear\(5->3\) expects inputs of shape \(5,\)"),
        (Conv2d(3, 8, 3), (1, 28, 28), r"expects images of shape \(3, H, W\)"),
        (Conv2d(1, 8, 5), (1, 4, 4), "smaller than the kernel"),
        (MaxPool2d(2), (10,), r"expects images \(C, H, W\)"),
        (BatchNorm(4), (3, 5, 5), r"BatchNorm\(4\) expects"),
        (Residual(Sequential(Linear(4, 3))), (4,), "the body gives"),
    ],
)
def test_build_rejects_shapes_that_do_not_fit(layer, in_shape, message):
    tier = load_tier("numpy")
    with pytest.raises(ValueError, match=message):
        layer.build(tier, in_shape, (derive_seed(0, i) for i in range(10)))


def test_cross_entropy_takes_the_tiers_fused_loss_and_gradient_where_there_is_one(rng):
    from nn.losses import CrossEntropy

    class Fused:  # stage 4's nvcc variant: cross_entropy_loss_and_grad, one pass over the logits
        def cross_entropy_loss_and_grad(self, logits, targets):
            return "the loss", f"the gradient of {logits} at {targets}"

    received = CrossEntropy().value_and_grad(Fused(), "logits", "labels")
    assert received == ("the loss", "the gradient of logits at labels")
    logits, labels = rng.standard_normal((4, 3)).astype(np.float32), np.array([0, 2, 1, 2])
    numpy_tier = load_tier("numpy")  # no fused op: the loss and its backward
    loss, grad = CrossEntropy().value_and_grad(numpy_tier, logits, labels)
    np.testing.assert_allclose(grad, numpy_tier.cross_entropy_loss_backward(logits, labels))
    assert float(loss) == pytest.approx(float(numpy_tier.cross_entropy_loss(logits, labels)))


class PoolReluFused:
    """The numpy tier with stage 4's fused pooling + ReLU, written as the two ops it replaces (the
    nvcc variant's kernels are checked against those on a GPU, tests/test_stage4_nvcc.py)."""

    def __init__(self):
        self.numpy = load_tier("numpy")
        self.fused_calls = 0

    def __getattr__(self, name):
        return getattr(self.numpy, name)

    def maxpool2d_relu_forward(self, x, k, stride):
        self.fused_calls += 1
        y, argmax = self.numpy.maxpool2d_forward(x, k, stride)
        return self.numpy.relu(y), argmax

    def maxpool2d_relu_backward(self, dy, argmax, relu_y, x_shape, k, stride):
        self.fused_calls += 1
        dy = self.numpy.relu_backward(relu_y, dy)
        return self.numpy.maxpool2d_backward(dy, argmax, x_shape, k, stride)


def pool_relu_net():
    """Conv, MaxPool2d, ReLU (fused), MaxPool2d, LeakyReLU (not a ReLU: not fused)."""
    return Sequential(Conv2d(2, 3, 3), MaxPool2d(2), ReLU(), MaxPool2d(2, stride=1),
                      LeakyReLU(0.1))  # fmt: skip


def test_a_maxpool_followed_by_a_relu_runs_fused_where_the_tier_can(rng):
    x = rng.standard_normal((2, 2, 10, 10)).astype(np.float32)
    upstream = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    fused_tier = PoolReluFused()
    results = {}
    for name, tier in (("fused", fused_tier), ("plain", load_tier("numpy"))):
        net = pool_relu_net()
        fuse_pool_relu(net, tier)
        net.build(tier, (2, 10, 10), (derive_seed(0, i) for i in range(10)))
        results[name] = (net.forward(x), net.backward(upstream),
                         net.layers[0].params["weight"].grad)  # fmt: skip
        kinds = [type(layer) for layer in net.children().values()]
        if name == "fused":  # the pair became one layer, named as the pool; the rest unchanged
            assert list(net.children()) == ["0", "1", "3", "4"]
            assert kinds == [Conv2d, MaxPoolReLU, MaxPool2d, LeakyReLU]
        else:
            assert kinds == [Conv2d, MaxPool2d, ReLU, MaxPool2d, LeakyReLU]
    assert fused_tier.fused_calls == 2  # the forward and the backward, once each
    for fused, plain in zip(results["fused"], results["plain"], strict=True):
        np.testing.assert_array_equal(fused, plain)


def test_a_model_is_fused_when_built_and_keeps_its_parameter_names():
    # The Fashion-MNIST CNN's pairs (MaxPool2d, ReLU) fuse: the layers after them keep their
    # names, so a checkpoint written on one tier loads on any other.
    plain = build_model("fashion_cnn", (1, 28, 28), 10).build(load_tier("numpy"), seed=0)
    fused = build_model("fashion_cnn", (1, 28, 28), 10).build(PoolReluFused(), seed=0)
    assert list(fused.parameters()) == list(plain.parameters())
    assert sum(type(layer) is MaxPoolReLU for layer in fused.net.layers) == 2
    assert not any(type(layer) is MaxPoolReLU for layer in plain.net.layers)

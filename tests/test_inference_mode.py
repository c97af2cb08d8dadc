"""Inference mode (nn/inference.py) gives the evaluation-mode model's logits, on every tier.

A small network holding every rule of the rewrite (BatchNorm after a Conv2d, after a Linear and
alone; ReLU then MaxPool2d, MaxPool2d then ReLU, a ReLU alone, a pool whose stride is not its
window; a residual block; Dropout) gets random weights and random batchnorm statistics (running
means away from 0, variances away from 1, eps of 0.1 and 1e-3: a fold that forgets any of them
is far off), and its inference model must agree with it within float tolerance. Then LeNet-5 and
the Fashion CNN take the fused op for every convolution, and the steps keep nothing.
"""

import numpy as np
import pytest

import nn.inference
from nn.inference import ConvStep, prepare_for_inference
from nn.layers import (
    BatchNorm,
    Conv2d,
    Dropout,
    Flatten,
    Linear,
    MaxPool2d,
    ReLU,
    Residual,
    Sequential,
)
from nn.models import build_model
from nn.network import Model

INPUT = (2, 11, 10)  # odd sizes: the pools leave rows and columns over


def every_rule():
    """A network using every rule of nn/inference.py once."""
    net = Sequential(
        BatchNorm(2, eps=0.1),  # alone: nothing before it to fold into
        Conv2d(2, 5, 3, padding=1),
        BatchNorm(5, eps=0.1),
        ReLU(),
        MaxPool2d(2),  # conv + BN + ReLU + pool: one fused step
        Residual(
            Sequential(
                Conv2d(5, 5, 3, padding=1),
                BatchNorm(5, eps=1e-3),
                ReLU(),
                Conv2d(5, 5, 1),
                BatchNorm(5),
            )
        ),  # fmt: skip
        Conv2d(5, 4, 2),
        MaxPool2d(2),
        ReLU(),  # pool before ReLU: the same fused step
        Conv2d(4, 3, 1),
        ReLU(),
        MaxPool2d(2, stride=1),  # overlapping windows: not the fused op's pooling
        Flatten(),
        Linear(3, 6),
        BatchNorm(6, eps=0.1),
        ReLU(),
        Dropout(0.5),
        Linear(6, 3),
    )
    return Model("every_rule", net, INPUT, 3, "cross_entropy")


def randomize(model, rng):
    """Random weights, and batchnorm statistics far from their initial 0, 1, 1, 0."""
    tier = model.tier
    for name, param in model.parameters().items():
        shape = np.shape(tier.to_numpy(param.value))
        if name.endswith("gamma"):
            values = rng.uniform(0.5, 2.0, shape)
        else:
            values = rng.normal(0, 0.5, shape)
        param.value = tier.from_numpy(values.astype(np.float32))
    for name in model.buffers():
        shape = np.shape(tier.to_numpy(model.buffers()[name]))
        low, high = (0.2, 3.0) if name.endswith("running_var") else (-1.0, 1.0)
        model.load_buffer(name, tier.from_numpy(rng.uniform(low, high, shape).astype(np.float32)))


def largest_difference(model, x, evaluated=None):
    """max |inference - evaluation| over the logits, and the largest |logit|. `evaluated` is the
    model whose evaluation-mode logits are expected (default: `model` itself)."""
    evaluated = evaluated or model
    evaluated.eval()
    expected = evaluated.tier.to_numpy(evaluated.forward(evaluated.tier.from_numpy(x)))
    inference = prepare_for_inference(model)
    received = model.tier.to_numpy(inference.forward(model.tier.from_numpy(x)))
    expected, received = (np.asarray(a, np.float64) for a in (expected, received))
    assert received.shape == expected.shape
    return np.max(np.abs(received - expected)), np.max(np.abs(expected))


def built_every_rule(tier, batch=None):
    """The model with random weights and statistics, and a batch for it (the same for the same
    `batch` on every tier): of one image on numba's CUDA simulator (a Python thread per GPU
    thread), else of two."""
    model = every_rule().build(tier, seed=0)
    rng = np.random.default_rng(3)
    randomize(model, rng)
    batch = batch or (1 if getattr(tier, "SIMULATOR", False) else 2)
    return model, rng.normal(0, 1, (batch, *INPUT)).astype(np.float32)


def test_folded_equals_unfolded_on_every_tier(tier):
    model, x = built_every_rule(tier)
    evaluated = None
    if getattr(tier, "SIMULATOR", False):
        # the same weights and batch on NumPy: the simulator's training-path GEMM takes seconds
        from conftest import load_tier

        evaluated = built_every_rule(load_tier("numpy"), batch=len(x))[0]
    difference, scale = largest_difference(model, x, evaluated)
    # float32 sums of at most 45 terms, rounded in a different order once folded
    assert difference <= 1e-4 * max(scale, 1.0), (difference, scale)
    assert not np.isnan(difference)


def test_a_fold_without_eps_is_caught(monkeypatch):
    """The check above fails on a planted fold that leaves eps out of the root."""
    from conftest import load_tier

    def fold_without_eps(weight, bias, gamma, beta, mean, var, eps):
        return fold(weight, bias, gamma, beta, mean, var, 0.0)

    fold = nn.inference.fold_batchnorm
    monkeypatch.setattr(nn.inference, "fold_batchnorm", fold_without_eps)
    model, x = built_every_rule(load_tier("numpy"))
    difference, scale = largest_difference(model, x)
    assert difference > 1e-2 * max(scale, 1.0), (difference, scale)


def test_the_steps_of_the_rules():
    from conftest import load_tier

    model, _ = built_every_rule(load_tier("numpy"))
    lines = prepare_for_inference(model).describe().splitlines()
    assert lines == [
        "0. batchnorm_forward",
        "1. conv2d_bias_relu_pool, pool=2 (BatchNorm folded in)",
        "2. residual(body: conv2d_bias_relu_pool (BatchNorm folded in), conv2d_forward (BatchNorm"
        " folded in); shortcut: identity)",
        "3. conv2d_bias_relu_pool, pool=2",
        "4. conv2d_bias_relu_pool",
        "5. maxpool2d_forward",
        "6. flatten",
        "7. linear_forward (BatchNorm folded in)",
        "8. relu",
        "9. linear_forward",
    ]


@pytest.mark.parametrize("name", ["lenet5", "fashion_cnn"])
def test_the_curriculum_models_fuse_every_convolution_and_keep_nothing(name):
    from conftest import load_tier

    tier = load_tier("numpy")
    model = build_model(name, (1, 28, 28), 10).build(tier, seed=1)
    x = np.random.default_rng(2).random((3, 1, 28, 28)).astype(np.float32)
    difference, scale = largest_difference(model, x)
    assert difference <= 1e-4 * max(scale, 1.0)
    inference = prepare_for_inference(model)
    convs = [step for step in inference.steps if isinstance(step, ConvStep)]
    assert len(convs) == 2 and all(step.fused and step.pool == 2 for step in convs)
    before = [dict(vars(step)) for step in inference.steps]
    inference.forward(tier.from_numpy(x))
    assert [dict(vars(step)) for step in inference.steps] == before  # no input, argmax, cache


class WithLinearRelu:
    """A tier with the extra linear_relu_forward (as stage 4's nvcc variant has it): relu of
    linear_forward, or NotImplementedError as a learner's stub; every other name is `tier`'s."""

    def __init__(self, tier, implemented):
        self.tier, self.implemented, self.calls = tier, implemented, 0

    def __getattr__(self, name):
        return getattr(self.tier, name)

    def linear_relu_forward(self, x, w, b):
        self.calls += 1
        if not self.implemented:
            raise NotImplementedError("week 15, task linear_forward: not implemented yet")
        return self.tier.relu(self.tier.linear_forward(x, w, b))


@pytest.mark.parametrize("implemented", [True, False], ids=["extra", "stub"])
def test_a_tier_with_linear_relu_forward_takes_the_relu_after_a_linear_layer(implemented):
    """The Linear, its BatchNorm and its ReLU as one step of the extra (its stub: linear_forward
    then relu), the same logits; the last Linear, with no ReLU, stays linear_forward."""
    from conftest import load_tier

    tier = WithLinearRelu(load_tier("numpy"), implemented)
    model, x = built_every_rule(tier)
    difference, scale = largest_difference(model, x)
    assert difference <= 1e-4 * max(scale, 1.0), (difference, scale)
    lines = prepare_for_inference(model).describe().splitlines()
    assert lines[7:] == ["7. linear_relu_forward (BatchNorm folded in)", "8. linear_forward"]
    assert tier.calls == 1


def test_a_model_not_built_is_refused():
    with pytest.raises(ValueError, match="must be built"):
        prepare_for_inference(every_rule())

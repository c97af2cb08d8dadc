"""Training parity: every training step of every model on stage 3 (C) is stage 2's (NumPy).

A free-running trajectory of a float32 network is chaotic: any other summation order (another SIMD
width, FMA or not, another split between threads) changes the last bits of a step, and a few dozen
steps can grow those bits into a different run. So the steps are teacher-forced: before each step,
stage 3's weights, optimizer state and batchnorm statistics are copied from stage 2's, both tiers
take the same batch of fresh random inputs and labels, and the loss, every gradient and the
batchnorm statistics must agree. Max-pooling's choices are teacher-forced as well: where two
elements of a window are equal to rounding, the tiers may pick different ones (a discrete choice,
not a rounding), so each choice stage 3 makes differently must be such a near-tie, and stage 3's
backward then routes the gradient as stage 2's does. The optimizer step is teacher-forced too:
stage 3 steps from stage 2's gradients, and the new weights and optimizer state must agree. Stage 2
then goes on along its own trajectory, so the steps cover a real training run (Adam's bias
correction changes with the step count), with momentum SGD and with Adam, for every model.

Tolerances are the grader's (grader/tolerance.py, `tolerance`): the float32-against-float32 base,
rtol widened by sqrt(n) for a sum of n terms, for each sum a value passes through on its way
(every layer forward, the loss, every layer backward), added up as the grader adds tolerances. The
grader's atol grows like n for O(1) terms; a sum of n terms of random sign is sqrt(n) times larger
than its terms, so here the terms' size is the largest expected value over sqrt(n), and atol is
base atol x sqrt(n) x that value. A layer's gradients are sums of the same upstream gradients (dw
weighs them by the layer's inputs, O(1) here), so the largest of the layer's gradients sets the
scale of all of them: a gradient that is zero in exact arithmetic (a conv bias before batchnorm)
is a residue of cancellation, allowed that layer's atol. An optimizer step sums nothing: the base
tolerance.

A short free-running check stays where a run is stable (small models, small steps): there an error
of one step is not amplified by the next, so after t steps the losses agree to t times one step's
tolerance.
"""

import math

import numpy as np
import pytest

import stage2_numpy as s2
import stage3_c as s3
from grader.tolerance import BASE_TOLERANCE
from nn.layers import AvgPool2d, BatchNorm, Conv2d, Linear, MaxPool2d, Sequential
from nn.models import MODELS, build_model
from nn.optimizers import make_optimizer

pytestmark = pytest.mark.skipif(not s3.available()[0], reason=s3.available()[1])

BATCH = 8
STEPS = 6  # teacher-forced steps: Adam's bias correction is at its strongest in the first ones
FREE_STEPS = 20
OPTIMIZERS = {  # name: (learning rate, options), as the recipes use them
    "momentum": (1e-2, {"momentum": 0.9}),
    "adam": (1e-3, {}),
}
DATA = {  # one example's shape, classes
    "perceptron": ((2,), 2),
    "xor": ((2,), 2),
    "mlp": ((1, 28, 28), 10),
    "lenet5": ((1, 28, 28), 10),
    "fashion_cnn": ((1, 28, 28), 10),
    "resnet_mini": ((1, 28, 28), 10),
    "tiny_imagenet_cnn": ((3, 64, 64), 200),
    "vit": ((1, 28, 28), 10),
}
STABLE = ["perceptron", "xor", "mlp"]  # free-running runs that float32 rounding does not part
BASE = BASE_TOLERANCE[(32, 32)]


class Trainee:
    """A model of DATA built on `tier` from `seed`, with its optimizer and its own batches."""

    def __init__(self, tier, name, optimizer, seed=0):
        shape, self.classes = DATA[name]
        self.tier = tier
        self.model = build_model(name, shape, self.classes).build(tier, seed)
        self.model.train()
        self.lr, options = OPTIMIZERS[optimizer]
        self.optimizer = make_optimizer(optimizer, tier, self.model.parameters(), **options)
        self.rng = np.random.default_rng(seed)
        self.pools = [layer for layer in layers_of(self.model.net) if isinstance(layer, MaxPool2d)]
        for pool in self.pools:
            pool.forward = keeping_input(pool, pool.forward)

    def batch(self):
        """The next batch of random images and labels, as NumPy arrays."""
        images = self.rng.standard_normal((BATCH, *self.model.input_shape)).astype(np.float32)
        return images, self.model.loss.targets(self.rng.integers(0, self.classes, BATCH))

    def forward_backward(self, images, targets, choices_from=None):
        """The batch's loss; the gradients land in the parameters' .grad. With `choices_from` (a
        Trainee that has just run forward on the same batch), take its max-pooling choices."""
        tier = self.tier
        logits = self.model.forward(tier.from_numpy(images))
        loss, dlogits = self.model.loss.value_and_grad(tier, logits, tier.from_numpy(targets))
        if choices_from is not None:
            self.take_choices_from(choices_from)
        self.model.backward(dlogits)
        return loss

    def take_choices_from(self, source):
        """Check that each max-pooling choice that differs from `source`'s picks a value equal to
        source's choice within the step tolerance (a near-tie), then take `source`'s choices."""
        rtol, atol_share = step_tolerance(self.model)
        for pool, source_pool in zip(self.pools, source.pools, strict=True):
            x = source.tier.to_numpy(source_pool.seen_input)
            planes = x.reshape(*x.shape[:2], -1)  # argmax indexes each [H, W] plane
            expected = source.tier.to_numpy(source_pool.argmax)
            chosen = self.tier.to_numpy(pool.argmax)
            assert_close(
                "max-pooling: the value chosen",
                np.take_along_axis(planes, chosen.reshape(*chosen.shape[:2], -1), axis=2),
                np.take_along_axis(planes, expected.reshape(*expected.shape[:2], -1), axis=2),
                rtol, atol_share * largest(x),
            )  # fmt: skip
            pool.argmax = self.tier.from_numpy(expected)

    def numpy(self, arrays):
        return {name: self.tier.to_numpy(value) for name, value in arrays.items()}

    def weights(self):
        return {name: param.value for name, param in self.model.parameters().items()}

    def gradients(self):
        return {name: param.grad for name, param in self.model.parameters().items()}

    def start_from(self, source):
        """Take `source`'s weights, optimizer state and buffers (stage 2's, copied)."""
        for name, param in self.model.parameters().items():
            np.copyto(param.value, source.tier.to_numpy(source.model.parameters()[name].value))
        state = source.numpy(source.optimizer.state())
        self.optimizer.load_state(
            {key: self.tier.from_numpy(value) for key, value in state.items()},
            source.optimizer.steps,
        )
        for name, value in source.model.buffers().items():
            self.model.load_buffer(name, self.tier.from_numpy(source.tier.to_numpy(value)))


def layers_of(layer):
    """`layer` and every layer inside it, depth first."""
    yield layer
    for child in layer.children().values():
        yield from layers_of(child)


def keeping_input(layer, forward):
    """`forward`, keeping its input as layer.seen_input (to look at the values it chose from)."""

    def forward_keeping_input(x):
        layer.seen_input = x
        return forward(x)

    return forward_keeping_input


def longest_sums(layer, in_shape):
    """The length of the longest sum behind one output element of each op that `layer` runs on a
    batch of BATCH examples of `in_shape`, forward then backward (the grader's `accum` of the op):
    a layer's backward sums over its outputs for dx and over the batch (and positions) for dw."""
    if isinstance(layer, Linear):
        return [layer.in_features, max(layer.out_features, BATCH)]
    if isinstance(layer, Conv2d):
        window = layer.kernel_size**2
        positions = math.prod(layer.output_shape[1:])
        return [layer.in_channels * window, max(layer.out_channels * window, BATCH * positions)]
    if isinstance(layer, BatchNorm):
        return [BATCH * math.prod(in_shape[1:])] * 2  # the batch statistics and dgamma, dbeta
    if isinstance(layer, (MaxPool2d, AvgPool2d)):
        return [layer.kernel_size**2] * 2
    sums, shape = [], in_shape
    for child in layer.children().values():  # Residual: body (and shortcut) on the same input
        sums += longest_sums(child, shape)
        if isinstance(layer, Sequential):
            shape = child.output_shape
    return sums


def step_tolerance(model):
    """(rtol, atol relative to the largest expected value) for the loss and the gradients of one
    step of `model`: one widened base tolerance per sum on the way, added up."""
    sums = [*longest_sums(model.net, model.input_shape), model.num_classes, BATCH]  # the loss's
    widening = sum(math.sqrt(n) for n in sums)
    return BASE.rtol * widening, BASE.atol * widening


def assert_close(what, received, expected, rtol, atol):
    """|received - expected| <= atol + rtol * |expected| elementwise; NaN never passes. The
    message names the worst element."""
    received = np.asarray(received, np.float64)
    expected = np.asarray(expected, np.float64)
    assert received.shape == expected.shape, f"{what}: shape {received.shape}, not {expected.shape}"
    error = np.abs(received - expected)
    allowed = atol + rtol * np.abs(expected)
    bad = ~(error <= allowed)
    if bad.any():
        worst = np.unravel_index(np.argmax(np.where(bad, error - allowed, -np.inf)), error.shape)
        pytest.fail(
            f"{what}: {bad.sum()} of {bad.size} elements differ; worst at {worst}: "
            f"{received[worst]!r} against {expected[worst]!r} (rtol {rtol:.2g}, atol {atol:.2g})"
        )


def largest(array):
    return float(np.max(np.abs(array), initial=0.0))


def assert_all_close(what, received, expected, rtol, atol_share, by_layer=False):
    """assert_close on each array of `expected` {dotted name: array}, with atol = atol_share times
    its largest value, or with `by_layer` the largest of its layer's arrays (same name up to the
    last dot: the gradients of one layer)."""
    assert received.keys() == expected.keys(), what
    group = (lambda name: name.rpartition(".")[0]) if by_layer else (lambda name: name)
    scale = {}
    for name, value in expected.items():
        scale[group(name)] = max(scale.get(group(name), 0.0), largest(value))
    for name in expected:
        atol = atol_share * scale[group(name)]
        assert_close(f"{what} {name}", received[name], expected[name], rtol, atol)


def models(slow=("tiny_imagenet_cnn",)):
    return [pytest.param(name, marks=pytest.mark.slow) if name in slow else name for name in DATA]


def test_every_model_is_covered():
    assert set(DATA) == set(MODELS)


@pytest.mark.parametrize("optimizer", list(OPTIMIZERS))
@pytest.mark.parametrize("name", models())
def test_every_step_matches_stage2(name, optimizer):
    reference = Trainee(s2, name, optimizer)
    graded = Trainee(s3, name, optimizer)
    rtol, atol_share = step_tolerance(reference.model)
    for step in range(STEPS):
        at = f"{name}, {optimizer}, step {step}:"
        graded.start_from(reference)
        images, targets = reference.batch()
        expected_loss = reference.forward_backward(images, targets)
        loss = graded.forward_backward(images, targets, choices_from=reference)
        assert_close(f"{at} loss", loss, expected_loss, rtol, atol_share * abs(expected_loss))
        assert_all_close(f"{at} gradient of", graded.numpy(graded.gradients()),
                         reference.numpy(reference.gradients()), rtol, atol_share,
                         by_layer=True)  # fmt: skip
        assert_all_close(f"{at} buffer", graded.numpy(graded.model.buffers()),
                         reference.numpy(reference.model.buffers()), rtol, atol_share)  # fmt: skip

        for name_, grad in graded.gradients().items():  # the optimizer steps from equal gradients
            np.copyto(grad, reference.tier.to_numpy(reference.gradients()[name_]))
        reference.optimizer.step(reference.lr)
        graded.optimizer.step(graded.lr)
        assert_all_close(f"{at} updated weight", graded.numpy(graded.weights()),
                         reference.numpy(reference.weights()), BASE.rtol, BASE.atol)  # fmt: skip
        assert_all_close(f"{at} optimizer state", graded.numpy(graded.optimizer.state()),
                         reference.numpy(reference.optimizer.state()),
                         BASE.rtol, BASE.atol)  # fmt: skip


@pytest.mark.parametrize("optimizer", list(OPTIMIZERS))
@pytest.mark.parametrize("name", STABLE)
def test_a_stable_run_follows_stage2(name, optimizer):
    reference = Trainee(s2, name, optimizer)
    graded = Trainee(s3, name, optimizer)
    rtol, atol_share = step_tolerance(reference.model)
    for step in range(1, FREE_STEPS + 1):
        images, targets = reference.batch()
        expected_loss = reference.forward_backward(images, targets)
        loss = graded.forward_backward(images, targets)
        assert_close(f"{name}, {optimizer}, free step {step}: loss", loss, expected_loss,
                     step * rtol, step * atol_share * abs(expected_loss))  # fmt: skip
        reference.optimizer.step(reference.lr)
        graded.optimizer.step(graded.lr)

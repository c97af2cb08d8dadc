"""The network's exercises (weeks 9 and 10), checked on the `nn` that S2C_NN selects.

    S2C_NN=workspace python tests/nn_exercise_checks.py CHECK SEED [IMPL]

tests/test_nn_exercises.py runs each check in a child process, since only a fresh interpreter can
import a learner's `nn` (nn/__init__.py) beside the tests' own. The checks of layers, containers,
optimizers and the trainer run the learner's code over the reference NumPy tier and compare it with
that tier's ops called directly; around the code under test they put trusted probe layers (below),
so that each exercise is graded alone. The training checks (xor, mlp, lenet5) train on the
learner's own tiers: IMPL's stage 1 or 2 when it holds it, the reference's otherwise.

The last line printed is the verdict: `ok`, or one line saying what is wrong. Exit status: 0 passed,
1 failed, 3 an exercise still to write (the stub's own "week N, task T" message), 4 skipped.
"""

import contextlib
import io
import math
import sys
import tempfile
import traceback
from pathlib import Path

import numpy as np

import nn
from nn.backend import load_tier
from nn.checkpoint import read_checkpoint
from nn.layers import BatchNorm, Conv2d, Layer, Linear, Residual, Sequential
from nn.models import lenet5, mlp, perceptron
from nn.network import Model
from nn.optimizers import SGD, Adam, Momentum
from nn.parameter import Parameter
from nn.recipes import Recipe
from nn.steps import NotFiniteLoss
from nn.trainer import EVAL_BATCH, Trainer

PASSED, FAILED, NOT_IMPLEMENTED, SKIPPED = 0, 1, 3, 4
TIER = load_tier(2)  # the reference NumPy tier: the trusted ops every unit check calls


class CheckFailed(AssertionError):
    """What the learner's code got wrong, in one line."""


class Skipped(Exception):
    """The check cannot run here (e.g. no MNIST), with the reason."""


def expect(condition, message):
    if not condition:
        raise CheckFailed(message)


def as_numpy(value):
    return np.asarray(TIER.to_numpy(value), dtype=np.float64)


def close(what, received, expected, rtol=1e-4, atol=1e-5):
    """CheckFailed naming `what`, the first differing element and how many differ, unless
    `received` (a native array) matches `expected` (NumPy, float64) within atol + rtol * |ref|."""
    expect(received is not None, f"{what} is None, expected an array of shape {expected.shape}")
    got = as_numpy(received)
    expect(got.shape == expected.shape, f"{what} has shape {list(got.shape)}, "
           f"expected {list(expected.shape)}")
    bad = ~(np.abs(got - expected) <= atol + rtol * np.abs(expected))  # NaN is bad too
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise CheckFailed(f"{what}{list(index)} expected {expected[index]:.6g}, received "
                          f"{got[index]:.6g}; {int(bad.sum())} of {bad.size} elements differ")


def native(array):
    return TIER.from_numpy(np.ascontiguousarray(array, dtype=np.float32))


# Trusted probes: layers and a container written here, so that a check depends on one exercise.
class ProbeLinear(Layer):
    """y = x @ weight.T + bias through the tier's ops, with the weights given."""

    def __init__(self, weight, bias):
        super().__init__()
        self.weight, self.bias = weight, bias

    def build(self, tier, in_shape, seeds):
        self.tier = tier
        self.params = {"weight": Parameter(native(self.weight)),
                       "bias": Parameter(native(self.bias), decay=False)}
        return (self.weight.shape[0],)

    def forward(self, x):
        self.x = x
        self.seen_training = self.training  # what evaluation must switch off
        self.batch_sizes.append(as_numpy(x).shape[0])
        return self.tier.linear_forward(x, self.params["weight"].value, self.params["bias"].value)

    def backward(self, dout):
        weight, bias = self.params["weight"], self.params["bias"]
        dx, weight.grad, bias.grad = self.tier.linear_backward(self.x, weight.value, dout)
        return dx

    batch_sizes = []  # shared by all probes: the batch sizes forward saw, in order


class ProbeTanh(Layer):
    def forward(self, x):
        self.y = self.tier.tanh(x)
        return self.y

    def backward(self, dout):
        return self.tier.tanh_backward(self.y, dout)


class ProbeSequential(Sequential):
    """A Sequential whose forward and backward are written here (Model wants a Sequential)."""

    def forward(self, x):
        for layer in self.layers:
            x = layer.forward(x)
        return x

    def backward(self, dout):
        for layer in reversed(self.layers):
            dout = layer.backward(dout)
        return dout


def random_linear(rng, out_features, in_features):
    return (rng.standard_normal((out_features, in_features)).astype(np.float32),
            rng.standard_normal(out_features).astype(np.float32))


def built(layer, in_shape):
    layer.build(TIER, in_shape, iter(range(1, 100)))
    return layer


# -- week 9: layers ------------------------------------------------------------------------------
def check_linear(rng):
    layer = built(Linear(5, 3), (5,))
    weight = as_numpy(layer.params["weight"].value)
    bias = as_numpy(layer.params["bias"].value)
    first, x = rng.standard_normal((6, 5)), rng.standard_normal((6, 5))
    layer.forward(native(first))
    y = layer.forward(native(x))  # backward must use this call's input, not the first one's
    close("Linear.forward: y", y, x @ weight.T + bias)
    dout = rng.standard_normal((6, 3))
    dx = layer.backward(native(dout))
    close("Linear.backward: dx (dout @ weight)", dx, dout @ weight)
    close("Linear.backward: weight.grad (dout.T @ x, with x the last forward's input)",
          layer.params["weight"].grad, dout.T @ x)
    close("Linear.backward: bias.grad (dout summed over the batch)",
          layer.params["bias"].grad, dout.sum(axis=0))
    close("Linear: the weight after forward and backward (they must not change it)",
          layer.params["weight"].value, weight)


def check_conv(rng):
    layer = built(Conv2d(2, 3, 3, stride=2, padding=1), (2, 7, 7))
    weight = layer.params["weight"].value
    bias = layer.params["bias"].value
    first, x = rng.standard_normal((2, 2, 7, 7)), native(rng.standard_normal((3, 2, 7, 7)))
    layer.forward(native(first))
    y = layer.forward(x)
    close("Conv2d.forward: y (conv2d_forward with the layer's stride 2 and padding 1)", y,
          as_numpy(TIER.conv2d_forward(x, weight, bias, 2, 1)))
    dout = native(rng.standard_normal(as_numpy(y).shape))
    expected = [as_numpy(a) for a in TIER.conv2d_backward(x, weight, dout, 2, 1, need_dx=True)]
    dx = layer.backward(dout)
    close("Conv2d.backward: dx (conv2d_backward of the last forward's input)", dx, expected[0])
    close("Conv2d.backward: weight.grad", layer.params["weight"].grad, expected[1])
    close("Conv2d.backward: bias.grad", layer.params["bias"].grad, expected[2])
    layer.needs_input_grad = False  # a model's first layer: its input is data
    layer.forward(x)
    expect(layer.backward(dout) is None, "Conv2d.backward: with needs_input_grad False it must "
           "return None (pass need_dx=self.needs_input_grad: no col2im for a gradient of data)")
    close("Conv2d.backward: weight.grad with needs_input_grad False",
          layer.params["weight"].grad, expected[1])


# -- week 9: the chain ---------------------------------------------------------------------------
def check_sequential(rng):
    # Square layers, so that running them in the wrong order gives wrong numbers, not a crash.
    weights = [random_linear(rng, 3, 3) for _ in range(3)]
    net = Sequential(ProbeLinear(*weights[0]), ProbeTanh(), ProbeLinear(*weights[1]), ProbeTanh(),
                     ProbeLinear(*weights[2]))
    expect(net.build(TIER, (3,), iter(range(9))) == (3,), "Sequential.build changed")
    x, dout = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    # The same network in float64: inputs[k] is layer k's input; layers 0, 2, 4 are linear.
    inputs = [x]
    for k in range(5):
        w, b = weights[k // 2]
        inputs.append(inputs[k] @ w.T.astype(np.float64) + b if k % 2 == 0 else np.tanh(inputs[k]))
    close("Sequential.forward: y (each layer's output is the next one's input)",
          net.forward(native(x)), inputs[5])
    grads, delta = {}, dout
    for k in reversed(range(5)):
        if k % 2:
            delta = delta * (1 - inputs[k + 1] ** 2)
        else:
            grads[k] = (delta.T @ inputs[k], delta.sum(axis=0))
            delta = delta @ weights[k // 2][0].astype(np.float64)
    dx = net.backward(native(dout))
    order = "the layers' backward in reverse order, each given the gradient the one after returned"
    close(f"Sequential.backward: dx ({order})", dx, delta)
    for index, (dweight, dbias) in grads.items():
        close(f"Sequential.backward: layer {index}'s weight.grad",
              net.layers[index].params["weight"].grad, dweight)
        close(f"Sequential.backward: layer {index}'s bias.grad",
              net.layers[index].params["bias"].grad, dbias)


# -- week 9: the models --------------------------------------------------------------------------
MODEL_LAYERS = {  # (builder, its arguments): the layers it must return, in order
    "perceptron": (perceptron, ((2,), 2), ["Linear(2->2)"]),
    "perceptron on images": (perceptron, ((1, 28, 28), 10), ["Flatten()", "Linear(784->10)"]),
    "mlp": (mlp, ((1, 28, 28), 10), ["Flatten()", "Linear(784->128)", "ReLU()",
                                     "Linear(128->10)"]),
    "lenet5": (lenet5, ((1, 28, 28), 10), [
        "Conv2d(1->6, k=5, padding=2)", "ReLU()", "MaxPool2d(k=2)", "Conv2d(6->16, k=5)",
        "ReLU()", "MaxPool2d(k=2)", "Flatten()", "Linear(400->120)", "ReLU()",
        "Linear(120->84)", "ReLU()", "Linear(84->10)",
    ]),
}
PARAMETER_COUNTS = {"perceptron": 6, "perceptron on images": 7850, "mlp": 101_770,
                    "lenet5": 61_706}


def check_models(rng):
    for name, (builder, arguments, layers) in MODEL_LAYERS.items():
        model = builder(*arguments)
        described = [layer.describe() for layer in model.net.layers]
        expect(described == layers, f"{name}: the layers are {described}, expected {layers}")
        model.build(TIER, seed=0)
        count = model.parameter_count()
        expect(count == PARAMETER_COUNTS[name],
               f"{name}: {count:,} parameters, expected {PARAMETER_COUNTS[name]:,}")


# -- week 9: the optimizer loop ------------------------------------------------------------------
def probe_parameters(rng):
    """{name: Parameter}: a weight (decayed) and a bias (not), with fresh values."""
    return {"w": Parameter(native(rng.standard_normal((3, 4)))),
            "b": Parameter(native(rng.standard_normal(4)), decay=False)}


def check_optimizer(rng):
    params = probe_parameters(rng)
    start = {name: as_numpy(p.value) for name, p in params.items()}
    grads = {name: rng.standard_normal(value.shape) for name, value in start.items()}
    for name, p in params.items():
        p.grad = native(grads[name])
    SGD(TIER, params, weight_decay=0.1).step(0.5)
    close("Optimizer.step with SGD: w (w - lr * (grad + weight_decay * w))", params["w"].value,
          start["w"] - 0.5 * (grads["w"] + 0.1 * start["w"]), atol=1e-5)
    close("Optimizer.step with SGD: b (no weight decay on a parameter whose decay is False)",
          params["b"].value, start["b"] - 0.5 * grads["b"])
    for kind, make, step_op in (
        ("Momentum", lambda p: Momentum(TIER, p, weight_decay=0.01, momentum=0.9),
         lambda p, g, state, t, decay: TIER.momentum_step(p, g, *state, 0.1, 0.9, False, decay)),
        ("Adam", lambda p: Adam(TIER, p, weight_decay=0.01),
         lambda p, g, state, t, decay: TIER.adam_step(p, g, *state, t, 0.1, 0.9, 0.999, 1e-8,
                                                      decay)),
    ):
        params = probe_parameters(rng)
        optimizer = make(params)
        # The same updates, through the tier's op, with state kept here from step to step.
        mine = {name: native(as_numpy(p.value)) for name, p in params.items()}
        state = {name: [native(np.zeros(as_numpy(p.value).shape)) for _ in optimizer.slots]
                 for name, p in params.items()}
        for step in range(1, 4):
            for name, p in params.items():
                p.grad = native(rng.standard_normal(as_numpy(p.value).shape))
                step_op(mine[name], p.grad, state[name], step, 0.01 if p.decay else 0.0)
            optimizer.step(0.1)
            for name, p in params.items():
                close(f"Optimizer.step with {kind}, after step {step}: {name} (is the state of "
                      f"each parameter, {list(optimizer.slots)}, kept from step to step?)",
                      p.value, as_numpy(mine[name]), atol=1e-5)
    params = probe_parameters(rng)
    params["w"].grad = native(np.zeros((3, 4)))
    try:
        SGD(TIER, params).step(0.1)
    except RuntimeError as error:
        expect("'b'" in str(error), f"Optimizer.step: the error must name the parameter 'b' "
               f"without a gradient, got {error}")
    else:
        raise CheckFailed("Optimizer.step: a parameter without a gradient (grad None: backward "
                          "not run) must raise RuntimeError naming it")


# -- week 9: the trainer -------------------------------------------------------------------------
def probe_trainer(rng, run_dir, train_size=30, val_size=0, **recipe):
    """A Trainer of a one-layer probe model (3 classes of 2-D blobs) with `recipe`'s settings."""
    from nn.data import load_data

    data = load_data("blobs", val_size=val_size, synthetic_size=train_size + val_size)
    weight, bias = random_linear(rng, data.num_classes, 2)
    model = Model("probe", ProbeSequential(ProbeLinear(weight, bias)), (2,), data.num_classes,
                  "cross_entropy").build(TIER, seed=0)
    settings = {"optimizer": "sgd", "schedule": "constant", "val_size": val_size, "patience": 0,
                "seed": int(rng.integers(1000)), **recipe}
    trainer = Trainer(model, data, Recipe(**settings), run_dir, progress_bar=False,
                      echo=lambda line: None)
    return trainer


class ProbeStep:
    """A trusted step that keeps what the loop asked of it: each batch's indices and rate."""

    def __init__(self):
        self.batches, self.rates = [], []

    def start_epoch(self, epoch, order):
        pass

    def run(self, indices, progress, lr):
        self.batches.append(np.asarray(indices).tolist())
        self.rates.append(lr)
        return 0.5, 1


def check_train_epoch(rng, run_dir):
    trainer = probe_trainer(rng, run_dir, batch_size=8)
    step = trainer.train_step = ProbeStep()
    trainer.schedule = lambda index: 0.1 * (index + 1)
    order = np.random.default_rng([trainer.recipe.seed, 0]).permutation(30).tolist()
    expected = [order[0:8], order[8:16], order[16:24], order[24:30]]
    trainer.train_epoch()
    expect(step.batches == expected, f"Trainer.train_epoch: the batches were {step.batches}, "
           f"expected the epoch's order {order} cut into batches of 8: {expected}")
    expect(np.allclose(step.rates, [0.1, 0.2, 0.3, 0.4]), f"Trainer.train_epoch: the steps ran "
           f"at learning rates {step.rates}, expected the schedule's at steps 0, 1, 2, 3: "
           "[0.1, 0.2, 0.3, 0.4] (self.schedule(progress.step))")
    progress = trainer.progress
    expect((progress.batch, progress.step, progress.seen) == (4, 4, 30),
           f"Trainer.train_epoch: after one epoch of 4 batches, progress counts "
           f"{progress.batch} batches, {progress.step} steps, {progress.seen} examples")
    # A run resumed after 2 batches of epoch 0 does the last two only.
    trainer = probe_trainer(rng, run_dir, batch_size=8, seed=trainer.recipe.seed)
    step = trainer.train_step = ProbeStep()
    trainer.progress.batch = trainer.progress.step = 2
    trainer.progress.seen = 16
    trainer.train_epoch()
    expect(step.batches == expected[2:], f"Trainer.train_epoch: resumed after 2 batches, the "
           f"batches were {step.batches}, expected {expected[2:]} (start at progress.batch)")


def check_train_step(rng, run_dir):
    trainer = probe_trainer(rng, run_dir, batch_size=8)
    probe = trainer.model.net.layers[0]
    weight, bias = probe.params["weight"].value, probe.params["bias"].value
    indices = np.array([3, 1, 4, 15, 9, 26])
    data = trainer.data
    x = native(data.normalizer(data.train.inputs[indices]))
    targets = data.train.labels[indices].astype(np.int64)
    logits = TIER.linear_forward(x, weight, bias)
    loss = float(TIER.cross_entropy_loss(logits, targets))
    dlogits = TIER.cross_entropy_loss_backward(logits, targets)
    _, dweight, dbias = TIER.linear_backward(x, weight, dlogits)
    expected_weight = as_numpy(weight) - 0.3 * as_numpy(dweight)
    expected_bias = as_numpy(bias) - 0.3 * as_numpy(dbias)
    correct = int((as_numpy(logits).argmax(axis=1) == targets).sum())
    got = trainer.train_step.run(indices, trainer.progress, 0.3)
    expect(isinstance(got, tuple) and len(got) == 2, f"HostStep.run returned {got!r}, "
           "expected (loss, correct)")
    expect(isinstance(got[0], float) and math.isclose(got[0], loss, rel_tol=1e-5),
           f"HostStep.run: loss {got[0]!r}, expected the batch's mean loss {loss:.6f} as a "
           "float (before the update)")
    expect(got[1] == correct, f"HostStep.run: {got[1]} correct, expected {correct}")
    close("HostStep.run: the weight after one SGD step at lr 0.3", weight, expected_weight)
    close("HostStep.run: the bias after one SGD step at lr 0.3", bias, expected_bias)
    # A NaN loss stops the run before anything changes.
    trainer = probe_trainer(rng, run_dir, batch_size=8)
    probe = trainer.model.net.layers[0]
    probe.params["bias"].value = native(np.full(as_numpy(bias).shape, np.nan))
    before = as_numpy(probe.params["weight"].value)
    try:
        trainer.train_step.run(indices, trainer.progress, 0.3)
    except NotFiniteLoss:
        pass
    else:
        raise CheckFailed("HostStep.run: a NaN loss must raise NotFiniteLoss "
                          "(checked_loss(loss, progress)) before backward and the update")
    close("HostStep.run: the weight after a NaN loss (it must not change)",
          probe.params["weight"].value, before)


def check_evaluate(rng, run_dir):
    trainer = probe_trainer(rng, run_dir, train_size=2 * EVAL_BATCH + 203)
    probe = trainer.model.net.layers[0]
    split = trainer.data.train
    ProbeLinear.batch_sizes.clear()
    loss, accuracy, predictions = trainer.evaluate(split)
    sizes = ProbeLinear.batch_sizes
    expect(sizes == [EVAL_BATCH, EVAL_BATCH, 203], f"Trainer.evaluate: forward saw batches of "
           f"{sizes}, expected {[EVAL_BATCH, EVAL_BATCH, 203]} (EVAL_BATCH at a time)")
    expect(not probe.seen_training, "Trainer.evaluate: the model was in training mode during "
           "evaluation (model.eval() first: dropout and batchnorm behave differently)")
    expect(probe.training, "Trainer.evaluate: the model is left in evaluation mode (model.train()"
           " at the end, or the next epoch trains without dropout and batch statistics)")
    x = native(trainer.data.normalizer(split.inputs))
    logits = TIER.linear_forward(x, probe.params["weight"].value, probe.params["bias"].value)
    expected = float(TIER.cross_entropy_loss(logits, split.labels.astype(np.int64)))
    expect(math.isclose(loss, expected, rel_tol=1e-4), f"Trainer.evaluate: mean loss {loss:.6f},"
           f" expected {expected:.6f} (each batch's mean loss weighted by its size)")
    values = np.sort(as_numpy(logits), axis=1)
    clear = values[:, -1] - values[:, -2] > 1e-3  # rows whose prediction no rounding can flip
    best = as_numpy(logits).argmax(axis=1)
    expect(np.array_equal(np.asarray(predictions)[clear], best[clear]),
           "Trainer.evaluate: the predictions differ from the highest logit of each example")
    expect(math.isclose(accuracy, float((best == split.labels).mean()), abs_tol=0.002),
           f"Trainer.evaluate: accuracy {accuracy}, expected the share of correct predictions")


def check_end_epoch(rng, run_dir):
    val_losses = [1.0, 0.8, 0.9, 0.85, 0.7, 0.6, 0.5, 0.4]
    for patience, epochs_run, best in ((2, 4, 2), (0, 8, 8)):
        folder = Path(run_dir) / f"patience{patience}"
        trainer = probe_trainer(rng, folder, val_size=10, epochs=8, patience=patience)
        weight = trainer.model.net.layers[0].params["weight"]
        losses = iter(val_losses)

        def train_epoch(trainer=trainer, weight=weight):  # epoch k leaves weights equal to k
            weight.value = native(np.full(as_numpy(weight.value).shape, trainer.progress.epoch + 1))
            trainer.progress.count_batch(10, 0.01)
            trainer.progress.count_result(0.5, 1, 10)

        trainer.train_epoch = train_epoch
        trainer.evaluate = lambda split, losses=losses: (next(losses), 0.5, None)
        history = trainer.fit()
        setting = (f"with patience {patience} and validation losses {val_losses}" +
                   (" (patience 0: never stop)" if not patience else ""))
        expect(len(history) == epochs_run, f"Trainer.end_epoch: {setting}, training should run "
               f"{epochs_run} epochs; it ran {len(history)}")
        progress = trainer.progress
        expect(progress.best_epoch == best and progress.best_val_loss == val_losses[best - 1],
               f"Trainer.end_epoch: {setting}, the best epoch is {best} (loss "
               f"{val_losses[best - 1]}); progress says epoch {progress.best_epoch} (loss "
               f"{progress.best_val_loss})")
        expect(progress.stopped_early == (epochs_run < 8),
               f"Trainer.end_epoch: {setting}, progress.stopped_early should be "
               f"{epochs_run < 8}")
        for name, epoch in (("best.npz", best), ("last.npz", epochs_run)):
            path = folder / name
            expect(path.is_file(), f"Trainer.end_epoch: {setting}, no {name} was written")
            meta, arrays = read_checkpoint(path)
            saved = meta["progress"]["epoch"], float(arrays["param/0.weight"].flat[0])
            expect(saved == (epoch, epoch), f"Trainer.end_epoch: {setting}, {name} holds epoch "
                   f"{saved[0]} with the weights of epoch {saved[1]:g}; expected epoch {epoch}")


# -- week 10 -------------------------------------------------------------------------------------
def check_residual(rng):
    for shortcut in (None, random_linear(rng, 4, 3)):
        body_weight = random_linear(rng, 3 if shortcut is None else 4, 3)
        block = Residual(ProbeLinear(*body_weight),
                         None if shortcut is None else ProbeLinear(*shortcut))
        kind = "identity" if shortcut is None else "projection"
        block.build(TIER, (3,), iter(range(9)))
        x = rng.standard_normal((5, 3))
        w, b = (a.astype(np.float64) for a in body_weight)
        skip = x if shortcut is None else x @ shortcut[0].T.astype(np.float64) + shortcut[1]
        close(f"Residual.forward ({kind}): y (body(x) + shortcut(x))",
              block.forward(native(x)), x @ w.T + b + skip)
        dout = rng.standard_normal((5, w.shape[0]))
        dskip = dout if shortcut is None else dout @ shortcut[0].astype(np.float64)
        close(f"Residual.backward ({kind}): dx (the body's input gradient plus the skip's)",
              block.backward(native(dout)), dout @ w + dskip)
        close(f"Residual.backward ({kind}): the body's weight.grad",
              block.body.params["weight"].grad, dout.T @ x)
        if shortcut is not None:
            close("Residual.backward (projection): the shortcut's weight.grad",
                  block.shortcut.params["weight"].grad, dout.T @ x)


def check_batchnorm(rng):
    layer = built(BatchNorm(3), (3, 4, 4))
    gamma, beta = (native(rng.standard_normal(3)) for _ in range(2))
    layer.params["gamma"].value, layer.params["beta"].value = gamma, beta
    mean, var = native(np.zeros(3)), native(np.ones(3))
    x = native(rng.standard_normal((4, 3, 4, 4)) * 2 + 1)
    y, saved = TIER.batchnorm_forward(x, gamma, beta, mean, var, True, 0.1, 1e-5)
    close("BatchNorm.forward in training: y (batchnorm_forward with the batch's statistics)",
          layer.forward(x), as_numpy(y))
    close("BatchNorm.forward in training: running_mean (updated by the op, in place)",
          layer.running_mean, as_numpy(mean))
    dout = native(rng.standard_normal((4, 3, 4, 4)))
    expected = [as_numpy(a) for a in TIER.batchnorm_backward(dout, x, gamma, saved)]
    close("BatchNorm.backward: dx", layer.backward(dout), expected[0])
    close("BatchNorm.backward: gamma.grad", layer.params["gamma"].grad, expected[1])
    close("BatchNorm.backward: beta.grad", layer.params["beta"].grad, expected[2])
    layer.eval()
    y, _ = TIER.batchnorm_forward(x, gamma, beta, mean, var, False, 0.1, 1e-5)
    close("BatchNorm.forward in evaluation: y (the running statistics, self.training False)",
          layer.forward(x), as_numpy(y))



# -- week 19: deployment ---------------------------------------------------------------------------
def check_fold_batchnorm(rng):
    from nn.inference import fold_batchnorm

    eps = 1e-3
    gamma, beta, mean = (rng.standard_normal(4) for _ in range(3))
    var = rng.uniform(0.1, 2.0, 4)
    for what, weight, x in [
        ("a linear layer's weight [4, 5]", rng.standard_normal((4, 5)),
         rng.standard_normal((6, 5))),
        ("a conv's weight [4, 2, 3, 3]", rng.standard_normal((4, 2, 3, 3)),
         rng.standard_normal((6, 2, 3, 3))),  # six receptive fields, each one output pixel
    ]:  # fmt: skip
        bias = rng.standard_normal(4)
        folded_weight, folded_bias = fold_batchnorm(weight, bias, gamma, beta, mean, var, eps)
        expect(np.asarray(folded_weight).dtype == np.float64 == np.asarray(folded_bias).dtype,
               "fold_batchnorm: the folded weight and bias in float64 (the tier rounds them once)")
        layer = np.einsum("nf,kf->nk", x.reshape(6, -1), weight.reshape(4, -1)) + bias
        expected = gamma * (layer - mean) / np.sqrt(var + eps) + beta  # BatchNorm in evaluation
        folded = np.einsum("nf,kf->nk", x.reshape(6, -1),
                           np.asarray(folded_weight).reshape(4, -1)) + folded_bias
        close(f"fold_batchnorm of {what}: the folded layer's output against batchnorm(layer(x)) "
              f"(each output channel k scaled by gamma[k] / sqrt(var[k] + eps))", folded, expected)


def check_conv_node(rng):
    import onnx
    from onnx.reference import ReferenceEvaluator

    from nn.onnx_writers import GraphWriter, write_layer

    layer = built(Conv2d(2, 3, 3, stride=2, padding=1), (2, 7, 7))
    graph = GraphWriter()
    y = write_layer(graph, layer, "x", "conv")
    nodes = [node.op_type for node in graph.nodes]
    expect(nodes == ["Conv"], f"conv_node: one Conv node, got {nodes}")
    x = rng.standard_normal((3, 2, 7, 7)).astype(np.float32)
    weight, bias = layer.params["weight"].value, layer.params["bias"].value
    expected = as_numpy(TIER.conv2d_forward(native(x), weight, bias, 2, 1))
    value = onnx.helper.make_tensor_value_info
    model = onnx.helper.make_model(
        onnx.helper.make_graph(graph.nodes, "conv", [value("x", onnx.TensorProto.FLOAT, x.shape)],
                               [value(y, onnx.TensorProto.FLOAT, expected.shape)],
                               graph.initializers),
        opset_imports=[onnx.helper.make_opsetid("", 17)],
    )
    onnx.checker.check_model(model)
    try:
        (found,) = ReferenceEvaluator(model).run(None, {"x": x})
    except Exception as error:  # a malformed attribute: say which node, not the evaluator's line
        message = "conv_node: ONNX's reference evaluator cannot run the Conv node "
        message += f"({type(error).__name__}: {error}); pads must hold four values"
        raise CheckFailed(message) from None
    close("conv_node: the Conv node's output (ONNX's reference evaluator) against the layer's "
          "conv2d_forward with stride 2 and padding 1 (kernel_shape, strides, pads on all four "
          "sides, weight and bias as initializers)",
          found, expected)


# -- week 20: serving and seeing inside ------------------------------------------------------------
def check_class_activation_maps(rng):
    from nn.explain import class_activation_maps

    activations = rng.standard_normal((3, 4, 5, 6)).astype(np.float32)
    gradients = rng.standard_normal((3, 4, 5, 6)).astype(np.float32)
    expected = np.zeros((3, 5, 6))
    for n in range(3):
        for k in range(4):  # alpha_k: the spatial mean of channel k's gradient, image by image
            expected[n] += gradients[n, k].astype(np.float64).mean() * activations[n, k]
    found = class_activation_maps(activations, gradients)
    expect(np.shape(found) == (3, 5, 6), f"class_activation_maps: shape {np.shape(found)}, "
           "expected (3, 5, 6): one map [h, w] per image")
    close("class_activation_maps: ReLU(sum_k alpha_k A_k), alpha_k the spatial mean of channel "
          "k's gradient, per image", found, np.maximum(expected, 0))


def check_batcher_gather(_rng):  # the jobs are fixed: the check is about order and timing
    import threading
    import time

    from nn.serve.batcher import Batcher

    def batcher(max_batch, max_wait_s):
        return Batcher([], None, max_batch, max_wait_s, queue_size=64, batch_sizes=None)

    waiting = batcher(max_batch=3, max_wait_s=5.0)
    for job in range(5):
        waiting.queue.put(job)
    started = time.monotonic()
    expect(waiting.gather() == [0, 1, 2], "Batcher.gather: with 5 jobs waiting and max_batch 3, "
           "the first 3, in the order they came")
    expect(time.monotonic() - started < 2.5, "Batcher.gather: a full batch goes at once, without "
           "waiting for max_wait_s")
    expect(waiting.gather() == [3, 4], "Batcher.gather: then the 2 left, after max_wait_s")
    started = time.monotonic()
    expect(batcher(4, 0.01).gather() == [], "Batcher.gather: an empty queue gives []")
    expect(time.monotonic() - started < 2.0, "Batcher.gather: an empty queue gives [] after about "
           "0.1 s (the worker must notice a stop), not after waiting for a job forever")
    late = batcher(max_batch=8, max_wait_s=1.0)
    late.queue.put("first")
    threading.Timer(0.05, late.queue.put, ["late"]).start()
    expect(late.gather() == ["first", "late"], "Batcher.gather: a job that comes within max_wait_s "
           "of the first rides in the same batch")


# -- week 9: train, on the learner's tiers -------------------------------------------------------
def train(impl, stage, *flags):
    """nn.train on `stage` (IMPL's tier when it holds it); returns (status, output, run folder)."""
    from nn import train as command

    package = "stage1_python" if stage == 1 else "stage2_numpy"
    holds_it = impl and (Path(impl) / package / "__init__.py").is_file()
    impl_flags = ["--impl", impl] if holds_it else []
    run_dir = Path(tempfile.mkdtemp(prefix="nn-exercise-"))
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        status = command.main(["--stage", str(stage), *impl_flags, "--no-progress",
                               "--run-dir", str(run_dir), *flags])
    text = output.getvalue()
    stub = next((line for line in text.splitlines() if "not implemented yet" in line), None)
    if stub:
        raise NotImplementedError(stub.removeprefix("error: ").split("; `make")[0])
    expect(status == 0, f"training failed (exit {status}): {text.strip().splitlines()[-1]}")
    return text, run_dir


def accuracy_of(text):
    return float(text.strip().splitlines()[-1].removeprefix("test_accuracy="))


def mnist_flags():
    import os

    data_dir = os.environ.get("NN_DATA_DIR")
    if not data_dir or not (Path(data_dir) / "mnist").is_dir():
        raise Skipped("MNIST not found: NN_DATA_DIR must name a folder holding mnist/ "
                      "(`make data` fetches it)")
    return ["--data", "mnist", "--data-dir", data_dir]


def check_train_xor(rng, impl):
    text, run_dir = train(impl, 1, "--model", "xor", "--data", "xor")
    accuracy = accuracy_of(text)
    expect(accuracy == 1.0, f"xor on stage 1: test accuracy {accuracy}, expected 1.0")
    meta, _ = read_checkpoint(run_dir / "last.npz")
    expect(meta["progress"]["epoch"] == 100, "xor: last.npz does not hold the 100th epoch")


def train_on_mnist(impl, model, train_size, minimum, typical):
    """Two epochs of `model` on `train_size` MNIST digits (stage 2): test accuracy >= `minimum`
    (the reference reaches about `typical`), and best.npz and last.npz written."""
    text, run_dir = train(impl, 2, "--model", model, *mnist_flags(), "--train-size",
                          str(train_size), "--val-size", "500", "--epochs", "2", "--batch-size",
                          "32", "--shift", "0")
    accuracy = accuracy_of(text)
    expect(accuracy >= minimum, f"{model} on {train_size:,} MNIST digits, 2 epochs: test "
           f"accuracy {accuracy}, expected at least {minimum} (the reference reaches about "
           f"{typical})")
    for name in ("best.npz", "last.npz"):
        expect(read_checkpoint(run_dir / name)[0]["model"] == model, f"{model}: no {name}")


def check_train_mlp(rng, impl):
    train_on_mnist(impl, "mlp", 3000, minimum=0.85, typical=0.89)


def check_train_lenet5(rng, impl):
    train_on_mnist(impl, "lenet5", 2000, minimum=0.85, typical=0.93)


CHECKS = {  # name: (week, the tasks it grades, function, what it takes: "" / "run_dir" / "impl")
    "linear": (9, ["Linear.forward", "Linear.backward"], check_linear, ""),
    "conv": (9, ["Conv2d.forward", "Conv2d.backward"], check_conv, ""),
    "sequential": (9, ["Sequential.forward", "Sequential.backward"], check_sequential, ""),
    "models": (9, ["perceptron", "mlp", "lenet5"], check_models, ""),
    "optimizer": (9, ["Optimizer.step"], check_optimizer, ""),
    "train_epoch": (9, ["Trainer.train_epoch"], check_train_epoch, "run_dir"),
    "train_step": (9, ["HostStep.run"], check_train_step, "run_dir"),
    "evaluate": (9, ["Trainer.evaluate"], check_evaluate, "run_dir"),
    "end_epoch": (9, ["Trainer.end_epoch"], check_end_epoch, "run_dir"),
    "train_xor": (9, None, check_train_xor, "impl"),
    "train_mlp": (9, None, check_train_mlp, "impl"),
    "train_lenet5": (9, None, check_train_lenet5, "impl"),
    "residual": (10, ["Residual.forward", "Residual.backward"], check_residual, ""),
    "batchnorm": (10, ["BatchNorm.forward", "BatchNorm.backward"], check_batchnorm, ""),
    "fold_batchnorm": (19, ["fold_batchnorm"], check_fold_batchnorm, ""),
    "conv_node": (19, ["conv_node"], check_conv_node, ""),
    "class_activation_maps": (20, ["class_activation_maps"], check_class_activation_maps, ""),
    "batcher_gather": (20, ["Batcher.gather"], check_batcher_gather, ""),
}


def where_in_nn(error):
    """' (nn/layers/linear.py:33)': the innermost line of the graded nn that raised, or ''."""
    root = Path(nn.__path__[0]).resolve()
    frames = [frame for frame in traceback.extract_tb(error.__traceback__)
              if Path(frame.filename).resolve().is_relative_to(root)]
    if not frames:
        return ""
    relative = Path(frames[-1].filename).resolve().relative_to(root.parent)
    return f" ({relative}:{frames[-1].lineno})"


def main(name, seed, impl=None):
    _week, _tasks, check, takes = CHECKS[name]
    rng = np.random.default_rng(seed)
    try:
        with tempfile.TemporaryDirectory() as run_dir:
            check(rng, *{"": [], "run_dir": [run_dir], "impl": [impl]}[takes])
    except NotImplementedError as error:
        print(error)
        return NOT_IMPLEMENTED
    except CheckFailed as error:
        print(error)
        return FAILED
    except Skipped as error:
        print(error)
        return SKIPPED
    except Exception as error:  # the learner's code crashed: say where, in one line
        print(f"{name}: {type(error).__name__}: {error}{where_in_nn(error)}")
        return FAILED
    print("ok")
    return PASSED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), *sys.argv[3:]))

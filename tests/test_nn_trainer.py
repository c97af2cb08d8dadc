"""The trainer on the NumPy tier: resuming gives exactly the uninterrupted run, bad checkpoints are
clear errors, a NaN loss stops training and keeps the last good checkpoint."""

import os
import signal

import numpy as np
import pytest
from conftest import load_tier

from nn.checkpoint import CheckpointError, read_checkpoint, restore, save_checkpoint
from nn.data import load_data
from nn.interrupts import Interrupted
from nn.layers import BatchNorm, Dropout, Linear, ReLU, Sequential
from nn.network import Model
from nn.recipes import Recipe
from nn.trainer import Trainer, TrainingDiverged

pytestmark = pytest.mark.week09  # week 9 teaches nn/: layers, models, the trainer

RECIPE = Recipe(
    epochs=3, batch_size=32, optimizer="adam", lr=0.01, schedule="cosine", warmup_epochs=0.5,
    val_size=60, synthetic_size=240, patience=0,
)


def spiral_model(hidden=16):
    """Batchnorm (running statistics) and dropout (a call counter) make resuming non-trivial."""
    net = Sequential(
        Linear(2, hidden), BatchNorm(hidden), ReLU(), Dropout(0.2), Linear(hidden, 3)
    )
    return Model("spiral_net", net, (2,), 3, "cross_entropy")


def linear_model():
    """No batchnorm, no dropout: with a learning rate of 0 nothing at all changes."""
    return Model("linear", Sequential(Linear(2, 3)), (2,), 3, "cross_entropy")


def make_trainer(run_dir, seed=0, recipe=RECIPE, make_model=spiral_model, tier=None):
    tier = tier or load_tier("numpy")
    data = load_data("spirals", val_size=recipe.val_size, synthetic_size=recipe.synthetic_size)
    model = make_model().build(tier, seed)
    return Trainer(model, data, recipe, run_dir, progress_bar=False, echo=lambda line: None)


def snapshot(trainer):
    """Every parameter and buffer of the trainer's model as NumPy copies."""
    model = trainer.model
    state = {name: np.array(model.tier.to_numpy(p.value)) for name, p in model.parameters().items()}
    for name, value in model.buffers().items():
        state[name] = np.array(value if isinstance(value, int) else model.tier.to_numpy(value))
    return state


def interrupt_at(trainer, step):
    """Press Ctrl-C during global step `step - 1`: training stops and saves just before `step`."""
    inject(trainer, "forward", step - 1, press_ctrl_c)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    trainer = make_trainer(tmp_path_factory.mktemp("straight"))
    history = trainer.fit()
    return snapshot(trainer), history, trainer.steps_per_epoch


@pytest.mark.parametrize("where", ["epoch_boundary", "mid_epoch"])
def test_resume_after_ctrl_c_continues_exactly(tmp_path, uninterrupted, where):
    expected_state, expected_history, steps_per_epoch = uninterrupted
    stop_at = steps_per_epoch if where == "epoch_boundary" else steps_per_epoch + 3
    first = make_trainer(tmp_path)
    interrupt_at(first, stop_at)
    with pytest.raises(KeyboardInterrupt):
        first.fit()
    assert first.last_path.is_file()

    second = make_trainer(tmp_path, seed=123)  # other initial weights: all must come from disk
    second.resume()
    assert second.progress.step == stop_at
    history = second.fit()
    state = snapshot(second)
    assert state.keys() == expected_state.keys()
    for name, value in expected_state.items():
        np.testing.assert_array_equal(state[name], value, err_msg=name)
    for got, want in zip(history, expected_history, strict=True):
        assert got["train_loss"] == pytest.approx(want["train_loss"], rel=1e-12)
        assert got["val_loss"] == want["val_loss"]


def test_checkpoint_round_trip_restores_everything(tmp_path):
    trainer = make_trainer(tmp_path)
    trainer.fit()
    meta, arrays = read_checkpoint(trainer.last_path)
    assert meta["model"] == "spiral_net" and meta["progress"]["epoch"] == RECIPE.epochs
    fresh = make_trainer(tmp_path, seed=99)
    fresh.resume()
    assert snapshot(fresh).keys() == snapshot(trainer).keys()
    for name, value in snapshot(trainer).items():
        np.testing.assert_array_equal(snapshot(fresh)[name], value, err_msg=name)
    assert fresh.optimizer.steps == trainer.optimizer.steps
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == RECIPE.epochs and '"val_accuracy"' in lines[-1]


def test_corrupt_checkpoints_are_clear_errors(tmp_path):
    trainer = make_trainer(tmp_path, recipe=RECIPE.with_overrides(epochs=1))
    trainer.fit()
    good = trainer.last_path.read_bytes()
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"this is not a zip archive" * 10)
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(good[: len(good) // 2])
    for path in (garbage, truncated):
        with pytest.raises(CheckpointError, match="corrupt or not a checkpoint"):
            read_checkpoint(path)
    with pytest.raises(CheckpointError, match="does not exist"):
        read_checkpoint(tmp_path / "missing.npz")


def test_mismatched_checkpoints_are_clear_errors(tmp_path):
    tier = load_tier("numpy")
    model = spiral_model(hidden=16).build(tier, seed=0)
    path = tmp_path / "model.npz"
    save_checkpoint(path, model, None, {})
    meta, arrays = read_checkpoint(path)
    wider = spiral_model(hidden=20).build(tier, seed=0)
    with pytest.raises(CheckpointError, match=r"param/0.weight has shape \(16, 2\)"):
        restore(path, meta, arrays, wider)
    other = Model("other", Sequential(Linear(2, 3)), (2,), 3, "cross_entropy").build(tier, 0)
    with pytest.raises(CheckpointError, match="holds model 'spiral_net', not 'other'"):
        restore(path, meta, arrays, other)


def test_nan_loss_stops_naming_the_step_and_keeps_the_last_good_checkpoint(tmp_path):
    trainer = make_trainer(tmp_path)
    poison_at = trainer.steps_per_epoch + 2  # the third step of epoch 2
    original = trainer.train_step.run

    def run(indices, progress, lr):
        if progress.step == poison_at:
            trainer.data.train.inputs[:] = np.nan
        return original(indices, progress, lr)

    trainer.train_step.run = run
    with pytest.raises(TrainingDiverged, match=f"loss became nan at step {poison_at + 1} "
                                               r"\(epoch 2, batch 3\)"):
        trainer.fit()
    meta, arrays = read_checkpoint(trainer.last_path)
    assert meta["progress"]["epoch"] == 1 and meta["progress"]["batch"] == 0
    assert all(np.all(np.isfinite(a)) for a in arrays.values() if a.dtype.kind == "f")


def test_early_stopping_on_validation_loss(tmp_path):
    # With a learning rate of 0 the validation loss never improves on epoch 1's: patience 2 stops
    # training after epoch 3.
    recipe = RECIPE.with_overrides(epochs=10, patience=2, schedule="constant", warmup_epochs=0)
    trainer = make_trainer(tmp_path, recipe=recipe, make_model=linear_model)
    trainer.schedule.base_lr = 0.0
    history = trainer.fit()
    assert len(history) == 3 and trainer.progress.stopped_early
    assert trainer.progress.best_epoch == 1 and trainer.best_path.is_file()


@pytest.mark.parametrize("tier_name", ["numpy", "c"])
def test_weights_that_diverge_in_an_epochs_last_step_never_replace_the_good_checkpoint(
    tmp_path, tier_name
):
    # The loss check sees only the weights before a step: a step that makes them NaN at the end of
    # an epoch shows up first in the checkpoint due right after it, which must not be written.
    trainer = make_trainer(tmp_path, tier=load_tier(tier_name))
    poison_at = 2 * trainer.steps_per_epoch  # the last step of epoch 2
    original = trainer.optimizer.step

    def step(lr):
        original(lr)
        if trainer.progress.step + 1 == poison_at:
            param = next(iter(trainer.model.parameters().values()))
            values = trainer.tier.to_numpy(param.value)
            param.value = trainer.tier.from_numpy(np.full_like(values, np.nan))

    trainer.optimizer.step = step
    first_epoch = {}

    def keep_first_epoch(line):
        if not first_epoch:
            first_epoch.update(last=trainer.last_path.read_bytes(),
                               best=trainer.best_path.read_bytes())

    trainer.echo = keep_first_epoch
    with pytest.raises(TrainingDiverged) as error:
        trainer.fit()
    message = str(error.value)
    assert f"after step {poison_at}" in message and "hold NaN or Inf" in message
    assert f"The last good checkpoint is {trainer.last_path} (1 epochs done)" in message
    assert trainer.last_path.read_bytes() == first_epoch["last"]
    assert trainer.best_path.read_bytes() == first_epoch["best"]
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_run_diverging_in_its_first_epoch_names_no_checkpoint(tmp_path):
    trainer = make_trainer(tmp_path / "run", recipe=RECIPE.with_overrides(lr=1e38))
    with pytest.raises(TrainingDiverged, match="This run has written no checkpoint yet"):
        trainer.fit()
    assert not (tmp_path / "run").exists()


def final_state(trainer):
    """The model's parameters and buffers and the optimizer's state, as NumPy copies."""
    state = snapshot(trainer)
    for key, value in trainer.optimizer.state().items():
        state[f"optim/{key}"] = np.array(trainer.tier.to_numpy(value))
    state["optimizer steps"] = np.array(trainer.optimizer.steps)
    return state


@pytest.fixture(scope="module", params=["numpy", "c"])
def straight_run(request, tmp_path_factory):
    """(tier, final state) of a run never interrupted."""
    tier = load_tier(request.param)
    trainer = make_trainer(tmp_path_factory.mktemp("straight"), tier=tier)
    trainer.fit()
    return tier, final_state(trainer)


# Every call of one training step, in order; spiral_model has 6 parameters, so 6 updates.
STEP_CALLS = ["schedule", "forward", "loss", "backward", *(f"update {i}" for i in range(6)),
              "count_batch"]


def inject(trainer, call, at_step, action):
    """Run `action` once, just before `call` (one of STEP_CALLS) of global step `at_step`."""
    name, _, index = call.partition(" ")
    owner, method = {
        "forward": (trainer.model, "forward"),
        "loss": (trainer.model.loss, "value_and_grad"),
        "backward": (trainer.model, "backward"),
        "update": (trainer.optimizer, "update"),
        "schedule": (trainer, "schedule"),
        "count_batch": (trainer.progress, "count_batch"),
    }[name]
    original = getattr(owner, method)
    calls = []

    def wrapper(*args, **kwargs):
        if trainer.progress.step == at_step:
            calls.append(call)
            if len(calls) == int(index or 0) + 1:
                action()
        return original(*args, **kwargs)

    setattr(owner, method, wrapper)


def raise_keyboard_interrupt():
    raise KeyboardInterrupt


def press_ctrl_c():
    os.kill(os.getpid(), signal.SIGINT)


@pytest.mark.parametrize("call", STEP_CALLS)
@pytest.mark.parametrize("how", ["Ctrl-C", "KeyboardInterrupt at once"])
def test_an_interrupt_anywhere_in_a_step_resumes_bit_for_bit(tmp_path, straight_run, call, how):
    tier, expected = straight_run
    first = make_trainer(tmp_path, tier=tier)
    at_step = first.steps_per_epoch + 2  # the third step of epoch 2
    inject(first, call, at_step, press_ctrl_c if how == "Ctrl-C" else raise_keyboard_interrupt)
    with pytest.raises(Interrupted) as interrupted:
        first.fit()
    meta, _ = read_checkpoint(first.last_path)
    if how == "Ctrl-C":  # deferred: the step finishes, then its position is saved
        assert f"checkpoint saved to {first.last_path} (1 epochs and 3 batches done)" in str(
            interrupted.value)
        assert meta["progress"]["step"] == at_step + 1
    else:  # a half-done step is never saved: the checkpoint of epoch 1 stays
        assert "nothing saved" in str(interrupted.value)
        assert f"{first.last_path} (1 epochs done)" in str(interrupted.value)
        assert meta["progress"]["step"] == first.steps_per_epoch
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handler restored

    second = make_trainer(tmp_path, seed=123, tier=tier)  # other weights: all must come from disk
    second.resume()
    second.fit()
    state = final_state(second)
    assert state.keys() == expected.keys()
    for name, value in expected.items():
        np.testing.assert_array_equal(state[name], value, err_msg=name)


def test_a_second_ctrl_c_while_saving_says_nothing_was_saved(tmp_path, monkeypatch):
    trainer = make_trainer(tmp_path)
    at_step = trainer.steps_per_epoch + 2
    inject(trainer, "backward", at_step, press_ctrl_c)
    original_savez = np.savez

    def savez(file, **arrays):  # the save of the interrupt, midway
        if trainer.progress.step == at_step + 1:
            press_ctrl_c()
        original_savez(file, **arrays)

    monkeypatch.setattr(np, "savez", savez)
    with pytest.raises(Interrupted) as interrupted:
        trainer.fit()
    message = str(interrupted.value)
    assert f"interrupted while saving {trainer.last_path}: nothing saved" in message
    assert f"The last good checkpoint is {trainer.last_path} (1 epochs done)" in message
    assert "checkpoint saved" not in message
    assert read_checkpoint(trainer.last_path)[0]["progress"]["step"] == trainer.steps_per_epoch
    assert not list(tmp_path.glob(".*.tmp"))

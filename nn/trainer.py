"""The training loop: epochs of shuffled mini-batches, validation, early stopping, checkpoints.

Everything random is derived from the recipe's seed and a position (epoch, batch), never from a
running generator, so a run resumed from a checkpoint (even one written by Ctrl-C in the middle of
an epoch) continues exactly as the uninterrupted run would have. Ctrl-C takes effect between two
steps (nn/interrupts.py), so the checkpoint it writes holds one step's weights, optimizer state,
counters and data order, never half of a step.
"""

import json
import math
import os
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
from tqdm import tqdm

from nn.checkpoint import NotFiniteError, read_checkpoint, restore, save_checkpoint
from nn.interrupts import DeferredInterrupt, Interrupted
from nn.optimizers import make_optimizer
from nn.progress import Progress, position
from nn.schedules import Schedule
from nn.steps import NotFiniteLoss, make_step

RESUME_HINT = "; continue with the same command and --resume"
EVAL_BATCH = 500  # examples per forward pass when evaluating (memory, not results, depends on it)


class TrainingDiverged(RuntimeError):
    """The loss, the weights or the optimizer state became NaN or Inf; nothing was written."""


class Trainer:
    """Trains `model` (built on its tier) on `data` (an nn.data.DataSet) following `recipe`.

    Writes into `run_dir`: last.npz (every epoch and on Ctrl-C), best.npz (best validation loss),
    metrics.jsonl (one line per epoch). `record` is extra JSON saved in checkpoints (the data
    set's name, class names, normalizer) so prediction can rebuild everything from a checkpoint.
    `recorded` and `graph` choose how a step runs on a tier that records steps (nn/steps/).
    `dashboard` (an nn.dashboard.Dashboard, or None) is shown every step and epoch counted.
    With a `communicator` (nn/distributed/), this is one rank of a data-parallel run: each step
    trains on this rank's shard of the batch, and only rank 0 writes checkpoints and the log.
    """

    def __init__(self, model, data, recipe, run_dir, record=None, progress_bar=True, echo=print,
                 recorded=True, graph=False, dashboard=None, communicator=None):
        self.model = model
        self.tier = model.tier
        self.data = data
        self.recipe = recipe
        self.run_dir = Path(run_dir)
        self.record = dict(record or {})
        self.progress_bar = progress_bar
        self.echo = echo
        self.dashboard = dashboard
        self.steps_per_epoch = math.ceil(len(data.train) / recipe.batch_size)
        self.optimizer = make_optimizer(
            recipe.optimizer, self.tier, model.parameters(), recipe.weight_decay,
            **recipe.optimizer_options(),
        )
        self.schedule = Schedule(
            recipe.lr,
            recipe.schedule,
            total_steps=recipe.epochs * self.steps_per_epoch,
            steps_per_epoch=self.steps_per_epoch,
            warmup_steps=round(recipe.warmup_epochs * self.steps_per_epoch),
            gamma=recipe.gamma,
            step_epochs=recipe.step_epochs,
            min_factor=recipe.min_lr_factor,
        )
        self.progress = Progress()
        # (path, Progress) of the last checkpoint this run wrote or resumed from, else None
        self.last_good = None
        self.interrupt = DeferredInterrupt()
        # How every step runs, chosen once: from the host, on the device, or recorded.
        self.train_step = make_step(model, self.optimizer, data, recipe, recorded, graph, echo,
                                    communicator)
        self.communicator = communicator
        self.writes = communicator is None or communicator.rank == 0
        # (step number, loss, correct count, examples) of the steps not yet counted: a device
        # step's values stay on the device until they are logged or saved (`settle`).
        self.pending = []
        # True while a step (or an epoch's end) changes the state: a checkpoint then would mix two
        self.mid_update = False

    @property
    def last_path(self):
        return self.run_dir / "last.npz"

    @property
    def best_path(self):
        return self.run_dir / "best.npz"

    # -- the loop --------------------------------------------------------------------------

    def fit(self):
        """Train until the recipe's epochs are done or early stopping triggers.

        Ctrl-C finishes the step under way, saves a checkpoint of that position, and raises
        Interrupted (a KeyboardInterrupt) saying so; a KeyboardInterrupt in the middle of a step
        (a second Ctrl-C) saves nothing and keeps the last checkpoint. A NaN or Inf loss, or
        weights or optimizer state that became NaN or Inf by the time a checkpoint is due, raise
        TrainingDiverged without touching the checkpoints.
        """
        progress = self.progress
        with self.interrupt:
            try:
                while progress.epoch < self.recipe.epochs and not progress.stopped_early:
                    self.train_epoch()
                    self._stop_if_requested()
                    self.end_epoch()
                self._stop_if_requested()
            except KeyboardInterrupt:
                raise self._interrupted() from None
            except NotFiniteLoss as error:
                raise self._diverged(str(error)) from None
        return progress.history

    def _stop_if_requested(self):
        """At a step boundary: stop if Ctrl-C was pressed (fit then saves this position)."""
        if self.interrupt.requested:
            raise KeyboardInterrupt

    def _interrupted(self):
        """The Interrupted to raise after a KeyboardInterrupt, once this position is saved if it
        can be: not in the middle of a step, and not after a second Ctrl-C."""
        if self.mid_update or self.interrupt.forced:
            what = "interrupted at once, in the middle of a step or after a second Ctrl-C"
        else:
            try:
                self.save(self.last_path)
                return Interrupted(f"interrupted: checkpoint saved to {self.last_path} "
                                   f"({position(self.progress)} done){RESUME_HINT}")
            except KeyboardInterrupt:
                what = f"interrupted while saving {self.last_path}"
        hint = RESUME_HINT if self.last_good else ""
        return Interrupted(f"{what}: nothing saved. {self.last_good_text()}{hint}")

    def train_epoch(self):
        """Run the remaining batches of the current epoch (all of them unless resumed mid-way)."""
        recipe, progress, train = self.recipe, self.progress, self.data.train
        # Shuffle from (seed, epoch): the same order on every tier and after a resume.
        order = np.random.default_rng([recipe.seed, progress.epoch]).permutation(len(train))
        self.train_step.start_epoch(progress.epoch, order)
        self.model.train()
        bar = tqdm(
            total=self.steps_per_epoch,
            initial=progress.batch,
            desc=f"epoch {progress.epoch + 1}/{recipe.epochs}",
            disable=None if self.progress_bar else True,  # None: shown only on a terminal
            leave=False,
        )
        last_refresh = 0.0
        while progress.batch < self.steps_per_epoch:
            self._stop_if_requested()
            self.mid_update = True
            started = time.perf_counter()
            # This batch's examples (`chosen`: indices into the training set, the next
            # batch_size of `order`, fewer at the end), and one step on them at the schedule's
            # learning rate for this step (`self.train_step.run`, nn/steps/step.py).
            # BEGIN SOLUTION week 9, task Trainer.train_epoch
            chosen = order[progress.batch * recipe.batch_size:][: recipe.batch_size]
            loss, correct = self.train_step.run(chosen, progress, self.schedule(progress.step))
            # END SOLUTION
            self.pending.append((progress.step + 1, loss, correct, len(chosen)))
            progress.count_batch(len(chosen), time.perf_counter() - started)
            self.mid_update = False
            bar.update()
            if time.perf_counter() - last_refresh > 0.5:
                self.settle()
                last_refresh = time.perf_counter()
                bar.set_postfix_str(self._running_metrics(), refresh=False)
        self.settle()
        bar.close()

    def settle(self):
        """Count the pending steps' losses and correct counts into the progress (from the device:
        one synchronization for all of them); a NaN or Inf loss raises TrainingDiverged."""
        pending, self.pending = self.pending, []
        for step, loss, correct, count in pending:
            loss = float(loss)
            if not math.isfinite(loss):
                raise self._diverged(f"the loss became {loss} at step {step}")
            correct = round(float(correct))
            self.progress.count_result(loss, correct, count)
            if self.dashboard:
                self.dashboard.step(step, loss, correct / count, self.schedule(step - 1))

    def _diverged(self, what):
        """The TrainingDiverged to raise when `what` (a clause) went NaN or Inf."""
        return TrainingDiverged(
            f"{what}; training stopped. {self.last_good_text()}; try a lower --lr."
        )

    def _running_metrics(self):
        progress = self.progress
        seen = max(progress.seen, 1)
        rate = progress.seen / max(progress.seconds, 1e-9)
        return (
            f"loss={progress.loss_sum / seen:.4f} acc={progress.correct / seen:.4f} "
            f"img/s={rate:.0f}"
        )

    def end_epoch(self):
        """Validate, log, checkpoint, and decide on early stopping."""
        progress, recipe = self.progress, self.recipe
        metrics = {
            "epoch": progress.epoch + 1,
            "train_loss": progress.loss_sum / progress.seen,
            "train_accuracy": progress.correct / progress.seen,
            "lr": self.schedule(max(progress.step - 1, 0)),
            "seconds": progress.seconds,
            "images_per_second": progress.seen / progress.seconds,
        }
        started = time.perf_counter()
        if self.data.val is not None:
            metrics["val_loss"], metrics["val_accuracy"], _ = self.evaluate(self.data.val)
        metrics["eval_seconds"] = time.perf_counter() - started
        self.mid_update = True  # until the checkpoints and the log agree with the new epoch
        progress.history.append(metrics)
        if self.dashboard:
            self.dashboard.epoch(metrics)
        progress.epoch += 1
        progress.batch = progress.seen = progress.correct = 0
        progress.loss_sum = progress.seconds = 0.0

        # Remember the best validation loss and count the epochs without a better one (stop
        # after recipe.patience of them; 0: never); save last.npz, and best.npz when improved.
        # BEGIN SOLUTION week 9, task Trainer.end_epoch
        improved = "val_loss" in metrics and metrics["val_loss"] < progress.best_val_loss
        if improved:
            progress.best_val_loss = metrics["val_loss"]
            progress.best_epoch = progress.epoch
            progress.epochs_without_improvement = 0
        elif "val_loss" in metrics:
            progress.epochs_without_improvement += 1
            if recipe.patience and progress.epochs_without_improvement >= recipe.patience:
                progress.stopped_early = True
        self.save(self.last_path)
        if improved:
            self.save(self.best_path)
        # END SOLUTION
        self._write_metrics_log()
        self.mid_update = False
        # Long runs of tiny epochs (XOR: 300) print about 20 lines, not one per epoch.
        every = max(1, recipe.epochs // 20)
        if progress.epoch % every == 0 or progress.epoch == 1 or progress.stopped_early:
            self.echo(_epoch_line(metrics, recipe.epochs))
        if progress.stopped_early:
            self.echo(
                f"early stopping: no better validation loss for {recipe.patience} epochs "
                f"(best: epoch {progress.best_epoch})"
            )

    def evaluate(self, split):
        """(mean loss, accuracy, predicted classes) of the model in evaluation mode on `split`."""
        tier, model = self.tier, self.model
        # Evaluation mode, batches of EVAL_BATCH, the loss weighted by each batch's size; then
        # back to training mode. `predictions`: the predicted class of every example, in order.
        # BEGIN SOLUTION week 9, task Trainer.evaluate
        model.eval()
        loss_sum, predictions = 0.0, []
        for start in range(0, len(split), EVAL_BATCH):
            inputs = split.inputs[start:start + EVAL_BATCH]
            labels = split.labels[start:start + EVAL_BATCH]
            logits = model.forward(tier.from_numpy(self.data.normalizer(inputs)))
            targets = tier.from_numpy(model.loss.targets(labels))
            loss_sum += float(model.loss.value_and_grad(tier, logits, targets)[0]) * len(labels)
            predictions.append(model.loss.predict(tier.to_numpy(logits)))
        model.train()
        predictions = np.concatenate(predictions)
        # END SOLUTION
        return loss_sum / len(split), float((predictions == split.labels).mean()), predictions

    # -- checkpoints and logs -----------------------------------------------------------------

    def save(self, path):
        """Write a checkpoint of the current state to `path`; TrainingDiverged if not finite."""
        self.settle()
        if not self.writes:
            return
        progress = self.progress
        record = {**self.record, "recipe": self.recipe.to_json(), "progress": asdict(progress)}
        try:
            save_checkpoint(path, self.model, self.optimizer, record)
        except NotFiniteError as error:
            raise self._diverged(f"after step {progress.step}, {error}") from None
        if path == self.last_path:
            self.last_good = (path, Progress(epoch=progress.epoch, batch=progress.batch))

    def last_good_text(self):
        """Where the last good checkpoint is, for messages: one sentence without a full stop."""
        if self.last_good is None:
            return "This run has written no checkpoint yet"
        path, progress = self.last_good
        return f"The last good checkpoint is {path} ({position(progress)} done)"

    def resume(self, path=None):
        """Continue from checkpoint `path` (default: this run's last.npz)."""
        path = Path(path or self.last_path)
        meta, arrays = read_checkpoint(path)
        progress = Progress.from_checkpoint(path, meta.get("progress"), self.steps_per_epoch)
        restore(path, meta, arrays, self.model, self.optimizer)
        self.progress = progress
        self.last_good = (path, Progress(epoch=self.progress.epoch, batch=self.progress.batch))
        return meta

    def _write_metrics_log(self):
        """metrics.jsonl: one JSON object per completed epoch, rewritten whole each epoch so it
        always matches the checkpoint (a resumed run neither repeats nor loses a line)."""
        if not self.writes:
            return
        path = self.run_dir / "metrics.jsonl"
        temporary = path.with_suffix(".jsonl.tmp")
        temporary.write_text("".join(json.dumps(m) + "\n" for m in self.progress.history))
        os.replace(temporary, path)


def _epoch_line(metrics, epochs):
    line = (
        f"epoch {metrics['epoch']}/{epochs}: train loss {metrics['train_loss']:.4f} "
        f"acc {metrics['train_accuracy']:.4f}"
    )
    if "val_loss" in metrics:
        line += f" | val loss {metrics['val_loss']:.4f} acc {metrics['val_accuracy']:.4f}"
    return line + (
        f" | lr {metrics['lr']:.2e} | {metrics['seconds']:.1f} s, "
        f"{metrics['images_per_second']:.0f} img/s"
    )

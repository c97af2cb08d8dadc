"""Where training stands (`Progress`): counters, the best validation loss, the running sums of the
epoch under way and the history of the epochs done; saved in every checkpoint and checked, field
by field, when one is resumed."""

import math
from dataclasses import dataclass, field, fields

from nn.checkpoint import CheckpointError, meta_field
from nn.setting_checks import is_int, is_number


@dataclass
class Progress:
    """Where training stands; saved in every checkpoint."""

    epoch: int = 0  # completed epochs
    batch: int = 0  # batches done in the current epoch (non-zero only after an interruption)
    step: int = 0  # batches done in all
    best_val_loss: float = math.inf
    best_epoch: int = 0
    epochs_without_improvement: int = 0
    stopped_early: bool = False
    # running sums of the current epoch: loss * examples, correct predictions, examples, seconds
    loss_sum: float = 0.0
    correct: int = 0
    seen: int = 0
    seconds: float = 0.0
    history: list = field(default_factory=list)  # one dict of metrics per completed epoch

    def count_batch(self, examples, seconds):
        """Count one finished batch of `examples` (its loss and correct count: `count_result`)."""
        self.seen += examples
        self.seconds += seconds
        self.batch += 1
        self.step += 1

    def count_result(self, loss, correct, examples):
        """Add a finished batch's mean `loss` over `examples` and its `correct` predictions."""
        self.loss_sum += loss * examples
        self.correct += correct

    @classmethod
    def from_checkpoint(cls, path, values, steps_per_epoch):
        """The Progress saved in checkpoint `path` as `values` (a dict from its JSON), checked
        against the recipe's `steps_per_epoch`; CheckpointError naming what does not fit."""
        names = sorted(field.name for field in fields(cls))
        if not isinstance(values, dict) or sorted(values) != names:
            raise CheckpointError(f"checkpoint {path}: progress must hold exactly {names}")
        for name in ("epoch", "batch", "step", "best_epoch", "epochs_without_improvement",
                     "correct", "seen"):
            meta_field(path, values, name, is_int, "an integer >= 0")
        for name in ("loss_sum", "seconds"):
            meta_field(path, values, name, lambda v: is_number(v, 0.0), "a finite number >= 0")
        meta_field(path, values, "best_val_loss", lambda v: v == math.inf or is_number(v),
                   "a finite number or Infinity")
        meta_field(path, values, "stopped_early", lambda v: isinstance(v, bool), "a boolean")
        meta_field(path, values, "batch",
                   lambda v: v <= steps_per_epoch and (v == 0) == (values["seen"] == 0),
                   f"at most the {steps_per_epoch} of an epoch, and 0 exactly when seen is")
        meta_field(path, values, "history",
                   lambda v: len(v) == values["epoch"] and all(map(is_metrics, v)),
                   "one dict of numbers per epoch done")
        return cls(**values)


def is_metrics(metrics):
    """Whether `metrics` is an epoch's entry of the history (Trainer.end_epoch writes them)."""
    required = {"epoch", "train_loss", "train_accuracy", "lr", "seconds", "images_per_second",
                "eval_seconds"}
    return (isinstance(metrics, dict) and required <= set(metrics)
            and all(is_number(value) for value in metrics.values()))


def position(progress):
    """'3 epochs and 5 batches' done, for messages."""
    return f"{progress.epoch} epochs" + (f" and {progress.batch} batches" if progress.batch else "")

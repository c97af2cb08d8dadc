"""A live dashboard: TensorBoard event files written while a run trains (tensorboardX's writer).

    python -m nn.train --model lenet5 --data mnist --tensorboard    # into RUN_DIR/tensorboard/
    tensorboard --logdir runs/                                     # then open http://localhost:6006

The trainer (nn/trainer.py) calls `step` for every training step it counts and `epoch` at the
end of every epoch; nn.train creates the dashboard with `--tensorboard [DIR]` and closes it at
the end. What TensorBoard shows, by tab:

- Scalars: `step/loss`, `step/accuracy` (of each training batch, before its update) and
  `step/lr` against the step; `epoch/train_loss`, `epoch/train_accuracy`, `epoch/val_loss`,
  `epoch/val_accuracy`, `epoch/lr` and `epoch/images_per_second` against the epoch.
- Histograms (and Distributions): `weights/NAME` and `gradients/NAME` of every parameter at the
  end of each epoch (the gradient of the epoch's last batch), NAME as in the checkpoints.
- Images: `first_layer/filters`, the first conv's (or an image model's first linear layer's)
  filters, each scaled to [0, 1] on its own, at the end of each epoch.
- Text and HParams: the run's settings (the recipe, the tier, the model's summary, the command)
  and, when the run ends, its final figures.

The writer flushes every FLUSH_SECONDS from its own thread, and at every epoch's end, so that
TensorBoard shows a run while it trains. A resumed run appends a new event file to the same
folder, its steps continuing the first's.
"""

import sys

import numpy as np
from tensorboardX import SummaryWriter
from tensorboardX.summary import hparams

from nn.plots import filter_images
from nn.report import first_layer_weights

FLUSH_SECONDS = 5
MAX_FILTERS = 64  # as nn/plots.py's filters.png
EPOCH_SCALARS = ("train_loss", "train_accuracy", "val_loss", "val_accuracy", "lr",
                 "images_per_second")  # fmt: skip
FINAL = ("test_accuracy", "test_loss", "best_val_loss")  # the HParams tab's figures


class Dashboard:
    """Event files for TensorBoard in `log_dir`, for `model` trained by `recipe` on `tier_name`;
    the run's settings are written at once."""

    def __init__(self, log_dir, model, recipe, tier_name):
        self.writer = SummaryWriter(str(log_dir), flush_secs=FLUSH_SECONDS)
        self.model = model
        settings = {"model": model.name, "tier": tier_name, **recipe.to_json()}
        settings["model_options"] = str(settings["model_options"])
        text = "\n".join([
            "| setting | value |", "| --- | --- |",
            *(f"| {name} | {value} |" for name, value in settings.items()),
            "", f"command: `python -m nn.train {' '.join(sys.argv[1:])}`", "",
            *("    " + line for line in model.summary().splitlines()),
        ])  # fmt: skip
        self.writer.add_text("settings", text)
        # The HParams tab: these settings beside the run's final figures (written by `final`).
        self.hparams_summaries = hparams(settings, {f"final/{name}": 0.0 for name in FINAL})
        experiment, session_start, _ = self.hparams_summaries
        for summary in (experiment, session_start):
            self.writer.file_writer.add_summary(summary)

    def step(self, step, loss, accuracy, lr):
        """One training step's loss, accuracy on its batch and learning rate (steps from 1)."""
        self.writer.add_scalar("step/loss", loss, step)
        self.writer.add_scalar("step/accuracy", accuracy, step)
        self.writer.add_scalar("step/lr", lr, step)

    def epoch(self, metrics):
        """The epoch's figures (the trainer's metrics: `epoch` counts from 1), each parameter's
        weights and last gradient as histograms, the first layer's filters as images."""
        epoch, tier = metrics["epoch"], self.model.tier
        for name in EPOCH_SCALARS:
            if name in metrics:
                self.writer.add_scalar(f"epoch/{name}", metrics[name], epoch)
        for name, parameter in self.model.parameters().items():
            self.writer.add_histogram(f"weights/{name}", tier.to_numpy(parameter.value), epoch)
            if parameter.grad is not None:
                self.writer.add_histogram(f"gradients/{name}", tier.to_numpy(parameter.grad),
                                          epoch)  # fmt: skip
        filters = scaled_filters(first_layer_weights(self.model), self.model.input_shape)
        if filters is not None:
            self.writer.add_images("first_layer/filters", filters, epoch)
        self.writer.flush()

    def final(self, **figures):
        """The run's final figures (FINAL: test accuracy and loss, best validation loss) for the
        HParams tab; one that is not finite (no validation split) is left out."""
        for name, value in figures.items():
            if np.isfinite(value):
                self.writer.add_scalar(f"final/{name}", value, 0)

    def close(self):
        """End the HParams session and close the event file (flushing it)."""
        self.writer.file_writer.add_summary(self.hparams_summaries[2])
        self.writer.close()


def scaled_filters(weights, input_shape):
    """The first layer's filters as float32 images [K, C, h, w] in [0, 1] (each scaled by its
    own minimum and maximum), at most MAX_FILTERS; None when they are not images of 1 or 3
    channels."""
    filters = None if weights is None else filter_images(weights, input_shape)
    if filters is None or filters.shape[1] not in (1, 3):
        return None
    filters = filters[:MAX_FILTERS].astype(np.float32)
    low = filters.min(axis=(1, 2, 3), keepdims=True)
    spread = filters.max(axis=(1, 2, 3), keepdims=True) - low
    return np.divide(filters - low, spread, out=np.zeros_like(filters), where=spread > 0)

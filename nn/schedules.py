"""Learning-rate schedules: the learning rate as a pure function of the step number.

Pure functions of the step (no state) make a resumed run follow the same curve without saving
anything. Steps count mini-batches from 0; `steps_per_epoch` converts epoch-based settings.
Given code, not an exercise: week 9's trainer steps at a schedule's rate (its recipes warm up and
decay), and week 10 reads it and experiments with it.
"""

import math


class Schedule:
    """lr(step) = base_lr * warm-up factor * decay factor.

    kind: 'constant'; 'step' (times `gamma` every `step_epochs` epochs); 'exponential' (times
    `gamma` per epoch, applied smoothly per step); 'cosine' (from base_lr down to base_lr *
    `min_factor` over the steps after the warm-up, Loshchilov & Hutter's SGDR without restarts).
    Warm-up ramps linearly from base_lr / warmup_steps to base_lr over `warmup_steps` steps: large
    early steps from random weights can otherwise throw a network (notably with batchnorm) off.
    """

    KINDS = ("constant", "step", "exponential", "cosine")

    def __init__(
        self, base_lr, kind="constant", total_steps=1, steps_per_epoch=1, warmup_steps=0,
        gamma=0.1, step_epochs=1, min_factor=0.0,
    ):
        if kind not in self.KINDS:
            raise ValueError(f"schedule must be one of {list(self.KINDS)}, got {kind!r}")
        if base_lr <= 0 or not math.isfinite(base_lr):
            raise ValueError(f"lr must be a positive number, got {base_lr}")
        self.base_lr = base_lr
        self.kind = kind
        self.total_steps = max(1, total_steps)
        self.steps_per_epoch = max(1, steps_per_epoch)
        self.warmup_steps = warmup_steps
        self.gamma = gamma
        self.step_epochs = step_epochs
        self.min_factor = min_factor

    def __call__(self, step):
        """The learning rate for mini-batch number `step` (0-based)."""
        if step < self.warmup_steps:
            return self.base_lr * (step + 1) / self.warmup_steps
        return self.base_lr * self.decay(step)

    def decay(self, step):
        """The factor of base_lr at `step` after the warm-up: 1.0 for 'constant'."""
        epoch = step / self.steps_per_epoch
        if self.kind == "step":
            return self.gamma ** (int(epoch) // self.step_epochs)
        if self.kind == "exponential":
            return self.gamma**epoch
        if self.kind == "cosine":
            span = max(1, self.total_steps - self.warmup_steps)
            progress = min(1.0, (step - self.warmup_steps) / span)
            cosine = 0.5 * (1 + math.cos(math.pi * progress))
            return self.min_factor + (1 - self.min_factor) * cosine
        return 1.0

"""The step interface: what the trainer calls at every step, whichever way the step is taken."""


class NotFiniteLoss(ArithmeticError):
    """A step's loss is NaN or Inf; the step stopped before backward and the update."""


class Step:
    """One training step on one batch: forward, loss, backward, the optimizer's update."""

    def start_epoch(self, epoch, order):
        """Called before the first batch of `epoch`, whose examples come in `order` (indices into
        the training set; batch b is order[b * batch_size:][:batch_size])."""

    def run(self, indices, progress, lr):
        """One optimizer step at learning rate `lr` on the training examples `indices`: batch
        `progress.batch` of epoch `progress.epoch`, after `progress.step` steps in all.

        Returns (mean loss, correct predictions) of the batch before the update: numbers, or
        device values that `float()` reads (a step that leaves them on the device; the trainer
        reads them when it logs or saves).
        """
        raise NotImplementedError

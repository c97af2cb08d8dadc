"""The step from the host, on every tier: the batch's images are augmented and normalized on the
host, sent to the tier, and its loss and predictions come back at every step."""

import math

from nn.augment import batch_augmented
from nn.steps.step import NotFiniteLoss, Step


class HostStep(Step):
    """Steps of `model` with `optimizer` on `data`'s training split (NumPy arrays), by `recipe`."""

    def __init__(self, model, optimizer, data, recipe):
        self.model, self.optimizer, self.data, self.recipe = model, optimizer, data, recipe

    def run(self, indices, progress, lr):
        """(loss as a float, correct count as an int) of the batch `indices`; see Step.run."""
        recipe, model, train = self.recipe, self.model, self.data.train
        tier = model.tier
        images = batch_augmented(train.inputs[indices], recipe, progress.epoch, progress.batch)
        labels = train.labels[indices]
        inputs = tier.from_numpy(self.data.normalizer(images))
        targets = tier.from_numpy(model.loss.targets(labels))
        # Forward, the loss (`loss` a float, checked by checked_loss before anything changes),
        # backward, and the optimizer's update at learning rate `lr`.
        # BEGIN SOLUTION week 9, task HostStep.run
        logits = model.forward(inputs)
        loss, dlogits = model.loss.value_and_grad(tier, logits, targets)
        loss = checked_loss(loss, progress)
        model.backward(dlogits)
        self.optimizer.step(lr)
        # END SOLUTION
        correct = int((model.loss.predict(tier.to_numpy(logits)) == labels).sum())
        return loss, correct


def checked_loss(loss, progress):
    """The step's loss as a float; NotFiniteLoss, naming the step, when it is NaN or Inf."""
    loss = float(loss)  # a GPU tier's loss stays on the device until read (CONTRACT.md)
    if not math.isfinite(loss):
        raise NotFiniteLoss(f"the loss became {loss} at step {progress.step + 1} (epoch "
                            f"{progress.epoch + 1}, batch {progress.batch + 1})")
    return loss

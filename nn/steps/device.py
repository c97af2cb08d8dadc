"""The step with the training set on the device (a GPU tier with the device-data hooks,
nn/device_data.py): each batch is gathered there, and nothing comes back to the host."""

from nn.steps.step import Step


class DeviceStep(Step):
    """Steps of `model` with `optimizer` on the training set `data` (a DeviceData)."""

    def __init__(self, model, optimizer, data):
        self.model, self.optimizer, self.data = model, optimizer, data
        self.tier = model.tier

    def start_epoch(self, epoch, order):
        self.data.start_epoch(epoch, order)

    def run(self, indices, progress, lr):
        """(loss, correct count) of batch `progress.batch`, both left on the device."""
        return self.on(*self.data.batch(progress.batch), lr)

    def on(self, inputs, targets, labels, lr):
        """One step on a batch already on the device: (loss, correct count), both left there."""
        model = self.model
        logits = model.forward(inputs)
        loss, dlogits = model.loss.value_and_grad(self.tier, logits, targets)
        model.backward(dlogits)
        self.optimizer.step(lr)
        return loss, self.tier.correct_count(logits, labels)

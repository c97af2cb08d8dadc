"""The step from the host through the double-buffered pipeline (nn/host_pipeline.py): batch i + 1
is made on the host and copied while batch i computes; the loss and correct count stay on the
device, as a DeviceStep's."""

from nn.steps.device import DeviceStep
from nn.steps.step import Step


class PipelinedStep(Step):
    """Steps of `model` with `optimizer` on batches that `pipeline` (a HostPipeline) sends."""

    def __init__(self, model, optimizer, pipeline):
        self.pipeline = pipeline
        self.device_step = DeviceStep(model, optimizer, data=None)

    def start_epoch(self, epoch, order):
        self.pipeline.start_epoch(epoch, order)

    def run(self, indices, progress, lr):
        """(loss, correct count) of batch `progress.batch`, both left on the device."""
        pipeline, index = self.pipeline, progress.batch
        inputs, targets, labels = pipeline.batch(index)
        began = pipeline.begin_step()
        loss, correct = self.device_step.on(inputs, targets, labels, lr)
        pipeline.release(index, began)
        # The next batch is made on the host and its copy queued while this step runs.
        if index + 1 < pipeline.batches():
            pipeline.prepare(index + 1)
        return loss, correct

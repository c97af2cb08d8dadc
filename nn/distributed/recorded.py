"""The data-parallel step recorded once and launched again (nn/steps/recorded.py's RecordedStep,
for a rank's shards).

Op by op, a rank spends a step's time in Python: the layers' bookkeeping, the buckets' hooks, a
check and an allocation before each kernel. With half the batch per GPU the kernels take half as
long, but the Python work does not shrink, so two GPUs hardly step faster than one. Recorded, a
step is the same kernels on the same buffers, the NCCL groups among them in the order backward
launched them (the communicator records its own calls), without the Python between them.

The first step of each (global batch, shard) size runs through DataParallelStep.on, recorded;
later ones copy the shard's indices into the recording's buffers and launch it. A rank without
examples in a batch (a batch smaller than the ranks) steps op by op.
"""

from nn.distributed.launch import beat
from nn.distributed.step import shard
from nn.steps.recorded import RecordedStep


class RecordedDataParallelStep(RecordedStep):
    """A DataParallelStep (`step`, with its training set on the device) recorded per size."""

    def __init__(self, step):
        super().__init__(step)
        self.data = step.device_data  # the shard's examples are gathered from the device

    def run(self, indices, progress, lr):
        """(mean loss, correct count) of the whole global batch `indices`, summed over the ranks:
        values `float()` reads."""
        beat()  # the launcher's sign that this rank still steps
        step = self.device_step
        start, stop = shard(len(indices), step.communicator.rank, step.communicator.size)
        if stop == start:
            return step.run(indices, progress, lr)
        first = progress.batch * self.data.recipe.batch_size + start
        size = (len(indices), stop - start)  # the global batch's and the shard's

        def on_shard(inputs, targets, labels):
            return step.on(inputs, targets, labels, lr, len(indices))

        return self.launch(progress.batch, size, first, stop - start, lr, on_shard)

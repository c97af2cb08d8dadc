"""The data-parallel step: every rank takes its shard of the global batch, and the gradients are
summed over the ranks (in buckets, during backward) before one identical optimizer step.

Each rank's loss is the mean over its shard, so its gradient is scaled by shard / batch before the
sum: the sum is then the gradient of the global batch's mean loss, whatever the shard sizes (the
last batch of an epoch may not split evenly; a rank with no example contributes zeros). Every rank
holds the same weights and the same optimizer state, gets the same summed gradients (NCCL's
all-reduce gives every rank the same bits), and so takes the same step. Layer buffers (batchnorm's
running statistics, computed from each rank's own shard) are set to rank 0's after every step, as
DistributedDataParallel's broadcast_buffers does, so that the ranks stay identical.
"""

import numpy as np

from nn.augment import batch_augmented
from nn.distributed.buckets import BUCKET_BYTES, GradientBuckets
from nn.distributed.launch import beat
from nn.steps.step import Step


def shard(count, rank, size):
    """(start, stop) of rank `rank`'s examples among `count`: `size` contiguous shards whose
    sizes differ by one at most, the larger first (np.array_split's)."""
    base, extra = divmod(count, size)
    start = rank * base + min(rank, extra)
    return start, start + base + (rank < extra)


class DataParallelStep(Step):
    """Steps of `model` with `optimizer` on this rank's shards of `data`'s batches, summed through
    `communicator`. `device_data` (a DeviceData, or None) holds the training set on the device;
    without it, each shard is made on the host as HostStep makes a batch."""

    def __init__(
        self,
        model,
        optimizer,
        data,
        recipe,
        communicator,
        device_data=None,
        bucket_bytes=BUCKET_BYTES,
    ):
        self.model, self.optimizer, self.data, self.recipe = model, optimizer, data, recipe
        self.tier, self.communicator, self.device_data = model.tier, communicator, device_data
        self.buckets = GradientBuckets(model, communicator, bucket_bytes)
        # Every rank starts from rank 0's weights and buffers.
        communicator.broadcast([p.value for p in model.parameters().values()])
        self._broadcast_buffers()

    def start_epoch(self, epoch, order):
        self.epoch = epoch
        if self.device_data is not None:
            self.device_data.start_epoch(epoch, order)

    def run(self, indices, progress, lr):
        """(mean loss, correct count) of the whole global batch `indices`, summed over the ranks:
        values `float()` reads."""
        beat()  # the launcher's sign that this rank still steps
        start, stop = shard(len(indices), self.communicator.rank, self.communicator.size)
        if stop == start:
            return self._without_examples(lr)
        return self.on(*self._shard(indices, progress, start, stop), lr, len(indices))

    def on(self, inputs, targets, labels, lr, batch):
        """One step on this rank's shard (inputs, targets, labels on the tier) of a global batch of
        `batch` examples: (mean loss, correct count) of the whole global batch, summed over the
        ranks, left on the device. The same calls at every step of the same shapes, so that a
        recording can make them again (nn/distributed/recorded.py)."""
        tier, model = self.tier, self.model
        logits = model.forward(inputs)
        loss, dlogits = model.loss.value_and_grad(tier, logits, targets)
        # The shard's part of the global batch's mean loss, and of its gradient.
        share = labels.shape[0] / batch
        self.buckets.start()
        model.backward(tier.scale(dlogits, share))
        return self._finish(lr, self._one_value(loss, share), self._correct(logits, labels))

    def _without_examples(self, lr):
        """A rank without examples in this batch: zeros, all-reduced as backward would."""
        self.buckets.zeros(self.tier)
        loss_part, correct = (self.tier.from_numpy(np.zeros(1, np.float32)) for _ in range(2))
        return self._finish(lr, loss_part, correct)

    def _finish(self, lr, loss_part, correct):
        """The summed gradients' step, and the sums of the ranks' losses and correct counts."""
        self.buckets.finish()
        self.optimizer.step(lr)
        self._broadcast_buffers()
        self.communicator.all_reduce([loss_part, correct])
        self.communicator.wait()
        return Total(self.tier, loss_part), Total(self.tier, correct)

    def _shard(self, indices, progress, start, stop):
        """(inputs, targets, labels) of examples start..stop of the global batch, on the tier."""
        tier, recipe = self.tier, self.recipe
        if self.device_data is not None:
            data = self.device_data
            first = progress.batch * recipe.batch_size + start
            offsets = [o[first : first + stop - start] for o in data.offsets or ()]
            return data.gather(data.order[first : first + stop - start], *offsets)
        train = self.data.train
        # The global batch's draws (HostStep's), of which this rank keeps its shard's.
        images = batch_augmented(train.inputs[indices], recipe, progress.epoch, progress.batch)
        labels = train.labels[indices[start:stop]]
        inputs = tier.from_numpy(self.data.normalizer(images[start:stop]))
        targets = tier.from_numpy(self.model.loss.targets(labels))
        return inputs, targets, labels

    def _one_value(self, loss, scale):
        """loss * scale as a one-element array of the tier (a device loss stays on the device)."""
        array = getattr(loss, "array", None)
        if array is None:
            array = self.tier.from_numpy(np.array([float(loss)], np.float32))
        return self.tier.scale(array, float(scale))

    def _correct(self, logits, labels):
        """The shard's correct predictions as a one-element float32 array of the tier."""
        if hasattr(self.tier, "correct_count") and not isinstance(labels, np.ndarray):
            return self.tier.correct_count(logits, labels).array
        predicted = self.model.loss.predict(self.tier.to_numpy(logits))
        return self.tier.from_numpy(np.array([(predicted == labels).sum()], np.float32))

    def _broadcast_buffers(self):
        arrays = [value for value in self.model.buffers().values() if hasattr(value, "shape")]
        if arrays:
            self.communicator.broadcast(arrays)


class Total:
    """A value summed over the ranks: a one-element device `array`, read by `float()`."""

    def __init__(self, tier, array):
        self.tier, self.array = tier, array

    def __float__(self):
        return float(self.tier.to_numpy(self.array)[0])


def ranks_agreeing(model, communicator):
    """How many ranks hold exactly rank 0's weights and buffers (all of them, bit for bit, when
    every step was identical): each compares its own with a broadcast copy of rank 0's."""
    tier = model.tier
    mine = [p.value for p in model.parameters().values()]
    mine += [value for value in model.buffers().values() if hasattr(value, "shape")]
    copies = [tier.from_numpy(tier.to_numpy(value)) for value in mine]
    communicator.broadcast(copies)
    same = all(np.array_equal(tier.to_numpy(a), tier.to_numpy(b), equal_nan=True)
               for a, b in zip(mine, copies, strict=True))  # fmt: skip
    agreeing = tier.from_numpy(np.array([float(same)], np.float32))
    communicator.all_reduce([agreeing])
    communicator.wait()
    return round(float(tier.to_numpy(agreeing)[0]))

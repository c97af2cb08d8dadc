"""The training set on the device (GPU tiers): uploaded once, each batch gathered there by index.

A tier with the device-data hooks (CONTRACT.md, "Training with the data on the device": `take`,
`shift_images`, `correct_count`) trains without sending a batch from the host at every step: the
normalized training inputs, their loss targets and their labels go to the device once, the
epoch's order (the same permutation as on every other tier) once per epoch, and each step gathers
its rows there. Random shifts are drawn on the host by nn/augment.py's `batch_draws`, an epoch's
worth at a time, and applied on the device, so a run sees the same batches on every tier. A
recipe with `flip` trains from the host (nn/host_pipeline.py), and so does a training set whose
float32 copy would pass DEVICE_BYTES_LIMIT.
"""

import numpy as np

from nn.augment import batch_draws

HOOKS = ("take", "shift_images", "correct_count")
# The device copy is the normalized float32 training set, made on the host first: past this size
# the batches go from the host one at a time instead (Tiny ImageNet's 95,000 training images
# would take 4.7 GB twice).
DEVICE_BYTES_LIMIT = 1 << 30


def device_data(tier, data, loss, recipe):
    """A DeviceData for training `data` on `tier`, or None when it trains from the host."""
    if recipe.flip or not all(hasattr(tier, hook) for hook in HOOKS):
        return None
    if data.train.inputs.size * np.dtype(np.float32).itemsize > DEVICE_BYTES_LIMIT:
        return None
    return DeviceData(tier, data, loss, recipe)


class DeviceData:
    """The training split on the device; `batch(b)` gives batch b of the current epoch."""

    def __init__(self, tier, data, loss, recipe):
        self.tier, self.recipe = tier, recipe
        train = data.train
        self.inputs = tier.from_numpy(data.normalizer(train.inputs))
        targets, labels = loss.targets(train.labels), train.labels.astype(np.int64)
        self.labels = tier.from_numpy(labels)
        # Cross-entropy's targets are the labels themselves: one array, one gather a step.
        same = targets.dtype == labels.dtype and np.array_equal(targets, labels)
        self.targets = self.labels if same else tier.from_numpy(targets)
        # A shifted-in pixel is black (0) before normalization: its value after, per channel.
        blank = np.zeros((1, *train.inputs.shape[1:]), dtype=train.inputs.dtype)
        self.fill = tier.from_numpy(data.normalizer(blank)[0, :, 0, 0].copy()) if (
            train.inputs.ndim == 4
        ) else None
        self.size = len(train)

    def start_epoch(self, epoch, order):
        """Upload the epoch's order and, with shifts, every batch's offsets."""
        recipe, tier = self.recipe, self.tier
        self.order = tier.from_numpy(order.astype(np.int64))
        self.offsets = None
        if recipe.shift and self.fill is not None:
            rows, cols = [], []
            for start in range(0, self.size, recipe.batch_size):
                count = min(recipe.batch_size, self.size - start)
                batch = start // recipe.batch_size
                r, c, _ = batch_draws(recipe, epoch, batch, count)
                rows.append(r)
                cols.append(c)
            self.offsets = (
                tier.from_numpy(np.concatenate(rows).astype(np.int64)),
                tier.from_numpy(np.concatenate(cols).astype(np.int64)),
            )

    def batch(self, index):
        """(inputs, targets, labels) of batch `index` of this epoch, all on the device."""
        start = index * self.recipe.batch_size
        chosen = self.order[start : start + self.recipe.batch_size]
        offsets = [rows_or_cols[start : start + chosen.shape[0]]
                   for rows_or_cols in self.offsets or ()]  # fmt: skip
        return self.gather(chosen, *offsets)

    def gather(self, chosen, rows=None, cols=None):
        """(inputs, targets, labels) of the examples at device indices `chosen`, each image
        shifted by (rows, cols) when given."""
        inputs = self.tier.take(self.inputs, chosen)
        if rows is not None:
            inputs = self.tier.shift_images(inputs, rows, cols, self.recipe.shift, self.fill)
        targets = self.tier.take(self.targets, chosen)
        labels = targets if self.targets is self.labels else self.tier.take(self.labels, chosen)
        return inputs, targets, labels

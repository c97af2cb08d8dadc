"""Batches from the host through pinned buffers and a copy stream, double-buffered (week 24).

When the training set stays on the host (nn/device_data.py: too large for the device, or a recipe
with random flips), every step's batch must cross to the GPU. Sent as HostStep sends it, from
ordinary memory on the stream the kernels run on, the copy waits for the step before it and the
next step waits for the copy: the GPU idles while the batch crosses. Here, on a tier with the
stream hooks (the nvcc variant: `pinned_empty`, `Stream`, `Event`, `upload`), each batch goes into
one of two page-locked buffers and is copied on a stream of its own into one of two device
buffers, so that batch i + 1 crosses while batch i computes:

    host      prepare 0 | prepare 1         | prepare 2         | ...
    copy      copy 0    |   copy 1          |   copy 2          |
    compute             | step 0            | step 1            | step 2

What crosses depends on the tier. With the hook `augment_images` (the nvcc variant), the host only
gathers the batch's raw uint8 images and draws its shifts and flips (nn/augment.py's
`batch_draws`: the generator HostStep's augmentation uses); the images (a quarter of the bytes of
float32) and the draws cross, and a kernel queued on the copy stream after them shifts, flips and
normalizes the batch on the device, through a table of what the normalizer makes of each pixel
value (`pixel_levels`). Without it, the host makes the whole float32 batch (gathered, augmented,
normalized), and that crosses. Either way the step gets the very batch HostStep makes, bit for bit.

Two events per slot keep the buffers safe: `copied` (recorded on the copy stream after the copy;
the step waits for it before reading the device buffer, the host before refilling the pinned one)
and `free` (recorded on the default streams after the step that read the device buffer; the next
copy into it waits for it). Nothing waits on the host but the refill of a pinned buffer, two
batches later.
"""

import numpy as np

from nn.augment import batch_augmented, batch_draws

HOOKS = ("pinned_empty", "Stream", "Event", "upload", "correct_count")
DEVICE_AUGMENT_HOOK = "augment_images"  # optional: without it, batches are made on the host
SLOTS = 2
PIXEL_VALUES = 256  # of a uint8 pixel


def host_pipeline(tier, data, loss, recipe, timed=False):
    """A HostPipeline for training `data` on `tier`, or None when the tier has no stream hooks."""
    if not all(hasattr(tier, hook) for hook in HOOKS):
        return None
    return HostPipeline(tier, data, loss, recipe, timed)


def pixel_levels(normalizer, channels):
    """float32 [channels, 256]: what `normalizer` makes of each pixel value in each channel, the
    table the device normalizes by (the host's own float32 results, so the same to the bit)."""
    values = np.arange(PIXEL_VALUES, dtype=np.uint8)
    values = np.broadcast_to(values, (1, channels, 1, PIXEL_VALUES))
    return np.ascontiguousarray(normalizer(values)[0, :, 0, :])


class Slot:
    """One of the two buffers: pinned host arrays and device arrays of the same shapes (`shapes`:
    what crosses), device arrays made there from them (`made`), two events."""

    def __init__(self, tier, shapes, made):
        self.host = {
            name: tier.pinned_empty(shape, dtype) for name, (shape, dtype) in shapes.items()
        }
        self.device = {name: tier.empty(shape, dtype)
                       for name, (shape, dtype) in (shapes | made).items()}  # fmt: skip
        self.copied = tier.Event().record()
        self.free = tier.Event().record()
        self.count = 0  # examples of the batch in the slot


class HostPipeline:
    """The training split of `data` (NumPy arrays) sent batch by batch through two slots.

    `prepare(b)` readies batch b of the epoch on the host and queues its copy (and, where the
    device augments, the kernel that makes the batch there); `batch(b)` gives its
    device arrays (inputs, targets, labels), the default streams made to wait for the copy;
    `release(b)` marks the end of the step that read them. With `timed`, `timeline` collects
    (batch, "copy" or "compute", start event, end event) for every batch, from timing events
    recorded around each copy (with the device's augmentation, which follows it on the copy
    stream) and each step (`begin_step`).
    """

    def __init__(self, tier, data, loss, recipe, timed=False):
        self.tier, self.data, self.loss, self.recipe = tier, data, loss, recipe
        train, size = data.train, recipe.batch_size
        labels = train.labels[:1].astype(np.int64)
        targets = loss.targets(labels)
        # Cross-entropy's targets are the labels themselves: one array, one copy a batch.
        self.same_targets = targets.dtype == labels.dtype and np.array_equal(targets, labels)
        inputs = ((size, *train.inputs.shape[1:]), np.float32)
        # Images augmented on the device: their uint8 pixels and the draws cross, not the inputs.
        self.levels = None
        raw_images = train.inputs.ndim == 4 and train.inputs.dtype == np.uint8
        if raw_images and hasattr(tier, DEVICE_AUGMENT_HOOK):
            self.levels = tier.from_numpy(pixel_levels(data.normalizer, train.inputs.shape[1]))
            shapes = {"images": (inputs[0], np.uint8), "rows": ((size,), np.int64),
                      "cols": ((size,), np.int64), "flips": ((size,), np.uint8)}  # fmt: skip
            made = {"inputs": inputs}
        else:
            shapes, made = {"inputs": inputs}, {}
        shapes["labels"] = ((size,), np.int64)
        if not self.same_targets:
            shapes["targets"] = ((size, *targets.shape[1:]), targets.dtype)
        self.slots = [Slot(tier, shapes, made) for _ in range(SLOTS)]
        self.stream = tier.Stream()
        self.timeline = [] if timed else None
        self.staged = {}  # batch index -> its slot, for the batches prepared and not yet read
        self.epoch, self.order = 0, np.arange(0)

    def start_epoch(self, epoch, order):
        self.epoch, self.order, self.staged = epoch, order, {}

    def batches(self):
        """How many batches the epoch has."""
        return -(-len(self.order) // self.recipe.batch_size)

    def prepare(self, index):
        """Ready batch `index` of the epoch on the host into a free slot, and queue its copy (and
        its augmentation on the device, where the tier has the hook)."""
        recipe, train, tier = self.recipe, self.data.train, self.tier
        slot = self.slots[index % SLOTS]
        slot.copied.synchronize()  # the pinned buffer's last copy is done: it may be refilled
        chosen = self.order[index * recipe.batch_size :][: recipe.batch_size]
        count = slot.count = len(chosen)
        if self.levels is None:  # the whole batch made here, as HostStep makes it
            images = batch_augmented(train.inputs[chosen], recipe, self.epoch, index)
            values = {"inputs": self.data.normalizer(images)}
        else:  # the raw pixels and the draws; the device makes the batch from them
            rows, cols, flips = batch_draws(recipe, self.epoch, index, count)
            values = {"images": train.inputs[chosen], "rows": rows, "cols": cols, "flips": flips}
        values["labels"] = train.labels[chosen]
        if not self.same_targets:
            values["targets"] = self.loss.targets(values["labels"])
        for name, value in values.items():
            slot.host[name][:count] = value
        slot.free.wait(self.stream)  # the step that last read the device buffers is done
        began = self._mark(self.stream)
        device = {name: array[:count] for name, array in slot.device.items()}
        for name in values:
            tier.upload(device[name], slot.host[name][:count], self.stream)
        if self.levels is not None:
            draws = (device["rows"], device["cols"], device["flips"])
            tier.augment_images(device["images"], *draws, recipe.shift, self.levels,
                                device["inputs"], self.stream)  # fmt: skip
        slot.copied.record(self.stream)
        self._add(index, "copy", began, self.stream)
        self.staged[index] = slot

    def batch(self, index):
        """(inputs, targets, labels) of batch `index` on the device; the kernels queued from now on
        wait for its copy (prepared now if it was not)."""
        if index not in self.staged:
            self.prepare(index)
        slot = self.staged[index]
        slot.copied.wait()
        count = slot.count
        labels = slot.device["labels"][:count]
        targets = labels if self.same_targets else slot.device["targets"][:count]
        return slot.device["inputs"][:count], targets, labels

    def begin_step(self):
        """A timing event at the start of a step on the default streams (None when not timed)."""
        return self._mark()

    def release(self, index, began=None):
        """The step on batch `index` (begun at `began`) is queued: its device buffers are free
        once it has run."""
        self.staged.pop(index).free.record()
        self._add(index, "compute", began)

    def _mark(self, stream=None):
        return self.tier.Event(timing=True).record(stream) if self.timeline is not None else None

    def _add(self, index, kind, began, stream=None):
        if self.timeline is not None:
            self.timeline.append((index, kind, began, self._mark(stream)))

"""Device steps recorded once and launched again, on a tier that records them (stage 4: the hooks
record_step and copy_into, and in the nvcc variant capture_graph; CONTRACT.md, "Recorded steps").

With the training set on the device (nn/device_data.py), every step makes the same op calls on
arrays of the same shapes. So the first step of each batch size runs through the layers as usual,
recorded; later steps launch the recording: the same kernels on the same buffers (every buffer
allocated once), without the Python work between them. Before each launch, the batch's indices
(and shift offsets) are copied into the buffers the recording reads; the learning rate of the
step replaces the recorded one by name. With `graph` (the nvcc variant), the recording is
captured as a CUDA graph and each step is one launch (stage4_cuda/csrc/graph.cu).

What a recording cannot follow makes the trainer take device steps op by op instead, saying why
(`why_not_recorded`): a step that changes other scalars at every step (Adam's bias corrections,
dropout's seeds).
"""

import math

import numpy as np

from nn.layers.dropout import Dropout
from nn.steps.step import Step

HOOKS = ("record_step", "copy_into")
RECORDABLE_OPTIMIZERS = ("sgd", "momentum", "nesterov", "rmsprop")


def why_not_recorded(tier, model, recipe, device_data, graph=False):
    """'' when training steps on `tier` can be recorded (as CUDA graphs with `graph`), else why
    not."""
    if not all(hasattr(tier, hook) for hook in HOOKS):
        return f"the {tier.NAME} tier does not record steps (stage 4's variants do)"
    if graph and not hasattr(tier, "capture_graph"):
        return f"the {tier.NAME} tier does not capture CUDA graphs (stage 4's nvcc variant does)"
    if device_data is None:
        return "the training set is not on the device"
    if recipe.optimizer not in RECORDABLE_OPTIMIZERS:
        return (f"{recipe.optimizer} changes its scalars at every step (one of "
                f"{', '.join(RECORDABLE_OPTIMIZERS)} can be recorded)")  # fmt: skip
    if any(isinstance(layer, Dropout) and layer.p > 0 for layer in _layers(model.net)):
        return "dropout draws its mask from a new seed at every step"
    return ""


def _layers(layer):
    """`layer` and every layer inside it."""
    yield layer
    for child in layer.children().values():
        yield from _layers(child)


class RecordedStep(Step):
    """A DeviceStep (`device_step`) recorded once per batch size and launched again, each launch
    as one CUDA graph with `graph`."""

    def __init__(self, device_step, graph=False):
        self.device_step, self.graph = device_step, graph
        self.tier, self.data = device_step.tier, device_step.data
        self.launchers = {}  # batch size (the key) -> (Recording or Graph, loss, correct count)
        self.buffers = {}  # batch size -> the arrays a recording reads its batch from
        self.history = self.on_host = None  # {"loss", "correct": [steps of the epoch]}

    def start_epoch(self, epoch, order):
        """The epoch's order on the device; its per-step losses and correct counts stay there."""
        self.device_step.start_epoch(epoch, order)
        steps = math.ceil(len(order) / self.data.recipe.batch_size)
        self.history = {name: self.tier.from_numpy(np.zeros(steps, np.float32))
                        for name in ("loss", "correct")}  # fmt: skip
        self.on_host = None

    def run(self, indices, progress, lr):
        """Batch `progress.batch` of this epoch at learning rate `lr`: (loss, correct count),
        read from the device when first asked for."""
        data = self.data
        start = progress.batch * data.recipe.batch_size
        count = min(data.recipe.batch_size, data.size - start)
        return self.launch(progress.batch, count, start, count, lr,
                           lambda *batch: self.device_step.on(*batch, lr))  # fmt: skip

    def launch(self, index, key, start, count, lr, step):
        """Examples start..start + count of the epoch's order through the recording kept under
        `key` at learning rate `lr`, made now by running `step(inputs, targets, labels)` on them
        when there is none yet: (loss, correct count), kept at `index` of the epoch's history."""
        tier, data = self.tier, self.data
        buffers = self._buffers(count)
        tier.copy_into(buffers[0], data.order, start=start, count=count)
        for buffer, offsets in zip(buffers[1:], data.offsets or (), strict=True):
            tier.copy_into(buffer, offsets, start=start, count=count)
        if key in self.launchers:
            launcher, loss, correct = self.launchers[key]
            launcher.launch(lr=lr)
            self.device_step.optimizer.count_step()  # the launch replayed its step's update
        else:  # the first step of this kind: run it through the layers, recorded
            (loss, correct), recording = tier.record_step(lambda: step(*data.gather(*buffers)))
            launcher = tier.capture_graph(recording) if self.graph else recording
            self.launchers[key] = launcher, loss, correct
        tier.copy_into(self.history["loss"], loss.array, at=index)
        tier.copy_into(self.history["correct"], correct.array, at=index)
        self.on_host = None
        return StepValue(self, "loss", index), StepValue(self, "correct", index)

    def read(self, name, index):
        """history[name][index], from one copy of the epoch's histories to the host (made at the
        first read after a step, so that reading a whole epoch's values waits once)."""
        if self.on_host is None:
            self.on_host = {key: self.tier.to_numpy(values) for key, values in self.history.items()}
        return self.on_host[name][index]

    def _buffers(self, count):
        """(indices, [shift rows, shift cols]) for batches of `count`, allocated once."""
        if count not in self.buffers:
            shifted = self.data.offsets is not None
            self.buffers[count] = tuple(
                self.tier.from_numpy(np.zeros(count, np.int64)) for _ in range(3 if shifted else 1)
            )
        return self.buffers[count]


class StepValue:
    """A recorded step's loss or correct count, read by `float()` (as a DeviceScalar is)."""

    def __init__(self, steps, name, index):
        self.steps, self.name, self.index = steps, name, index

    def __float__(self):
        return float(self.steps.read(self.name, self.index))

"""The double-buffered host pipeline (nn/host_pipeline.py) without a GPU: the NumPy tier with
stand-ins for the stream hooks that log what would be queued where (tests only). Checked: the
pipelined trainer sends exactly HostStep's batches (the same augmentation draws: the same weights
bit for bit), and the order of the queued work keeps both buffers safe while batch i + 1 is
copied during step i."""

import numpy as np
import pytest
from conftest import load_tier

from nn.data import DataSet, Normalizer, Split
from nn.host_pipeline import HOOKS, host_pipeline
from nn.layers import Flatten, Linear, Sequential
from nn.network import Model
from nn.recipes import Recipe
from nn.steps import HostStep, PipelinedStep
from nn.trainer import Trainer

RECIPE = Recipe(epochs=2, batch_size=16, optimizer="momentum", lr=0.05, val_size=0, shift=2,
                flip=True, patience=0)  # fmt: skip


class LoggedStreams:
    """The NumPy tier plus the stream hooks, each logging (what, stream or event, detail)."""

    def __init__(self, tier, log):
        self.tier, self.log = tier, log
        self.NAME = tier.NAME
        tier_log = log

        class Event:
            count = 0

            def __init__(self, timing=False):
                Event.count += 1
                self.name = f"event{Event.count}"

            def record(self, stream=None):
                tier_log.append(("record", self.name, getattr(stream, "name", "default")))
                return self

            def wait(self, stream=None):
                tier_log.append(("wait", self.name, getattr(stream, "name", "default")))

            def synchronize(self):
                tier_log.append(("synchronize", self.name, "host"))

        class Stream:
            name = "copy"

        self.Event, self.Stream = Event, Stream

    def __getattr__(self, name):
        return getattr(self.tier, name)

    def pinned_empty(self, shape, dtype=np.float32):
        return np.full(shape, np.nan if np.dtype(dtype).kind == "f" else -1, dtype)

    def upload(self, destination, source, stream=None):
        self.log.append(("upload", destination.shape, getattr(stream, "name", "default")))
        destination[...] = source

    def correct_count(self, logits, labels):
        return float((np.argmax(logits, axis=1) == labels).sum())


def images(count=72, seed=0):
    rng = np.random.default_rng(seed)
    inputs = rng.integers(0, 256, (count, 1, 8, 8), dtype=np.uint8)
    labels = rng.integers(0, 3, count).astype(np.int64)
    train = Split(inputs, labels)
    return DataSet("pictures", train, None, train, ["a", "b", "c"], Normalizer.fit(inputs))


def model(tier):
    return Model("flat", Sequential(Flatten(), Linear(64, 3)), (1, 8, 8), 3,
                 "cross_entropy").build(tier, 0)  # fmt: skip


def test_the_pipeline_needs_every_hook():
    tier = load_tier("numpy")
    assert host_pipeline(tier, images(), model(tier).loss, RECIPE) is None
    assert set(HOOKS) == {"pinned_empty", "Stream", "Event", "upload", "correct_count"}


def test_pipelined_training_is_host_step_training_bit_for_bit(tmp_path):
    numpy_tier, log = load_tier("numpy"), []
    tier = LoggedStreams(numpy_tier, log)
    data = images()
    pipelined = Trainer(model(tier), data, RECIPE, tmp_path / "p", progress_bar=False,
                        echo=lambda line: None)  # fmt: skip
    assert isinstance(pipelined.train_step, PipelinedStep)
    pipelined.fit()
    plain = Trainer(model(numpy_tier), data, RECIPE, tmp_path / "h", progress_bar=False,
                    echo=lambda line: None)  # fmt: skip
    assert isinstance(plain.train_step, HostStep)
    plain.fit()
    for (name, ours), theirs in zip(pipelined.model.parameters().items(),
                                    plain.model.parameters().values(), strict=True):  # fmt: skip
        assert np.array_equal(ours.value, theirs.value), name
    assert [m["train_loss"] for m in pipelined.progress.history] == pytest.approx(
        [m["train_loss"] for m in plain.progress.history], rel=1e-6)  # fmt: skip


def test_each_copy_waits_for_its_buffers_and_overlaps_the_step_before(tmp_path):
    log = []
    tier = LoggedStreams(load_tier("numpy"), log)
    trainer = Trainer(model(tier), images(), RECIPE.with_overrides(epochs=1), tmp_path,
                      progress_bar=False, echo=lambda line: None)  # fmt: skip
    pipeline = trainer.train_step.pipeline
    (slot_a, slot_b) = pipeline.slots
    del log[:]
    trainer.train_epoch()
    events = {slot.copied.name: ("copied", number) for number, slot in enumerate((slot_a, slot_b))}
    events |= {slot.free.name: ("free", number) for number, slot in enumerate((slot_a, slot_b))}
    named = [(what, events.get(name, name), where) for what, name, where in log
             if what != "upload"]  # fmt: skip
    copies = [entry for entry in log if entry[0] == "upload"]
    assert all(stream == "copy" for _, _, stream in copies)  # never on the kernels' stream
    batches = pipeline.batches()
    assert batches == 5 and len(copies) == 2 * batches  # inputs and labels of every batch
    expected = []
    for index in range(batches):
        slot = index % 2
        if index == 0:  # nothing was prepared before the epoch's first step
            expected += prepare(slot)
        expected += [("wait", ("copied", slot), "default"), ("record", ("free", slot), "default")]
        if index + 1 < batches:  # the next batch, queued after this step
            expected += prepare(1 - slot)
    assert named == expected


def prepare(slot):
    """What preparing a batch into `slot` logs, uploads aside: the host waits for the pinned
    buffer's last copy, the copy stream for the device buffer's last step."""
    return [("synchronize", ("copied", slot), "host"), ("wait", ("free", slot), "copy"),
            ("record", ("copied", slot), "copy")]  # fmt: skip

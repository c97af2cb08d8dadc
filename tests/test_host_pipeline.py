"""The double-buffered host pipeline (nn/host_pipeline.py) without a GPU: the NumPy tier with
stand-ins for the stream hooks that log what would be queued where (tests only), and, for the
batches augmented on the device, the nvcc library's kernel (csrc/augment.cu) built for the CPU
emulation of CUDA (tests/cuda_emulation/). Checked: the kernel makes the host's augmented and
normalized batch bit for bit; the pipeline sends exactly HostStep's batches, made on the host or
on the device (the same augmentation draws: the same weights bit for bit); the order of the queued
work keeps both buffers safe while batch i + 1 is copied during step i."""

import ctypes

import numpy as np
import pytest
from conftest import load_tier
from cuda_emulated import emulated_library

from nn.augment import batch_augmented, batch_draws
from nn.data import DataSet, Normalizer, Split
from nn.host_pipeline import HOOKS, HostPipeline, host_pipeline, pixel_levels
from nn.layers import Flatten, Linear, Sequential
from nn.network import Model
from nn.recipes import Recipe
from nn.steps import HostStep, PipelinedStep
from nn.trainer import Trainer

RECIPE = Recipe(epochs=2, batch_size=16, optimizer="momentum", lr=0.05, val_size=0, shift=2,
                flip=True, patience=0)  # fmt: skip


V, I64 = ctypes.c_void_p, ctypes.c_int64


@pytest.fixture(scope="module")
def augment_kernel(tmp_path_factory):
    """csrc/augment.cu's s2c_cuda_augment_images, built for the CPU emulation of CUDA."""
    library = emulated_library(tmp_path_factory.mktemp("augment"), ["augment.cu", "errors.cu"])
    function = library.s2c_cuda_augment_images
    function.argtypes = [V] * 6 + [I64] * 5 + [V]
    return function


def emulated_hook(kernel):
    """The hook augment_images (stage4_cuda/nvcc_impl/augment.py) over NumPy arrays, the kernel
    run by the emulation (its "device" memory is the host's)."""

    def augment_images(images, rows, cols, flips, max_shift, levels, out, stream=None):
        wanted = ((images, np.uint8), (rows, np.int64), (cols, np.int64), (flips, np.uint8),
                  (levels, np.float32), (out, np.float32))  # fmt: skip
        assert all(a.dtype == dtype and a.flags.c_contiguous for a, dtype in wanted)
        pointers = [a.ctypes.data_as(V) for a, _ in wanted]
        assert kernel(*pointers, *images.shape, max_shift, None) == 0
        return out

    return augment_images


class LoggedStreams:
    """The NumPy tier plus the stream hooks, each logging (what, stream or event, detail); with
    `augment_images` (a hook as emulated_hook makes it), the device's augmentation too."""

    def __init__(self, tier, log, augment_images=None):
        self.tier, self.log = tier, log
        if augment_images is not None:

            def logged(images, rows, cols, flips, max_shift, levels, out, stream=None):
                log.append(("augment", "images", getattr(stream, "name", "default")))
                return augment_images(images, rows, cols, flips, max_shift, levels, out, stream)

            self.augment_images = logged
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
        poison = np.nan if np.dtype(dtype).kind == "f" else np.array(-1).astype(dtype)  # 255: uint8
        return np.full(shape, poison, dtype)

    def upload(self, destination, source, stream=None):
        self.log.append(("upload", destination.shape, getattr(stream, "name", "default")))
        destination[...] = source

    def correct_count(self, logits, labels):
        return float((np.argmax(logits, axis=1) == labels).sum())


# Colour images taller than wide: a flip or a shift along the wrong axis, or channels mixed, show.
COLOUR = (3, 9, 6)


def images(count=72, seed=0, shape=(1, 8, 8)):
    rng = np.random.default_rng(seed)
    inputs = rng.integers(0, 256, (count, *shape), dtype=np.uint8)
    labels = rng.integers(0, 3, count).astype(np.int64)
    train = Split(inputs, labels)
    return DataSet("pictures", train, None, train, ["a", "b", "c"], Normalizer.fit(inputs))


def model(tier, shape=(1, 8, 8)):
    return Model("flat", Sequential(Flatten(), Linear(int(np.prod(shape)), 3)), shape, 3,
                 "cross_entropy").build(tier, 0)  # fmt: skip


def streams(request, log, on_device):
    """LoggedStreams over the NumPy tier, augmenting on the (emulated) device or not."""
    hook = emulated_hook(request.getfixturevalue("augment_kernel")) if on_device else None
    return LoggedStreams(load_tier("numpy"), log, hook)


def test_the_pipeline_needs_every_hook():
    tier = load_tier("numpy")
    assert host_pipeline(tier, images(), model(tier).loss, RECIPE) is None
    assert set(HOOKS) == {"pinned_empty", "Stream", "Event", "upload", "correct_count"}


# (n, c, h, w, shift, flip): odd sizes, images wider or taller than square, no shift, the largest
# shift an image allows, flips on and off, one image
AUGMENTS = [(7, 3, 9, 5, 2, True), (6, 2, 5, 11, 0, True), (5, 1, 7, 7, 6, False),
            (9, 3, 4, 6, 3, True), (1, 3, 5, 5, 1, True), (4, 3, 6, 4, 0, False)]  # fmt: skip


@pytest.mark.parametrize("sizes", AUGMENTS)
def test_the_augment_kernel_makes_the_host_batch_bit_for_bit(augment_kernel, sizes):
    n, c, h, w, shift, flip = sizes
    rng = np.random.default_rng(n * 100 + h * 10 + w)
    batch = rng.integers(0, 256, (n, c, h, w), dtype=np.uint8)
    batch.flat[:2] = 0, 255  # the ends of the table
    normalizer = Normalizer.fit(rng.integers(0, 256, (20, c, h, w), dtype=np.uint8))
    recipe = RECIPE.with_overrides(shift=shift, flip=flip, seed=int(rng.integers(1000)))
    rows, cols, flips = batch_draws(recipe, 3, 4, n)
    if not flip:
        assert not flips.any()
    elif n > 4:  # both paths of the kernel: some images mirrored, some not
        assert 0 < flips.sum() < n
    out = np.full((n, c, h, w), np.nan, np.float32)
    emulated_hook(augment_kernel)(batch, rows, cols, flips.astype(np.uint8), shift,
                                  pixel_levels(normalizer, c), out)  # fmt: skip
    expected = normalizer(batch_augmented(batch, recipe, 3, 4))
    assert out.dtype == expected.dtype and np.array_equal(out, expected)  # NaN is never equal


def test_a_shift_as_large_as_the_image_is_refused():
    batch = np.zeros((2, 1, 5, 7), np.uint8)
    with pytest.raises(ValueError, match=r"shift must be in \[0, 4\] \(smaller than the images' "
                                         r"height 5 and width 7\), got 5"):  # fmt: skip
        batch_augmented(batch, RECIPE.with_overrides(shift=5), 0, 0)


@pytest.mark.parametrize("on_device", [False, True], ids=["host", "device"])
def test_each_batch_is_host_steps_batch_bit_for_bit(request, on_device):
    tier, data = streams(request, [], on_device), images(shape=COLOUR)
    pipeline = HostPipeline(tier, data, model(tier, COLOUR).loss, RECIPE)
    assert (pipeline.levels is not None) == on_device
    train = data.train
    for epoch in range(2):
        order = np.random.default_rng(epoch).permutation(len(train))
        pipeline.start_epoch(epoch, order)
        for index in range(pipeline.batches()):  # the last batch is short: 72 = 4 * 16 + 8
            chosen = order[index * RECIPE.batch_size :][: RECIPE.batch_size]
            inputs, targets, labels = pipeline.batch(index)
            expected = data.normalizer(batch_augmented(train.inputs[chosen], RECIPE, epoch, index))
            assert inputs.dtype == np.float32 and np.array_equal(inputs, expected), (epoch, index)
            assert np.array_equal(labels, train.labels[chosen]) and targets is labels
            pipeline.release(index)


@pytest.mark.parametrize("on_device", [False, True], ids=["host", "device"])
def test_pipelined_training_is_host_step_training_bit_for_bit(request, tmp_path, on_device):
    numpy_tier, tier = load_tier("numpy"), streams(request, [], on_device)
    data = images(shape=COLOUR)
    pipelined = Trainer(model(tier, COLOUR), data, RECIPE, tmp_path / "p", progress_bar=False,
                        echo=lambda line: None)  # fmt: skip
    assert isinstance(pipelined.train_step, PipelinedStep)
    assert (pipelined.train_step.pipeline.levels is not None) == on_device
    pipelined.fit()
    plain = Trainer(model(numpy_tier, COLOUR), data, RECIPE, tmp_path / "h", progress_bar=False,
                    echo=lambda line: None)  # fmt: skip
    assert isinstance(plain.train_step, HostStep)
    plain.fit()
    for (name, ours), theirs in zip(pipelined.model.parameters().items(),
                                    plain.model.parameters().values(), strict=True):  # fmt: skip
        assert np.array_equal(ours.value, theirs.value), name
    assert [m["train_loss"] for m in pipelined.progress.history] == pytest.approx(
        [m["train_loss"] for m in plain.progress.history], rel=1e-6)  # fmt: skip


@pytest.mark.parametrize("on_device", [False, True], ids=["host", "device"])
def test_each_copy_waits_for_its_buffers_and_overlaps_the_step_before(request, tmp_path,
                                                                      on_device):  # fmt: skip
    log = []
    tier = streams(request, log, on_device)
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
    # inputs and labels of every batch; on the device, images, rows, cols, flips and labels
    crossing = 5 if on_device else 2
    assert batches == 5 and len(copies) == crossing * batches
    expected = []
    for index in range(batches):
        slot = index % 2
        if index == 0:  # nothing was prepared before the epoch's first step
            expected += prepare(slot, on_device)
        expected += [("wait", ("copied", slot), "default"), ("record", ("free", slot), "default")]
        if index + 1 < batches:  # the next batch, queued after this step
            expected += prepare(1 - slot, on_device)
    assert named == expected
    # the device's augmentation follows all of its batch's copies
    for at, (what, _, _) in enumerate(log):
        if what == "augment":
            assert [entry[0] for entry in log[at - crossing : at]] == ["upload"] * crossing


def prepare(slot, on_device):
    """What preparing a batch into `slot` logs, uploads aside: the host waits for the pinned
    buffer's last copy, the copy stream for the device buffer's last step; the batch is made on
    the copy stream (on the device) before the copy's event."""
    made = [("augment", "images", "copy")] if on_device else []
    return [("synchronize", ("copied", slot), "host"), ("wait", ("free", slot), "copy"), *made,
            ("record", ("copied", slot), "copy")]  # fmt: skip


# What the nvcc variant's hook refuses before any launch: (argument, bad value, exception, message)
REFUSED = [
    ("max_shift", 5, ValueError, r"max_shift must be an int in \[0, 4\] \(smaller than the "
                                 r"images' height 5 and width 7\), got 5"),
    ("max_shift", -1, ValueError, r"max_shift must be an int in \[0, 4\]"),
    ("max_shift", 1.0, TypeError, "max_shift must be an int, got 1.0"),
    ("images", np.zeros((2, 3, 5, 7), np.float32), TypeError, "images must be uint8"),
    ("images", np.zeros((2, 3, 5), np.uint8), ValueError, r"images must have shape \[N, C, H, W\]"),
    ("cols", np.zeros(3, np.int64), ValueError, r"cols must have shape \[N=2\], got \[3\]"),
    ("rows", np.zeros(2, np.int32), TypeError, "rows must hold int64 values"),
    ("flips", np.zeros(2, np.int64), TypeError, "flips must hold uint8 values"),
    ("levels", np.zeros((3, 255), np.float32), ValueError,
     r"levels must have shape \[C=3, V=256\]"),
    ("out", np.zeros((2, 3, 7, 5), np.float32), ValueError,
     r"out must have shape \[N=2, C=3, H=5, W=7\], got \[2, 3, 7, 5\]"),
]  # fmt: skip


@pytest.mark.parametrize("argument, value, error, message", REFUSED, ids=[
    f"{case[0]}-{number}" for number, case in enumerate(REFUSED)])  # fmt: skip
def test_the_device_augmentation_refuses_bad_arguments(argument, value, error, message):
    from stage4_cuda.nvcc_impl.augment import augment_images
    from stage4_cuda.runtime import device

    if not device.SIMULATOR and not device.cuda.is_available():
        pytest.skip("needs numba's CUDA simulator or a GPU")
    arguments = {"images": np.zeros((2, 3, 5, 7), np.uint8), "rows": np.zeros(2, np.int64),
                 "cols": np.zeros(2, np.int64), "flips": np.zeros(2, np.uint8), "max_shift": 1,
                 "levels": np.zeros((3, 256), np.float32),
                 "out": np.full((2, 3, 5, 7), np.nan, np.float32)}  # fmt: skip
    arguments[argument] = value
    on_device = {name: device.cuda.to_device(value) if isinstance(value, np.ndarray) else value
                 for name, value in arguments.items()}  # fmt: skip
    with pytest.raises(error, match=f"^augment_images: {message}"):
        augment_images(**on_device)

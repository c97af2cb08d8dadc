"""The live dashboard (nn/dashboard.py): a short run of nn.train with --tensorboard, its event file
read back record by record and checked for the scalars, histograms, images and settings."""

import io
import struct
import time

import numpy as np
import pytest
from conftest import load_tier
from PIL import Image
from tensorboardX.proto.event_pb2 import Event
from tensorboardX.record_writer import masked_crc32c

from nn import train
from nn.dashboard import FLUSH_SECONDS, Dashboard
from nn.data import DataSet, Normalizer, Split
from nn.layers import Conv2d, Flatten, Linear, ReLU, Sequential
from nn.network import Model
from nn.recipes import Recipe
from nn.trainer import Trainer

EPOCHS = 2


def read_events(path):
    """Every whole Event of a TensorBoard event file: TFRecord framing (length, its CRC, the
    data, its CRC), each CRC checked, each record parsed by tensorboardX's protobuf Event. A last
    record still being written is left out, as TensorBoard reads a file that grows."""
    events, data = [], path.read_bytes()
    while len(data) >= 12:
        header, header_crc = data[:8], struct.unpack("<I", data[8:12])[0]
        assert masked_crc32c(header) == header_crc, f"{path}: corrupt record length"
        length = struct.unpack("<Q", header)[0]
        if len(data) < 16 + length:
            break
        payload, payload_crc = data[12:12 + length], data[12 + length:16 + length]
        assert masked_crc32c(payload) == struct.unpack("<I", payload_crc)[0], f"{path}: corrupt"
        events.append(Event.FromString(payload))
        data = data[16 + length:]
    return events


@pytest.fixture(scope="module")
def conv_run(tmp_path_factory):
    """(tag -> [(step, value)], steps per epoch, model, folder) of 2 epochs of a small CNN on
    random 8x8 images, the trainer showing them on a Dashboard."""
    tier = load_tier("numpy")
    rng = np.random.default_rng(0)
    train_split, test_split = (Split(rng.integers(0, 256, (count, 1, 8, 8), dtype=np.uint8),
                                     rng.integers(0, 3, count)) for count in (96, 32))
    data = DataSet("random", train_split, None, test_split, ["a", "b", "c"],
                   Normalizer.fit(train_split.inputs))
    net = Sequential(Conv2d(1, 4, 3), ReLU(), Flatten(), Linear(4 * 6 * 6, 3))
    model = Model("small_cnn", net, (1, 8, 8), 3, "cross_entropy").build(tier, seed=0)
    recipe = Recipe(epochs=EPOCHS, batch_size=32, optimizer="sgd", lr=0.05, val_size=0)
    log_dir = tmp_path_factory.mktemp("dashboard")
    dashboard = Dashboard(log_dir, model, recipe, tier.NAME)
    trainer = Trainer(model, data, recipe, log_dir / "run", progress_bar=False,
                      echo=lambda line: None, dashboard=dashboard)
    trainer.fit()
    dashboard.final(test_accuracy=0.5, test_loss=1.0, best_val_loss=trainer.progress.best_val_loss)
    dashboard.close()
    (event_file,) = log_dir.glob("events.out.tfevents.*")
    return summaries(read_events(event_file)), trainer.steps_per_epoch, model, log_dir


def summaries(events):
    """{tag: [(step, Summary.Value)]} of the events' summaries, in file order."""
    found = {}
    for event in events:
        for value in event.summary.value:
            found.setdefault(value.tag, []).append((event.step, value))
    return found


def test_every_step_and_epoch_is_a_scalar(conv_run):
    found, steps_per_epoch, _, _ = conv_run
    steps = EPOCHS * steps_per_epoch
    for tag in ("step/loss", "step/accuracy", "step/lr"):
        assert [step for step, _ in found[tag]] == list(range(1, steps + 1)), tag
    losses = [value.simple_value for _, value in found["step/loss"]]
    assert all(np.isfinite(losses)) and min(losses) > 0
    accuracies = [value.simple_value for _, value in found["step/accuracy"]]
    assert all(0 <= a <= 1 for a in accuracies)
    for tag in ("epoch/train_loss", "epoch/train_accuracy", "epoch/lr",
                "epoch/images_per_second"):
        assert [step for step, _ in found[tag]] == [1, 2], tag
    assert "epoch/val_loss" not in found  # this run holds out no validation split
    assert [v.simple_value for _, v in found["final/test_accuracy"]] == [0.5]
    assert "final/best_val_loss" not in found  # infinite without validation: left out


def test_weights_and_gradients_of_every_parameter_are_histograms(conv_run):
    found, _, model, _ = conv_run
    for name, parameter in model.parameters().items():
        for kind in ("weights", "gradients"):
            entries = found[f"{kind}/{name}"]
            assert [step for step, _ in entries] == [1, 2]
            histogram = entries[-1][1].histo
            assert histogram.num == parameter.value.size
        weights = found[f"weights/{name}"][-1][1].histo
        value = model.tier.to_numpy(parameter.value)
        assert (weights.min, weights.max) == pytest.approx((value.min(), value.max()))


def test_first_layer_filters_are_images_and_settings_are_text(conv_run):
    found, _, _, _ = conv_run
    images = found["first_layer/filters"]
    assert [step for step, _ in images] == [1, 2]
    picture = Image.open(io.BytesIO(images[-1][1].image.encoded_image_string))
    assert picture.size[0] >= 3 and picture.size[1] >= 3
    (settings,) = [value for tag, entries in found.items() if tag.startswith("settings")
                   for _, value in entries]
    text = settings.tensor.string_val[0].decode()
    assert "| optimizer | sgd |" in text and "small_cnn" in text
    assert "_hparams_/session_start_info" in found and "_hparams_/session_end_info" in found


def test_tensorboard_itself_reads_the_run(conv_run):
    """TensorBoard's own reader, where TensorBoard is installed (it is no dependency: the tests
    above read the file with tensorboardX's protobuf)."""
    accumulator = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator",
        reason="TensorBoard is not installed (pip install tensorboard to view the dashboard)")
    found, _, _, log_dir = conv_run
    events = accumulator.EventAccumulator(str(log_dir), size_guidance={
        accumulator.SCALARS: 0, accumulator.HISTOGRAMS: 0, accumulator.IMAGES: 0})
    events.Reload()
    tags = events.Tags()
    assert set(tags["scalars"]) == {tag for tag in found if tag.split("/")[0] in
                                    ("step", "epoch", "final")}
    assert len(events.Scalars("step/loss")) == len(found["step/loss"])
    assert set(tags["histograms"]) == {tag for tag in found
                                       if tag.startswith(("weights/", "gradients/"))}
    assert tags["images"] == ["first_layer/filters"]


def test_train_writes_the_dashboard_into_the_run_folder(tmp_path, capsys):
    load_tier("numpy")
    status = train.main(["--no-progress", "--model", "perceptron", "--data", "blobs",
                         "--epochs", "2", "--run-dir", str(tmp_path), "--tensorboard"])
    assert status == 0
    assert f"tensorboard --logdir {tmp_path / 'tensorboard'}" in capsys.readouterr().out
    (event_file,) = (tmp_path / "tensorboard").glob("events.out.tfevents.*")
    found = summaries(read_events(event_file))
    assert [step for step, _ in found["epoch/train_accuracy"]] == [1, 2]
    assert len(found["final/test_accuracy"]) == 1


def test_an_epoch_is_on_disk_while_the_run_goes_on(tmp_path):
    """TensorBoard reads the file while the run trains: the writer's thread writes each event and
    the epoch's end flushes the file, so the epoch shows within FLUSH_SECONDS (waited for here
    with a margin for a busy machine), long before the run ends."""
    tier = load_tier("numpy")
    model = Model("linear", Sequential(Linear(2, 3)), (2,), 3, "cross_entropy").build(tier, 0)
    dashboard = Dashboard(tmp_path, model, Recipe(), tier.NAME)
    dashboard.step(1, 0.9, 0.5, 0.1)
    dashboard.epoch({"epoch": 1, "train_loss": 0.9, "train_accuracy": 0.5, "lr": 0.1})
    (event_file,) = tmp_path.glob("events.out.tfevents.*")
    deadline = time.monotonic() + 6 * FLUSH_SECONDS
    while "epoch/train_loss" not in (found := summaries(read_events(event_file))):
        assert time.monotonic() < deadline, "the epoch's scalars never reached the file"
        time.sleep(0.1)
    assert [v.simple_value for _, v in found["epoch/train_loss"]] == [pytest.approx(0.9)]
    assert "first_layer/filters" not in found  # a model of points has no image-like filters
    dashboard.close()

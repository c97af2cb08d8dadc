"""`python -m nn.train` and `python -m nn.predict` end to end, on small data sets (stage 2)."""

import json
import os
import re
import shutil
import signal
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest
from conftest import load_tier

from nn import exits, predict, train
from nn.checkpoint import read_checkpoint
from nn.steps import HostStep

pytestmark = pytest.mark.week09  # week 9 teaches nn/: layers, models, the trainer


def run_train(capsys, *args):
    """(exit status, stdout lines, stderr) of nn.train with `args`."""
    load_tier("numpy")  # skip, saying why, if stage 2 is not there
    status = train.main(["--stage", "2", "--no-progress", *args])
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err


def last_accuracy(lines):
    match = re.fullmatch(r"test_accuracy=(\d\.\d{4})", lines[-1])
    assert match, f"last line {lines[-1]!r} is not test_accuracy=0.XXXX"
    return float(match.group(1))


def test_numbas_note_on_a_small_grid_is_not_shown_while_training(capsys, monkeypatch):
    """A training batch launches grids of a few blocks; numba's warning that such a grid leaves
    the GPU idle, once per grid size, would bury the epoch lines. Other warnings still show."""
    import warnings

    def warn_and_stop(args, tier):
        warnings.warn("\x1b[1mGrid size 3 will likely result in GPU under-utilization due to "
                      "low occupancy.\x1b[0m", RuntimeWarning, stacklevel=1)  # fmt: skip
        warnings.warn("a warning of the tier's own", RuntimeWarning, stacklevel=1)
        return 0

    monkeypatch.setattr(train, "train", warn_and_stop)
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        status, _, _ = run_train(capsys, "--model", "xor", "--data", "xor")
    assert status == 0
    assert [str(w.message) for w in shown] == ["a warning of the tier's own"]


def test_perceptron_separates_the_blobs(capsys, tmp_path):
    status, lines, _ = run_train(capsys, "--model", "perceptron", "--data", "blobs",
                                 "--run-dir", str(tmp_path))
    assert status == 0
    assert last_accuracy(lines) == 1.0


def test_xor_is_solved_by_2_4_1(capsys, tmp_path):
    status, lines, _ = run_train(capsys, "--model", "xor", "--data", "xor",
                                 "--run-dir", str(tmp_path))
    assert status == 0
    assert "Linear(2->4)" in "\n".join(lines) and "Linear(4->1)" in "\n".join(lines)
    assert last_accuracy(lines) == 1.0  # all four points


def test_impl_trains_on_the_tier_in_that_folder(capsys, tmp_path):
    workspace = tmp_path / "workspace"
    reference = Path(__file__).resolve().parent.parent / "stage2_numpy"
    shutil.copytree(reference, workspace / "stage2_numpy")
    status, lines, _ = run_train(capsys, "--impl", str(workspace), "--model", "xor", "--data",
                                 "xor", "--run-dir", str(tmp_path / "run"))
    assert status == 0
    assert f"stage 2 (numpy, from {workspace})" in "\n".join(lines)
    assert last_accuracy(lines) == 1.0


def test_impl_without_the_tier_is_a_clear_error(capsys, tmp_path):
    status, _, err = run_train(capsys, "--impl", str(tmp_path), "--model", "xor", "--data", "xor")
    assert status == exits.TIER
    assert f"error: stage 2 (stage2_numpy in {tmp_path}): no tier package at" in err


def test_train_then_predict_on_spirals(capsys, tmp_path):
    status, lines, _ = run_train(capsys, "--model", "mlp", "--data", "spirals", "--epochs", "30",
                                 "--run-dir", str(tmp_path), "--results", str(tmp_path / "res"))
    assert status == 0
    assert last_accuracy(lines) > 0.9
    for name in ("last.npz", "metrics.jsonl", "curves.png", "confusion.png"):
        assert (tmp_path / name).is_file(), name
    assert (tmp_path / "res" / "train-mlp-spirals-stage2.json").is_file()

    assert predict.main(["--checkpoint", str(tmp_path / "last.npz"), "--index", "0"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("spirals test example 0: true class")
    probabilities = [float(line.split()[-1]) for line in out[1:]]
    assert len(probabilities) == 3 and probabilities == sorted(probabilities, reverse=True)
    assert sum(probabilities) == pytest.approx(1.0, abs=1e-4)


def test_mnist_mlp_predicts_a_png_like_its_test_image(capsys, tmp_path, shared_data_dir):
    status, lines, _ = run_train(
        capsys, "--model", "mlp", "--data", "mnist", "--data-dir", str(shared_data_dir),
        "--epochs", "1", "--train-size", "2000", "--val-size", "500", "--run-dir", str(tmp_path),
    )
    assert status == 0 and last_accuracy(lines) > 0.5  # 63 steps: far above chance (0.1)
    assert (tmp_path / "filters.png").is_file()
    checkpoint = str(tmp_path / "last.npz")
    assert predict.main(["--checkpoint", checkpoint, "--index", "3",
                         "--data-dir", str(shared_data_dir)]) == 0
    by_index = capsys.readouterr().out.splitlines()

    from datasets import load

    images, _ = load("mnist", "test", data_dir=shared_data_dir)
    png = tmp_path / "digit.png"
    matplotlib.image.imsave(png, images[3], cmap="gray", vmin=0, vmax=255)
    assert predict.main(["--checkpoint", checkpoint, str(png), "--top-k", "2"]) == 0
    by_file = capsys.readouterr().out.splitlines()
    assert len(by_file) == 2
    assert by_file[0].split()[:2] == by_index[1].split()[:2]  # the same top class
    assert float(by_file[0].split()[-1]) == pytest.approx(float(by_index[1].split()[-1]), abs=1e-3)


def test_model_data_mismatch_fails_before_training(capsys, tmp_path):
    status, lines, err = run_train(capsys, "--model", "lenet5", "--data", "blobs",
                                   "--run-dir", str(tmp_path))
    assert status == exits.USAGE
    assert "takes inputs of shape (1, 28, 28), but the data's examples have shape (2,)" in err
    assert not (tmp_path / "last.npz").exists()


def test_corrupt_checkpoint_is_a_clear_error_for_predict(capsys, tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(np.arange(100, dtype=np.uint8).tobytes())
    assert predict.main(["--checkpoint", str(bad), "--index", "0"]) == exits.CHECKPOINT
    assert "corrupt or not a checkpoint" in capsys.readouterr().err


def test_resume_continues_a_run_from_its_checkpoint(capsys, tmp_path):
    args = ["--model", "perceptron", "--data", "blobs", "--run-dir", str(tmp_path)]
    assert run_train(capsys, *args, "--epochs", "2")[0] == 0
    status, lines, _ = run_train(capsys, *args, "--epochs", "4", "--resume")
    assert status == 0
    assert any("resumed from" in line and "2 epochs" in line for line in lines)
    assert sum(1 for line in lines if line.startswith("epoch ")) == 2  # epochs 3 and 4 only


def test_summary_of_the_tiny_imagenet_cnn(capsys):
    assert train.main(["--model", "tiny_imagenet_cnn", "--summary"]) == 0
    out = capsys.readouterr().out
    assert "input (3, 64, 64), 200 classes" in out and "Linear(8192->512)" in out


@pytest.mark.parametrize("stage", ["2", "3"])
@pytest.mark.parametrize("flags, last_good", [
    (["--optimizer", "momentum", "--momentum", "5"], "56 epochs done"),  # diverges at step 57
    (["--lr", "1e38"], None),  # diverges in the first step
])
def test_a_diverged_run_keeps_and_names_only_a_good_checkpoint(capsys, tmp_path, stage, flags,
                                                                last_good):
    load_tier("c" if stage == "3" else "numpy")
    run_dir = tmp_path / "run"
    status = train.main(["--stage", stage, "--no-progress", "--model", "xor", "--data", "xor",
                         "--run-dir", str(run_dir), *flags])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 1
    assert err[-1].startswith("error: ") and "hold NaN or Inf" in err[-1]
    if last_good is None:
        assert "This run has written no checkpoint yet" in err[-1]
        assert not (run_dir / "last.npz").exists()
    else:
        assert f"The last good checkpoint is {run_dir / 'last.npz'} ({last_good})" in err[-1]
        meta, arrays = read_checkpoint(run_dir / "last.npz")
        assert meta["progress"]["epoch"] == 56
        assert all(np.all(np.isfinite(array)) for array in arrays.values())


def test_ctrl_c_saves_its_step_and_resume_ends_where_an_uninterrupted_run_does(
    capsys, tmp_path, monkeypatch
):
    args = ["--model", "perceptron", "--data", "blobs", "--epochs", "3"]
    assert run_train(capsys, *args, "--run-dir", str(tmp_path / "straight"))[0] == 0
    straight = read_checkpoint(tmp_path / "straight" / "last.npz")[1]

    original = HostStep.run

    def run(step, indices, progress, lr):  # Ctrl-C in the middle of step 40 (epoch 2)
        if progress.step == 40:
            os.kill(os.getpid(), signal.SIGINT)
        return original(step, indices, progress, lr)

    monkeypatch.setattr(HostStep, "run", run)
    run_dir = tmp_path / "interrupted"
    status, _, err = run_train(capsys, *args, "--run-dir", str(run_dir))
    assert status == 130
    assert f"interrupted: checkpoint saved to {run_dir / 'last.npz'} (1 epochs and 9 batches " \
           "done); continue with the same command and --resume" in err
    monkeypatch.undo()
    status, lines, _ = run_train(capsys, *args, "--run-dir", str(run_dir), "--resume")
    assert status == 0 and any("1 epochs and 9 batches done" in line for line in lines)
    resumed = read_checkpoint(run_dir / "last.npz")[1]
    for name, value in straight.items():
        np.testing.assert_array_equal(resumed[name], value, err_msg=name)


@pytest.fixture(scope="module")
def good_run(tmp_path_factory):
    """The run directory of 2 epochs of the perceptron on blobs (its last.npz is the good one)."""
    load_tier("numpy")
    run_dir = tmp_path_factory.mktemp("good")
    assert train.main(["--no-progress", "--model", "perceptron", "--data", "blobs",
                       "--epochs", "2", "--run-dir", str(run_dir)]) == 0
    return run_dir


def set_path(meta, path, value):
    """meta with the entry at `path` ('a.b', 'a.0') set to `value`, or deleted if it is DELETE."""
    *parents, key = (int(part) if part.isdigit() else part for part in path.split("."))
    for parent in parents:
        meta = meta[parent]
    if value is DELETE:
        del meta[key]
    else:
        meta[key] = value


DELETE = object()
NAN = float("nan")
# (which command must refuse it, where in the metadata, the bad value)
BAD_METADATA = [
    *(("both", key, DELETE) for key in ("format", "version", "model", "recipe")),
    *(("train", key, DELETE) for key in ("data", "progress", "optimizer_steps")),
    *(("predict", key, DELETE) for key in ("data", "input_shape", "num_classes", "class_names",
                                           "normalizer", "model_options")),
    ("both", "version", 2), ("both", "version", 0), ("both", "version", "1"),
    ("both", "version", 1.5), ("both", "version", None), ("both", "version", True),
    ("both", "format", "other"), ("both", "model", 5), ("both", "model", "xor"),
    ("both", "model", "nope"), ("both", "model", None),
    ("both", "recipe", "x"), ("both", "recipe", []), ("both", "recipe.batch_size", 0),
    ("both", "recipe.epochs", "3"), ("both", "recipe.lr", NAN), ("both", "recipe.unknown", 1),
    ("both", "recipe.seed", -1), ("both", "recipe.flip", 1), ("both", "recipe.schedule", None),
    ("train", "recipe.model_options", {"width": 3}), ("train", "recipe.model_options", [1]),
    ("train", "progress", {}), ("train", "progress", [1]), ("train", "progress.extra", 0),
    ("train", "progress.epoch", -1), ("train", "progress.epoch", "2"),
    ("train", "progress.epoch", NAN), ("train", "progress.epoch", 1.5),
    ("train", "progress.batch", 10**6), ("train", "progress.batch", 3),  # 3 batches, none seen
    ("train", "progress.seen", 5), ("train", "progress.history", "x"),
    ("train", "progress.history", []), ("train", "progress.history.0.train_loss", NAN),
    ("train", "progress.history.0", {}), ("train", "progress.best_val_loss", NAN),
    ("train", "progress.loss_sum", -1.0), ("train", "progress.stopped_early", "no"),
    ("train", "optimizer_steps", -1), ("train", "optimizer_steps", 1.5),
    ("train", "optimizer_steps", "3"), ("train", "optimizer_steps", None),
    ("train", "data", "xor"), ("train", "data", 7),
    ("predict", "data", "nope"), ("predict", "input_shape", [0]), ("predict", "input_shape", "2"),
    ("predict", "input_shape", [2, "a"]), ("predict", "input_shape", [1, 2, 3, 4]),
    ("predict", "input_shape", [3]), ("predict", "num_classes", 0), ("predict", "num_classes", "3"),
    ("predict", "num_classes", 5), ("predict", "class_names", [1, 2, 3]),
    ("predict", "class_names", "abc"), ("predict", "normalizer", {}),
    ("predict", "normalizer.mean", [NAN, 0.0]), ("predict", "normalizer.mean", [0.0]),
    ("predict", "normalizer.std", "x"), ("predict", "normalizer.is_image", "no"),
    ("predict", "model_options", {"width": 1}), ("predict", "model_options", []),
]


def rewrite(source, target, edit_meta=None, edit_arrays=None):
    """Copy checkpoint `source` to `target`, its metadata and arrays changed by the edits."""
    with np.load(source) as archive:
        arrays = {name: archive[name] for name in archive.files}
    meta = json.loads(str(arrays.pop("meta")))
    if edit_meta:
        edit_meta(meta)
    if edit_arrays:
        edit_arrays(arrays)
    np.savez(target, meta=np.array(json.dumps(meta)), **arrays)


def assert_refused(capsys, command, checkpoint, good_run):
    """`command` ('train' or 'predict') on `checkpoint`: one line and the checkpoint status."""
    if command == "train":
        status = train.main(["--no-progress", "--model", "perceptron", "--data", "blobs",
                             "--run-dir", str(good_run), "--resume", str(checkpoint)])
    else:
        status = predict.main(["--checkpoint", str(checkpoint), "--index", "0"])
    err = capsys.readouterr().err
    assert status == exits.CHECKPOINT, err
    assert err.startswith(f"error: checkpoint {checkpoint}") and err.count("\n") == 1, err


CASES = [(command, where, value) for refused_by, where, value in BAD_METADATA
         for command in ("train", "predict") if refused_by in ("both", command)]


@pytest.mark.parametrize("command, where, value", CASES, ids=[
    f"{command}-" + (f"{where}={value!r:.20}" if value is not DELETE else f"no {where}")
    for command, where, value in CASES])
def test_checkpoints_with_bad_metadata_are_one_line_errors(capsys, tmp_path, good_run, command,
                                                            where, value):
    bad = tmp_path / "bad.npz"
    rewrite(good_run / "last.npz", bad, lambda meta: set_path(meta, where, value))
    assert_refused(capsys, command, bad, good_run)


@pytest.mark.parametrize("command", ["train", "predict"])
@pytest.mark.parametrize("edit", [
    lambda arrays: arrays.update({"param/0.weight": np.array(["a", "b"])}),
    lambda arrays: arrays.update({"param/0.weight": arrays["param/0.weight"][:1]}),
    lambda arrays: arrays.update({"param/0.bias": np.full_like(arrays["param/0.bias"], np.inf)}),
    lambda arrays: arrays.pop("param/0.bias"),
    lambda arrays: arrays.update({"param/9.weight": np.zeros(3)}),
    lambda arrays: arrays.update({"meta2": np.zeros(3, complex)}),
], ids=["strings", "shape", "inf", "missing", "extra", "complex"])
def test_checkpoints_with_bad_arrays_are_one_line_errors(capsys, tmp_path, good_run, command,
                                                         edit):
    bad = tmp_path / "bad.npz"
    rewrite(good_run / "last.npz", bad, edit_arrays=edit)
    assert_refused(capsys, command, bad, good_run)


@pytest.mark.parametrize("flags, words", [
    (["--batch-size", "0"], "--batch-size must be an integer >= 1, got 0"),
    (["--epochs", "0"], "--epochs must be an integer >= 1, got 0"),
    (["--lr", "inf"], "--lr must be a finite number > 0, got inf"),
    (["--seed", "-1"], "--seed must be an integer >= 0, got -1"),
    (["--threads", "0"], "--threads must be an integer >= 1, got 0"),
    (["--model-option", "width=1"], "model 'xor' takes no options, got 'width'"),
    (["--model-option", "width"], "--model-option must look like NAME=VALUE"),
    (["--data", "xor", "--val-size", "4"], "val_size must be below the 4 training examples"),
])
def test_bad_arguments_are_one_line_usage_errors(capsys, tmp_path, flags, words):
    status, _, err = run_train(capsys, "--model", "xor", "--data", "xor",
                               "--run-dir", str(tmp_path), *flags)
    assert status == exits.USAGE
    assert err.startswith("error: ") and words in err and err.count("\n") == 1
    assert not list(tmp_path.iterdir())


def test_model_options_of_the_wrong_type_are_usage_errors(capsys, tmp_path):
    status, _, err = run_train(capsys, "--model", "resnet_mini", "--data", "xor",
                               "--model-option", "width=wide", "--run-dir", str(tmp_path))
    assert status == exits.USAGE and err == "error: model option width must be an integer >= 1, " \
                                            "got 'wide'\n"


def test_help_lists_the_exit_statuses(capsys):
    for command in (train, predict):
        with pytest.raises(SystemExit):
            command.main(["--help"])
        help_text = " ".join(capsys.readouterr().out.split())
        assert "exit status: 0 done; 1 training diverged" in help_text

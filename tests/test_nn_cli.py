"""`python -m nn.train` and `python -m nn.predict` end to end, on small data sets (stage 2)."""

import re
import shutil
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest
from conftest import load_tier

from nn import predict, train

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
    assert status == 2
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
    assert status == 2
    assert "takes inputs of shape (1, 28, 28), but the data's examples have shape (2,)" in err
    assert not (tmp_path / "last.npz").exists()


def test_corrupt_checkpoint_is_a_clear_error_for_predict(capsys, tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(np.arange(100, dtype=np.uint8).tobytes())
    assert predict.main(["--checkpoint", str(bad), "--index", "0"]) == 2
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

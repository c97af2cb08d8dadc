"""bench.data_parallel_follow's bookkeeping without a GPU: two runs trained on the NumPy tier
stand in for the 1-GPU and N-GPU runs (tests only); the record reads their per-epoch metrics and
checkpoints, and finds the weights' largest difference where one was planted."""

import subprocess

import numpy as np
import pytest
from test_data_parallel import trainer

from bench import data_parallel_follow
from bench.data_parallel_follow import compare, markdown
from nn.checkpoint import read_checkpoint, write_arrays


def finished(stdout):
    return subprocess.CompletedProcess([], 0, stdout, "")


def test_the_record_compares_epochs_accuracy_and_weights(tmp_path):
    for name in ("one", "many"):
        trainer(tmp_path / name).fit()
    meta, arrays = read_checkpoint(tmp_path / "many" / "last.npz")
    name = sorted(name for name in arrays if name.startswith("param/"))[-1]
    arrays[name] = arrays[name].copy()
    arrays[name].flat[0] += 0.5  # a planted difference, the only one in the weights
    arrays["optim/" + name] = arrays[name] + 9.0  # optimizer state is not compared
    write_arrays(tmp_path / "many" / "last.npz", arrays, meta)
    one = finished("test_accuracy=0.9100\n")
    many = finished("data parallel: the weights are bit-identical on all 2 ranks\n"
                    "test_accuracy=0.9050\n")  # fmt: skip
    record = compare(one, many, tmp_path / "one", tmp_path / "many")
    assert record["worst_array"] == name
    assert record["max_abs_weight_difference"] == pytest.approx(0.5, rel=1e-6)
    assert record["ranks_bit_identical"] == 2
    assert (record["test_accuracy_1"], record["test_accuracy_n"]) == (0.91, 0.905)
    assert [row["epoch"] for row in record["epochs"]] == [1, 2]
    for row in record["epochs"]:  # the same recipe and seed on one tier: the same epochs
        assert row["train_loss_1"] == row["train_loss_n"]
    text = markdown({**record, "gpus": 2, "model": "mlp", "data": "spirals", "command": "c",
                     "machine": {"gpu": "a GPU"}})  # fmt: skip
    assert "Ranks: bit-identical on all 2." in text
    assert "Test accuracy: 91.00% on 1 GPU, 90.50% on 2." in text


def test_ranks_that_did_not_agree_are_said_so(tmp_path):
    for name in ("one", "many"):
        trainer(tmp_path / name).fit()
    record = compare(finished("test_accuracy=0.9\n"), finished("test_accuracy=0.9\n"),
                     tmp_path / "one", tmp_path / "many")  # fmt: skip
    assert record["ranks_bit_identical"] is None
    assert record["max_abs_weight_difference"] == 0.0
    assert np.isfinite(record["max_relative_weight_difference"])
    text = markdown({**record, "gpus": 2, "model": "mlp", "data": "spirals", "command": "c",
                     "machine": {}})  # fmt: skip
    assert "Ranks: NOT identical." in text


def test_fewer_gpus_than_asked_for_is_refused_before_any_training(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(data_parallel_follow, "nvcc_tier", lambda purpose: None)
    monkeypatch.setattr(data_parallel_follow.launch, "gpu_count", lambda: 1)
    trained = []
    monkeypatch.setattr(data_parallel_follow, "train", lambda *args: trained.append(args))
    assert data_parallel_follow.main(["--gpus", "2", "--output", str(tmp_path / "f")]) == 2
    assert capsys.readouterr().err == "error: --gpus 2: this machine has 1 GPU\n"
    assert trained == [] and not list(tmp_path.iterdir())

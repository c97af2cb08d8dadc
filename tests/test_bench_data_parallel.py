"""bench.data_parallel's bookkeeping without a GPU: each configuration's measurement replaced by
a stand-in (tests only), the machine said to hold one GPU. What a one-GPU machine cannot run is
recorded as not run, never measured or guessed, and the efficiency is N-GPU / (N x baseline)."""

import json

import pytest

from bench import data_parallel


@pytest.fixture
def one_gpu(monkeypatch):
    monkeypatch.setattr(data_parallel, "nvcc_tier", lambda purpose: None)
    monkeypatch.setattr(data_parallel.launch, "gpu_count", lambda: 1)
    monkeypatch.setattr(data_parallel, "sides_available", lambda: (["nvcc"], {"torch": "absent"}))
    asked = []

    def measure(side, model_name, gpus, batches, data_parallel):
        asked.append((side, model_name, gpus, data_parallel))
        return 900.0 if data_parallel else 1000.0

    monkeypatch.setattr(data_parallel, "measure", measure)
    return asked


def test_a_one_gpu_machine_measures_the_baseline_and_says_what_it_did_not_run(one_gpu, tmp_path):
    assert data_parallel.main(["--models", "fashion_cnn", "--output", str(tmp_path / "dp")]) == 0
    assert all(gpus == 1 for _, _, gpus, _ in one_gpu)
    record = json.loads((tmp_path / "dp.json").read_text())
    (row,) = record["results"]
    assert (row["side"], row["gpus"], row["efficiency"]) == ("nvcc", 1, 0.9)
    assert record["not_run"] == [
        "fashion_cnn, nvcc on 2 GPUs: this machine has 1 GPU",
        "fashion_cnn, nvcc on 4 GPUs: this machine has 1 GPU",
        "every torch configuration: absent",
    ]
    markdown = (tmp_path / "dp.md").read_text()
    assert "| fashion_cnn | 1024 | nvcc | 1 | 900 | 1000 | 90.0% |" in markdown
    assert "- fashion_cnn, nvcc on 4 GPUs: this machine has 1 GPU" in markdown
    assert (tmp_path / "dp.png").stat().st_size > 0


def test_configurations_that_all_failed_are_recorded_as_failed_without_a_plot(
        one_gpu, monkeypatch, tmp_path):  # fmt: skip
    monkeypatch.setattr(data_parallel, "measure", lambda *args: None)
    assert data_parallel.main(["--models", "fashion_cnn", "--output", str(tmp_path / "dp")]) == 0
    (row,) = json.loads((tmp_path / "dp.json").read_text())["results"]
    assert (row["images_per_second"], row["efficiency"]) == (None, None)
    assert "| fashion_cnn | 1024 | nvcc | 1 | failed |" in (tmp_path / "dp.md").read_text()
    assert not (tmp_path / "dp.png").exists()

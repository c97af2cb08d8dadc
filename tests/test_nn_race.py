"""bench.race and bench.speedrun without a GPU: they say why they cannot run, and their tables come
from their records (the GPU runs are committed under curriculum/results/)."""

import sys

import pytest

import tiers
from bench import race, speedrun

MACHINE = {"gpu": "NVIDIA H100 80GB HBM3", "processor": "x86_64", "cpu_count": 16}


@pytest.fixture
def no_gpu():
    """Skip where the nvcc variant runs (a GPU): there the tools would race for real."""
    if tiers.load(tiers.get("nvcc")).ok:
        pytest.skip("a GPU is here: the race and the speedrun would run")


def test_without_a_gpu_the_speedrun_says_why(no_gpu, capsys):
    assert speedrun.main([]) == 2
    assert "runs on a GPU" in capsys.readouterr().err


def test_without_a_gpu_the_race_says_why_before_asking_for_pytorch(no_gpu, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)  # installing PyTorch would not help here
    assert race.main([]) == 2
    err = capsys.readouterr().err
    assert "runs on a GPU" in err and "pip install torch" not in err


def test_without_pytorch_the_race_says_how_to_install_it(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch fails, installed or not
    monkeypatch.setattr(race, "nvcc_tier", lambda purpose: None)  # as if a GPU were here
    assert race.main([]) == 2
    assert "the race needs PyTorch with CUDA: pip install torch" in capsys.readouterr().err


def test_the_race_table_comes_from_its_record():
    seconds = {"torch_eager": 2.0, "torch_graph": 0.5, "nvcc_recorded": 0.8, "nvcc_graph": 0.4}
    record = {"command": "python -m bench.race", "torch": "2.11", "repeats": 2, "machine": MACHINE,
              "optimizer": "SGD, momentum 0.9, lr 0.01 constant",
              "results": [{"model": "lenet5", "batch_size": 64, "images": 60000,
                           "seconds": seconds, "recorded_over_eager": 0.4,
                           "graph_over_graph": 0.8}]}  # fmt: skip
    table = race.markdown(record)
    assert "NVIDIA H100 80GB HBM3" in table
    assert "| lenet5 | 64 | 60000 | 2.000 | 0.800 | 0.40 | 0.500 | 0.400 | 0.80 |" in table


def test_the_speedrun_table_comes_from_its_record():
    runs = [{"seed": 0, "seconds": 0.61, "test_accuracy": 0.9912},
            {"seed": 1, "seconds": 0.63, "test_accuracy": 0.9897}]  # fmt: skip
    record = {"command": "python -m bench.speedrun", "model": "lenet5", "recipe": {"epochs": 3},
              "machine": MACHINE, "runs": runs, "mean_seconds": 0.62, "reached": False}
    table = speedrun.markdown(record)
    assert "Mean: **0.620 s**; every seed reached the target: no" in table
    assert "| 1 | 0.630 | 0.9897 |" in table

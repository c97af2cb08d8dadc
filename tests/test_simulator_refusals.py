"""Commands that would run for hours on numba's CUDA simulator (no NVIDIA GPU) refuse at once,
saying what to run instead: the benches (speed means nothing there), training and bench.epoch (full
data sets through kernels imitated in Python threads)."""

import pytest

import grader.__main__
from bench import epoch
from bench import int8 as int8_bench
from nn import train

COMMANDS = {
    "grader bench": (grader.__main__.main, ["bench", "--stage", "4"], 2, "make bench STAGE=3"),
    "nn.train": (train.main, ["--stage", "4", "--model", "fashion_cnn", "--data",
                              "fashion-mnist", "--epochs", "1", "--train-size", "256"],
                 5, "make train STAGE=3"),
    "bench.epoch": (epoch.main, ["--stage", "4", "--models", "lenet5"], 2, "make bench STAGE=3"),
    "bench.int8": (int8_bench.main, ["--model", "lenet5=runs/none.npz", "--stages", "4",
                                     "--output", "runs/never"], 5, "--stages 4 --output"),
}  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_too_slow_for_the_simulator_refuses_at_once(command, monkeypatch, capsys):
    main, argv, status, instead = COMMANDS[command]
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    assert main(argv) == status
    error = capsys.readouterr().err
    assert error.startswith("error: ") and error.count("\n") == 1, error
    assert "numba's CUDA simulator" in error and instead in error, error

"""Data-parallel training on two real GPUs over NCCL (`nn.train --gpus 2`): the run follows the
one-GPU run, a killed rank ends the run naming it with the last checkpoint intact, and the run
resumes from that checkpoint on one GPU. Each test is skipped, saying why, on a machine with
fewer than two GPUs (tests/test_data_parallel.py covers the same logic without any)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import load_tier

from bench.data_parallel_follow import compare, history, train
from nn.checkpoint import read_checkpoint
from nn.distributed import launch


@pytest.fixture(autouse=True)
def two_gpus():
    load_tier("nvcc")
    count = launch.gpu_count()
    if count < 2:
        pytest.skip(f"needs 2 GPUs; this machine has {count}")


def test_two_gpus_follow_one_gpu_and_the_ranks_stay_identical(tmp_path):
    runs = {gpus: train(gpus, "mlp", "spirals", 5, tmp_path / f"gpus{gpus}") for gpus in (1, 2)}
    for gpus, run in runs.items():
        assert run.returncode == 0, f"--gpus {gpus}:\n{run.stderr}"
    result = compare(runs[1], runs[2], tmp_path / "gpus1", tmp_path / "gpus2")
    assert result["ranks_bit_identical"] == 2, runs[2].stdout
    # The same batches, their gradients summed in another order: rounding apart, and no more.
    assert result["max_relative_weight_difference"] < 1e-4, result
    for epoch in result["epochs"]:
        assert epoch["train_loss_n"] == pytest.approx(epoch["train_loss_1"], rel=1e-4), epoch
    assert not (tmp_path / "gpus2" / "rank1").exists()


def child_rank(launcher, rank, deadline):
    """The pid of the launcher's child that is rank `rank` (found in /proc by its environment)."""
    wanted = f"{launch.RANK}={rank}".encode()
    while time.monotonic() < deadline:
        for entry in Path("/proc").iterdir():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                environment = (entry / "environ").read_bytes().split(b"\0")
                if parent == launcher.pid and wanted in environment:
                    return int(entry.name)
            except (ValueError, OSError, IndexError):
                continue
        time.sleep(0.1)
    raise AssertionError(f"rank {rank} was not found among the launcher's children")


def test_a_killed_rank_ends_the_run_naming_it_and_the_run_resumes_on_one_gpu(tmp_path):
    run_dir, epochs = tmp_path / "run", 300
    command = [sys.executable, "-m", "nn.train", "--stage", "4", "--variant", "nvcc", "--gpus",
               "2", "--model", "mlp", "--data", "spirals", "--epochs", str(epochs),
               "--patience", "0", "--no-progress", "--run-dir", str(run_dir)]  # fmt: skip
    launcher = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    while not (run_dir / "last.npz").exists():
        assert launcher.poll() is None, launcher.communicate()
        assert time.monotonic() < deadline, "no checkpoint after 180 s"
        time.sleep(0.05)
    os.kill(child_rank(launcher, 1, deadline), signal.SIGKILL)
    killed = time.monotonic()
    _, stderr = launcher.communicate(timeout=60)
    stopped_after = time.monotonic() - killed
    assert launcher.returncode != 0
    named = "error: data parallel: rank 1 was killed by signal SIGKILL; all 2 ranks were stopped"
    assert named in stderr, stderr
    assert stopped_after < launch.STOP_GRACE + 5, stopped_after
    read_checkpoint(run_dir / "last.npz")  # whole: written by rank 0 alone, atomically
    resumed = train(1, "mlp", "spirals", epochs, run_dir, ["--resume", "--patience", "0"])
    assert resumed.returncode == 0, resumed.stderr
    assert f"resumed from {run_dir / 'last.npz'}" in resumed.stdout
    assert [epoch["epoch"] for epoch in history(run_dir)] == list(range(1, epochs + 1))

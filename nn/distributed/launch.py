"""One process per GPU, started and watched by the command itself (`nn.train --gpus N`).

The launcher (the command as the user ran it) checks that N GPUs and NCCL are there, makes the
communicator's id, and starts N copies of the same command, rank r seeing only GPU r
(CUDA_VISIBLE_DEVICES) and finding its rank, the world size and the id in its environment. NVLink
multicast (NVLS) is off for them all (NCCL_NVLS_ENABLE=0), as the machines of this course require.

It then watches them. A rank that exits with an error, or is killed, stops the run at once: the
others, which would wait for it in their next all-reduce forever, are stopped, and the message
names the rank. A rank that is alive but makes no training step for `timeout` seconds (each rank
touches its heartbeat file at every step) stops the run the same way, naming the rank that went
quiet first. Checkpoints are written by rank 0 only, whole or not at all (nn/checkpoint.py), so
the last good one survives any of this.
"""

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nn.backend import TierError

RANK, WORLD_SIZE, NCCL_ID, HEARTBEAT = "S2C_RANK", "S2C_WORLD_SIZE", "S2C_NCCL_ID", "S2C_HEARTBEAT"
NCCL_SETTINGS = {"NCCL_NVLS_ENABLE": "0"}
TIMEOUT = 300.0  # seconds without a step before a rank counts as hung
POLL = 0.2  # seconds between two looks at the ranks
STOP_GRACE = 5.0  # seconds a rank gets to end after SIGTERM before SIGKILL


def check_gpus(gpus, available):
    """TierError unless `gpus` (>= 1) GPUs of the `available` ones can be used."""
    if gpus < 1:
        raise ValueError(f"--gpus must be an integer >= 1, got {gpus}")
    if gpus > available:
        plural = "" if available == 1 else "s"
        raise TierError(f"--gpus {gpus}: this machine has {available} GPU{plural}")


def gpu_count():
    """How many CUDA GPUs this process can see (0 without a driver)."""
    from numba import cuda

    return len(cuda.gpus) if cuda.is_available() else 0


def this_rank():
    """(rank, world size, NCCL id bytes) when this process is a rank started by the launcher,
    else None."""
    if RANK not in os.environ:
        return None
    return (int(os.environ[RANK]), int(os.environ[WORLD_SIZE]), bytes.fromhex(os.environ[NCCL_ID]))


def beat():
    """A rank's sign of life, at every step: its heartbeat file's time set to now."""
    path = os.environ.get(HEARTBEAT)
    if path:
        os.utime(path)


def launch(argv, gpus, timeout=TIMEOUT, echo=print):
    """Run `python -m nn.train *argv` as `gpus` ranks; the exit status of the run."""
    from nn.distributed import nccl

    check_gpus(gpus, gpu_count())
    try:
        identity = nccl.unique_id().hex()
    except RuntimeError as error:
        raise TierError(f"--gpus {gpus}: {error}") from None
    command = [sys.executable, "-m", "nn.train", *argv]
    ranks = f"{gpus} ranks, one per GPU" if gpus > 1 else "1 rank"
    echo(f"data parallel: {ranks}, NCCL {nccl.version()}")
    with tempfile.TemporaryDirectory(prefix="s2c-heartbeats-") as folder:
        environments = rank_environments(gpus, folder, {NCCL_ID: identity})
        return supervise([command] * gpus, environments, timeout, echo)


def rank_environments(gpus, folder, extra=None):
    """The environment of each of `gpus` ranks: this one's, NCCL_SETTINGS, the rank, the world
    size, a heartbeat file in `folder`, one GPU (the r-th visible one), and `extra`."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    devices = visible.split(",") if visible else [str(number) for number in range(gpus)]
    return [{**os.environ, **NCCL_SETTINGS, RANK: str(rank), WORLD_SIZE: str(gpus),
             HEARTBEAT: str(Path(folder) / f"rank{rank}"), "CUDA_VISIBLE_DEVICES": devices[rank],
             **(extra or {})} for rank in range(gpus)]  # fmt: skip


def supervise(commands, environments, timeout=TIMEOUT, echo=print):
    """Start rank r as `commands[r]` in `environments[r]` (its HEARTBEAT file made first), and
    wait for them all: 0 when every rank ends well; else, once every rank is stopped, one line on
    stderr naming the rank that failed or hung, and a non-zero status (the rank's own when it
    exited with one)."""
    started = time.time()
    for environment in environments:
        Path(environment[HEARTBEAT]).touch()
        os.utime(environment[HEARTBEAT], (started, started))
    quiet = {"stdout": subprocess.DEVNULL}
    pairs = enumerate(zip(commands, environments, strict=True))
    ranks = [subprocess.Popen(command, env=environment, **({} if rank == 0 else quiet))
             for rank, (command, environment) in pairs]  # fmt: skip
    try:
        while True:
            failed = _failure(ranks, environments, started, timeout)
            if failed:
                rank, status, what = failed
                _stop(ranks)
                print(f"error: data parallel: rank {rank} {what}; all {len(ranks)} ranks were "
                      "stopped (checkpoints are written by rank 0 only: the last good one is "
                      "kept; continue with the same command and --resume)",
                      file=sys.stderr)  # fmt: skip
                return status
            if all(process.poll() == 0 for process in ranks):
                return 0
            time.sleep(POLL)
    except KeyboardInterrupt:  # each rank got the Ctrl-C too: rank 0 saves, then all end
        for process in ranks:
            process.wait()
        raise


def _failure(ranks, environments, started, timeout):
    """(rank, exit status, what happened) of the first rank that failed or hung, else None."""
    for rank, process in enumerate(ranks):
        code = process.poll()
        if code is not None and code != 0:
            if code < 0:
                return rank, 1, f"was killed by signal {signal.Signals(-code).name}"
            return rank, code, f"exited with status {code}"
    beats = [os.stat(environment[HEARTBEAT]).st_mtime for environment in environments]
    if max(beats) <= started:
        return None  # no rank has stepped yet: loading data and building may take long
    now, alive = time.time(), [rank for rank, process in enumerate(ranks) if process.poll() is None]
    late = [rank for rank in alive if now - beats[rank] > timeout]
    if late:
        rank = min(late, key=lambda rank: beats[rank])
        return rank, 1, (f"made no training step for {timeout:g} s (the other ranks wait for it "
                         "in an all-reduce)")  # fmt: skip
    return None


def _stop(ranks):
    """SIGTERM to every rank still running, then SIGKILL after STOP_GRACE seconds."""
    for process in ranks:
        if process.poll() is None:
            process.terminate()
    deadline = time.time() + STOP_GRACE
    for process in ranks:
        try:
            process.wait(max(0.0, deadline - time.time()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

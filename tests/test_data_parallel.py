"""Data-parallel training (nn/distributed/) without a GPU: ranks as threads on the NumPy tier,
joined by the test double of the communicator (tests/data_parallel_double.py) where NCCL would
join processes. What is checked is what does not depend on NCCL: each rank's shard, the buckets
(all-reduced as backward reaches them, last layer first), the identical step on every rank, a run
on N ranks following the run on one, checkpoints by rank 0 only, --resume on another number of
ranks; and the launcher's refusals and its handling of a rank that dies or hangs.
"""

import sys

import numpy as np
import pytest
from conftest import load_tier
from data_parallel_double import run_ranks

from nn.backend import TierError
from nn.data import load_data
from nn.distributed import launch, nccl
from nn.distributed.buckets import GradientBuckets
from nn.distributed.step import ranks_agreeing, shard
from nn.layers import BatchNorm, Linear, ReLU, Sequential
from nn.network import Model
from nn.recipes import Recipe
from nn.trainer import Trainer

# 180 training examples in batches of 32: the last batch holds 20 (7, 7, 6 on three ranks).
RECIPE = Recipe(epochs=2, batch_size=32, optimizer="momentum", lr=0.05, val_size=60,
                synthetic_size=240, patience=0)  # fmt: skip


def mlp():
    net = Sequential(Linear(2, 32), ReLU(), Linear(32, 32), ReLU(), Linear(32, 3))
    return Model("mlp3", net, (2,), 3, "cross_entropy")


def with_batchnorm():
    net = Sequential(Linear(2, 16), BatchNorm(16), ReLU(), Linear(16, 3))
    return Model("bn", net, (2,), 3, "cross_entropy")


def trainer(run_dir, communicator=None, make_model=mlp, recipe=RECIPE, seed=0):
    tier = load_tier("numpy")
    data = load_data("spirals", val_size=recipe.val_size, synthetic_size=recipe.synthetic_size)
    model = make_model().build(tier, seed)
    return Trainer(model, data, recipe, run_dir, progress_bar=False, echo=lambda line: None,
                   communicator=communicator)  # fmt: skip


def weights(trainer):
    return {name: np.array(p.value) for name, p in trainer.model.parameters().items()}


@pytest.mark.parametrize("count", [1, 2, 5, 20, 32, 33])
@pytest.mark.parametrize("size", [1, 2, 3, 4, 8])
def test_shards_cover_the_batch_in_order_and_differ_by_one_at_most(count, size):
    bounds = [shard(count, rank, size) for rank in range(size)]
    assert bounds[0][0] == 0 and bounds[-1][1] == count
    assert all(stop == start for (_, stop), (start, _) in zip(bounds, bounds[1:], strict=False))
    sizes = [stop - start for start, stop in bounds]
    assert max(sizes) - min(sizes) <= 1
    assert sizes == [len(part) for part in np.array_split(np.arange(count), size)]


class RecordingCommunicator:
    """One rank alone, noting what backward and the buckets did, in order (tests only)."""

    rank, size = 0, 1

    def __init__(self, log):
        self.log = log

    def all_reduce(self, arrays):
        self.log.append(("all_reduce", [array.shape for array in arrays]))

    def wait(self):
        self.log.append(("wait",))


def test_buckets_are_all_reduced_as_backward_reaches_them_last_layer_first():
    model = mlp().build(load_tier("numpy"), 0)
    log = []
    linears = [model.net.layers[index] for index in (0, 2, 4)]
    for number, layer in enumerate(linears):
        original = layer.backward
        layer.backward = lambda dout, original=original, number=number: (
            log.append(("backward", number)) or original(dout))  # fmt: skip
    # every layer holds more than 300 bytes of gradients (the last: 99 floats): a bucket each
    buckets = GradientBuckets(model, RecordingCommunicator(log), bucket_bytes=300)
    assert len(buckets.buckets) == 3
    x = np.random.default_rng(0).standard_normal((8, 2)).astype(np.float32)
    model.forward(x)
    buckets.start()
    model.backward(np.ones((8, 3), np.float32))
    buckets.finish()
    reduced = [entry[1] for entry in log if entry[0] == "all_reduce"]
    expected = [[tuple(p.value.shape) for p in layer.params.values()] for layer in linears]
    assert reduced == expected[::-1]
    # each bucket's sum starts right after its layer's backward, before the earlier layers'
    kinds = [entry[0] if entry[0] != "backward" else f"backward {entry[1]}" for entry in log]
    assert kinds == ["backward 2", "all_reduce", "backward 1", "all_reduce", "backward 0",
                     "all_reduce", "wait"]  # fmt: skip


def test_one_large_bucket_waits_for_every_layer():
    model = mlp().build(load_tier("numpy"), 0)
    log = []
    buckets = GradientBuckets(model, RecordingCommunicator(log))
    assert len(buckets.buckets) == 1
    model.forward(np.zeros((4, 2), np.float32))
    buckets.start()
    model.backward(np.ones((4, 3), np.float32))
    buckets.finish()
    assert [entry[0] for entry in log] == ["all_reduce", "wait"]
    assert len(log[0][1]) == 6  # three weights, three biases


def test_a_bucket_backward_did_not_reach_is_an_error():
    model = mlp().build(load_tier("numpy"), 0)
    buckets = GradientBuckets(model, RecordingCommunicator([]), bucket_bytes=300)
    buckets.start()  # and no backward
    with pytest.raises(RuntimeError, match=r"bucket\(s\) \[0, 1, 2\]"):
        buckets.finish()


@pytest.mark.parametrize("size", [2, 3])
def test_ranks_stay_identical_and_follow_the_run_on_one(tmp_path, size):
    alone = trainer(tmp_path / "alone")
    alone.fit()

    def rank(communicator):
        ranked = trainer(tmp_path / f"rank{communicator.rank}", communicator)
        history = ranked.fit()
        assert ranks_agreeing(ranked.model, communicator) == size
        return ranked, history

    results = run_ranks(rank, size)
    first = weights(results[0][0])
    for ranked, _ in results[1:]:  # bit for bit: the same summed gradients, the same step
        assert all(np.array_equal(first[name], value) for name, value in weights(ranked).items())
    for name, value in weights(alone).items():  # the same batches, summed in another order
        np.testing.assert_allclose(first[name], value, rtol=1e-4, atol=1e-5)
    for ours, theirs in zip(results[0][1], alone.progress.history, strict=True):
        assert ours["train_loss"] == pytest.approx(theirs["train_loss"], rel=1e-4)
        assert ours["train_accuracy"] == pytest.approx(theirs["train_accuracy"], abs=1e-9)
    assert (tmp_path / "rank0" / "last.npz").exists()
    assert not any((tmp_path / f"rank{rank}").exists() for rank in range(1, size))


def test_batchnorm_buffers_are_rank_0s_on_every_rank(tmp_path):
    def rank(communicator):
        ranked = trainer(tmp_path / f"rank{communicator.rank}", communicator, with_batchnorm)
        ranked.fit()
        return ranks_agreeing(ranked.model, communicator), ranked.model.buffers()

    (agreeing, buffers), (_, others) = run_ranks(rank, 2)
    assert agreeing == 2
    assert np.array_equal(buffers["1.running_mean"], others["1.running_mean"])


def test_a_rank_without_examples_adds_zeros(tmp_path):
    # 180 examples in batches of 4 on 8 ranks: ranks 4..7 get nothing in every batch.
    recipe = RECIPE.with_overrides(batch_size=4, epochs=1)
    alone = trainer(tmp_path / "alone", recipe=recipe)
    alone.fit()

    def rank(communicator):
        ranked = trainer(tmp_path / f"rank{communicator.rank}", communicator, recipe=recipe)
        ranked.fit()
        return weights(ranked), ranked.progress.history[0]

    results = run_ranks(rank, 8)
    for name, value in weights(alone).items():
        np.testing.assert_allclose(results[0][0][name], value, rtol=1e-4, atol=1e-5)
    expected = alone.progress.history[0]
    for _, history in results:  # every rank counts the whole batch's loss and correct answers
        assert history["train_loss"] == pytest.approx(expected["train_loss"], rel=1e-4)
        assert history["train_accuracy"] == pytest.approx(expected["train_accuracy"], abs=1e-9)


def test_resume_on_another_number_of_ranks_continues_the_run(tmp_path):
    alone = trainer(tmp_path / "alone")
    alone.fit()

    def first_epoch(communicator):  # two ranks train one epoch of two, rank 0 saves it
        ranked = trainer(tmp_path / "run", communicator)
        ranked.train_epoch()
        ranked.end_epoch()

    run_ranks(first_epoch, 2)

    def rest(communicator):  # three ranks resume from rank 0's checkpoint
        ranked = trainer(tmp_path / "resumed" / str(communicator.rank), communicator)
        ranked.resume(tmp_path / "run" / "last.npz")
        ranked.fit()
        return weights(ranked)

    resumed = run_ranks(rest, 3)
    for name, value in weights(alone).items():
        np.testing.assert_allclose(resumed[0][name], value, rtol=1e-4, atol=1e-5)


# -- the launcher -----------------------------------------------------------------------------


def test_more_gpus_than_the_machine_has_is_refused():
    with pytest.raises(TierError, match=r"^--gpus 2: this machine has 1 GPU$"):
        launch.check_gpus(2, 1)
    with pytest.raises(TierError, match=r"^--gpus 4: this machine has 0 GPUs$"):
        launch.check_gpus(4, 0)
    with pytest.raises(ValueError, match="--gpus must be an integer >= 1, got 0"):
        launch.check_gpus(0, 8)
    launch.check_gpus(2, 2)


def test_no_nccl_library_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(nccl, "_lib", None)
    monkeypatch.setattr(nccl, "candidates", lambda: [str(tmp_path / "libnccl.so.2")])
    with pytest.raises(RuntimeError, match=r"no NCCL library found: install .*nvidia-nccl-cu13"):
        nccl.library()


def test_train_refuses_gpus_on_a_tier_other_than_nvcc(capsys):
    from nn.train import main

    status = main(["--stage", "2", "--model", "mlp", "--data", "spirals", "--gpus", "2"])
    assert status == 2
    assert "--gpus trains on stage 4's nvcc variant" in capsys.readouterr().err


def environments(tmp_path, size):
    return [{"PATH": "/usr/bin:/bin", launch.HEARTBEAT: str(tmp_path / f"beat{rank}")}
            for rank in range(size)]  # fmt: skip


def test_a_rank_that_dies_stops_the_others_and_is_named(tmp_path, capsys):
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    dies = [sys.executable, "-c", "import sys; sys.exit(3)"]
    status = launch.supervise([sleeper, dies], environments(tmp_path, 2), timeout=30)
    assert status == 3
    err = capsys.readouterr().err
    assert "rank 1 exited with status 3; all 2 ranks were stopped" in err


def test_a_rank_that_hangs_is_named_after_the_timeout(tmp_path, capsys):
    # rank 0 steps (touches its heartbeat) twice a second; rank 1 steps once, then hangs
    touch = f"os.utime(os.environ['{launch.HEARTBEAT}'])"
    beating = f"import os, time\nfor _ in range(100):\n    {touch}\n    time.sleep(0.5)\n"
    hangs = f"import os, time\n{touch}\ntime.sleep(60)\n"
    commands = [[sys.executable, "-c", beating], [sys.executable, "-c", hangs]]
    status = launch.supervise(commands, environments(tmp_path, 2), timeout=2)
    assert status == 1
    err = capsys.readouterr().err
    assert "rank 1 made no training step for 2 s" in err


def test_ranks_that_all_end_well_end_the_run_well(tmp_path):
    ok = [sys.executable, "-c", "pass"]
    assert launch.supervise([ok, ok, ok], environments(tmp_path, 3), timeout=30) == 0


def test_ranks_agreeing_counts_a_rank_that_drifted():
    def work(communicator):
        model = mlp().build(load_tier("numpy"), 0)
        if communicator.rank == 1:
            next(iter(model.parameters().values())).value[0, 0] += 1e-6
        return ranks_agreeing(model, communicator)

    assert run_ranks(work, 3) == [2, 2, 2]

"""The data-parallel step recorded (nn/distributed/recorded.py), on stage 4's numba variant under
numba's CUDA simulator, ranks as threads joined by the test double (whose all-reduce is recorded
as NCCL's is): recorded steps train exactly as the same steps made op by op, bit for bit, on every
rank, through a last batch of another size and a rank left without examples. On two GPUs the
nvcc variant runs the same recordings with NCCL (tests/test_data_parallel_gpus.py)."""

import numpy as np
import pytest
from data_parallel_double import run_ranks

from nn.backend import load_tier
from nn.data import load_data
from nn.distributed.recorded import RecordedDataParallelStep
from nn.distributed.step import DataParallelStep
from nn.models import build_model
from nn.recipes import Recipe
from nn.trainer import Trainer

# 9 examples in batches of 4 on 2 ranks: shards of 2 and 2, twice, then a last batch of 1 (1, 0).
# A learning rate that changes at every step (cosine), replaced by name at each launch.
RECIPE = Recipe(epochs=1, batch_size=4, optimizer="nesterov", lr=0.1, schedule="cosine",
                val_size=0, seed=3)  # fmt: skip
RANKS = 2


@pytest.fixture(scope="module")
def numba_tier():
    return load_tier(4, None, "numba")


def train_ranks(tier, recorded):
    """[(the trainer, its parameters on the host)] of each rank after one epoch."""
    data = load_data("blobs", val_size=0, synthetic_size=9)

    def rank(communicator):
        model = build_model("mlp", data.input_shape, data.num_classes, hidden=8)
        trainer = Trainer(model.build(tier, RECIPE.seed), data, RECIPE, "/nonexistent",
                          progress_bar=False, echo=print, recorded=recorded,
                          communicator=communicator)  # fmt: skip
        trainer.train_epoch()
        weights = {name: tier.to_numpy(p.value) for name, p in trainer.model.parameters().items()}
        return trainer, weights

    return run_ranks(rank, RANKS)


def test_recorded_data_parallel_steps_train_exactly_as_op_by_op(numba_tier):
    op_by_op = train_ranks(numba_tier, recorded=False)
    recorded = train_ranks(numba_tier, recorded=True)
    assert all(type(trainer.train_step) is DataParallelStep for trainer, _ in op_by_op)
    assert all(type(trainer.train_step) is RecordedDataParallelStep for trainer, _ in recorded)
    # (global batch, shard) sizes: rank 1 has no example of the last batch and steps op by op.
    assert sorted(recorded[0][0].train_step.launchers) == [(1, 1), (4, 2)]
    assert sorted(recorded[1][0].train_step.launchers) == [(4, 2)]
    expected = op_by_op[0][1]
    for trainer, received in recorded:
        assert trainer.optimizer.steps == 3
        for name, value in expected.items():
            np.testing.assert_array_equal(received[name], value, err_msg=name)
    for (ours, _), (theirs, _) in zip(recorded, op_by_op, strict=True):
        assert ours.progress.seen == theirs.progress.seen == 9
        assert ours.progress.loss_sum == theirs.progress.loss_sum
        assert ours.progress.correct == theirs.progress.correct

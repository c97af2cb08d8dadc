"""nn's recorded steps (nn/steps/recorded.py) on stage 4's numba variant, under numba's CUDA
simulator: a step recorded once and launched again trains exactly as the same steps run op by op
(the same kernels on the same batches: equal weights, bit for bit). The nvcc variant's recordings
and CUDA graphs get the same test on a GPU (tests/test_stage4_nvcc.py)."""

import numpy as np
import pytest

from nn.backend import load_tier
from nn.data import load_data
from nn.models import build_model
from nn.recipes import Recipe
from nn.steps import DeviceStep, RecordedStep
from nn.trainer import Trainer


@pytest.fixture(scope="module")
def numba_tier():
    return load_tier(4, None, "numba")


def trainer_for(tier, data, recipe, **steps):
    """A trainer of a small MLP (2-8-2: the simulator runs a Python thread per CUDA thread)."""
    model = build_model("mlp", data.input_shape, data.num_classes, hidden=8)
    model = model.build(tier, recipe.seed)
    return Trainer(model, data, recipe, "/nonexistent", progress_bar=False, echo=print, **steps)


def train(tier, data, recipe, **steps):
    """(the trainer, its model's parameters) after one epoch of `recipe` on `data`."""
    trainer = trainer_for(tier, data, recipe, **steps)
    model = trainer.model
    trainer.train_epoch()
    weights = {name: tier.to_numpy(param.value) for name, param in model.parameters().items()}
    return trainer, weights


def test_recorded_steps_train_exactly_as_op_by_op(numba_tier):
    # A learning rate that changes at every step (cosine), and a last batch of another size (10
    # examples in batches of 4: a recording for 4, launched again for the second batch, and one
    # for 2). Small batches: the simulator runs a Python thread per CUDA thread.
    recipe = Recipe(epochs=1, batch_size=4, optimizer="nesterov", lr=0.1, schedule="cosine",
                    val_size=0, seed=3)  # fmt: skip
    data = load_data("blobs", val_size=0, synthetic_size=10)
    op_by_op, expected = train(numba_tier, data, recipe, recorded=False)
    trainer, received = train(numba_tier, data, recipe)
    assert type(op_by_op.train_step) is DeviceStep
    assert type(trainer.train_step) is RecordedStep
    assert sorted(trainer.train_step.launchers) == [2, 4]
    assert op_by_op.optimizer.steps == 3
    assert trainer.optimizer.steps == 3
    for name, value in expected.items():
        np.testing.assert_array_equal(received[name], value, err_msg=name)
    assert trainer.progress.seen == 10
    assert 0 < trainer.progress.loss_sum and 0 <= trainer.progress.correct <= 10


def test_a_recipe_a_recording_cannot_follow_trains_op_by_op(numba_tier, capsys):
    recipe = Recipe(epochs=1, batch_size=50, optimizer="adam", val_size=0)
    data = load_data("blobs", val_size=0, synthetic_size=100)
    assert type(trainer_for(numba_tier, data, recipe).train_step) is DeviceStep
    assert "training op by op: adam changes its scalars at every step" in capsys.readouterr().out


def test_graphs_need_the_nvcc_variant(numba_tier):
    recipe = Recipe(epochs=1, batch_size=50, optimizer="momentum", val_size=0)
    data = load_data("blobs", val_size=0, synthetic_size=100)
    with pytest.raises(ValueError, match="numba tier does not capture CUDA graphs"):
        trainer_for(numba_tier, data, recipe, graph=True)

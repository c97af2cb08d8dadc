"""Learning-rate schedules, and nn's optimizers against torch.optim (an optional oracle)."""

import math

import numpy as np
import pytest
from conftest import load_tier

from nn.layers import Linear, ReLU, Sequential
from nn.network import Model
from nn.optimizers import make_optimizer
from nn.schedules import Schedule

pytestmark = pytest.mark.week10  # week 10 teaches schedules and the larger models


def test_warmup_then_cosine():
    schedule = Schedule(0.1, "cosine", total_steps=110, warmup_steps=10, min_factor=0.1)
    assert schedule(0) == pytest.approx(0.01)  # 1/10 of the way up
    assert schedule(9) == pytest.approx(0.1)
    assert schedule(10) == pytest.approx(0.1)  # the cosine starts at the top
    assert schedule(60) == pytest.approx(0.1 * (0.1 + 0.9 * 0.5))  # halfway down
    assert schedule(110) == pytest.approx(0.01)  # ends at min_factor * lr


def test_step_and_exponential_decay_per_epoch():
    step = Schedule(1.0, "step", steps_per_epoch=10, gamma=0.5, step_epochs=2)
    assert [step(s) for s in (0, 19, 20, 39, 40)] == [1.0, 1.0, 0.5, 0.5, 0.25]
    exponential = Schedule(1.0, "exponential", steps_per_epoch=10, gamma=0.9)
    assert exponential(10) == pytest.approx(0.9)
    assert exponential(25) == pytest.approx(0.9**2.5)
    assert Schedule(0.3)(12345) == 0.3


def test_schedule_rejects_bad_settings():
    with pytest.raises(ValueError, match="schedule must be one of"):
        Schedule(0.1, "linear")
    with pytest.raises(ValueError, match="lr must be a positive number"):
        Schedule(math.nan)


# nn optimizer name and options -> the torch.optim equivalent
OPTIMIZERS = {
    "sgd": ({}, lambda torch, groups: torch.optim.SGD(groups, lr=0.1)),
    "momentum": ({"momentum": 0.8}, lambda torch, g: torch.optim.SGD(g, lr=0.1, momentum=0.8)),
    "nesterov": (
        {"momentum": 0.9},
        lambda torch, g: torch.optim.SGD(g, lr=0.1, momentum=0.9, nesterov=True),
    ),
    "rmsprop": ({}, lambda torch, g: torch.optim.RMSprop(g, lr=0.1, alpha=0.99, eps=1e-8)),
    "adam": ({"beta2": 0.99}, lambda torch, g: torch.optim.Adam(g, lr=0.1, betas=(0.9, 0.99))),
}


@pytest.mark.oracle
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizer_matches_torch_with_weight_decay_on_weights_only(name):
    torch = pytest.importorskip("torch")
    tier = load_tier("numpy")
    options, make_torch_optimizer = OPTIMIZERS[name]
    model = Model("m", Sequential(Linear(4, 5), ReLU(), Linear(5, 3)), (4,), 3, "cross_entropy")
    model.build(tier, seed=2)
    optimizer = make_optimizer(name, tier, model.parameters(), weight_decay=0.01, **options)
    reference = {n: torch.tensor(tier.to_numpy(p.value), dtype=torch.float64, requires_grad=True)
                 for n, p in model.parameters().items()}
    weights = [t for n, t in reference.items() if n.endswith("weight")]
    biases = [t for n, t in reference.items() if n.endswith("bias")]
    torch_optimizer = make_torch_optimizer(
        torch, [{"params": weights, "weight_decay": 0.01}, {"params": biases, "weight_decay": 0.0}]
    )
    rng = np.random.default_rng(4)
    for _ in range(4):
        x = rng.standard_normal((6, 4)).astype(np.float32)
        labels = rng.integers(0, 3, 6)
        logits = model.forward(tier.from_numpy(x))
        _, dlogits = model.loss.value_and_grad(tier, logits, tier.from_numpy(labels))
        model.backward(dlogits)
        optimizer.step(0.1)

        hidden = torch.relu(torch.from_numpy(x).double() @ reference["0.weight"].T
                            + reference["0.bias"])
        out = hidden @ reference["2.weight"].T + reference["2.bias"]
        torch_optimizer.zero_grad()
        torch.nn.functional.cross_entropy(out, torch.from_numpy(labels)).backward()
        torch_optimizer.step()
    for n, p in model.parameters().items():
        np.testing.assert_allclose(tier.to_numpy(p.value), reference[n].detach().numpy(),
                                   rtol=1e-4, atol=1e-5, err_msg=f"{name}: {n}")

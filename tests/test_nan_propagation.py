"""NaN is never hidden: the cases issue #10 found, on every tier, without torch.

The grader's `nan` check (grader/propagation.py) covers every op with NaN and Inf injected, and
tests/test_nan_oracle.py ties its rule to PyTorch; these are the whole-network consequences.
"""

import math
import warnings

import numpy as np
import pytest

import tiers
from grader.records import PASSED, Setup, Task
from grader.session import Session
from nn.models import build_model


def test_relu_keeps_nan(tier):
    y = tier.to_numpy(tier.relu(tier.from_numpy(np.array([np.nan, -1.0, 2.0], np.float32))))
    assert np.isnan(y[0]) and list(y[1:]) == [0.0, 2.0]


def test_hinge_loss_keeps_nan(tier):
    scores = tier.from_numpy(np.array([[np.nan, 1.0, -1.0]], np.float32))
    assert math.isnan(tier.hinge_loss(scores, tier.from_numpy(np.array([1])), 1.0))


def test_mlp_with_a_nan_first_layer_reports_a_nan_loss(tier):
    """The trainer's divergence guard watches the loss: a NaN weight must reach it, through the
    ReLU (which once turned NaN into 0, giving log(10) = 2.3026 instead)."""
    model = build_model("mlp", (1, 4, 4), 10, hidden=8).build(tier, seed=0)
    first = model.parameters()["1.weight"]
    first.value = tier.from_numpy(np.full(tier.to_numpy(first.value).shape, np.nan, np.float32))
    rng = np.random.default_rng(0)
    x = tier.from_numpy(rng.standard_normal((3, 1, 4, 4)).astype(np.float32))
    labels = tier.from_numpy(np.array([0, 4, 9]))
    loss, grad = model.loss.value_and_grad(tier, model.forward(x), labels)
    assert math.isnan(loss)
    assert np.isnan(tier.to_numpy(grad)).all()


def test_the_grader_nan_check_shows_no_warning_of_its_own():
    """The grader's poisoned inputs (inf * 0 in tanh_backward) make NumPy warn "invalid value";
    on numba's CUDA simulator the kernels' threads warn past np.errstate. Those warnings are the
    grader's doing, not the learner's: none reaches the grade table."""
    numba = tiers.get("numba")
    if not tiers.load(numba).ok:
        pytest.skip(f"{numba.label}: {tiers.load(numba).reason}")
    session = Session(Setup(numba.stage, numba.variant, None, numba.reference_stages))
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        result = session.run(Task("nan", "tanh_backward"))
    assert result.status == PASSED, result.message
    assert [str(w.message) for w in shown] == []

"""bench.epoch compares like with like: its PyTorch copy of a model computes what nn's does."""

import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import load_tier

from bench.epoch import load_tiers, to_torch
from nn.models import build_model


@pytest.mark.oracle
@pytest.mark.parametrize("name", ["mlp", "lenet5", "resnet_mini", "vit"])
def test_torch_copy_gives_the_same_logits(name):
    torch = pytest.importorskip("torch")
    tier = load_tier("numpy")
    model = build_model(name, (1, 28, 28), 10).build(tier, seed=3)
    model.eval()  # batchnorm's running statistics, as the copy's eval() below
    for param in model.parameters().values():  # biases, shifts and positions away from their zeros
        param.value = tier.add(param.value, tier.from_numpy(
            np.random.default_rng(1).standard_normal(tier.to_numpy(param.value).shape) * 0.05))
    x = np.random.default_rng(0).standard_normal((3, 1, 28, 28)).astype(np.float32)
    ours = tier.to_numpy(model.forward(tier.from_numpy(x)))
    with torch.no_grad():
        theirs = to_torch(model, torch).eval()(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4)


def test_impl_gives_the_benchmarked_tier_and_the_reference_the_others(tmp_path):
    """`make bench STAGE=2 IMPL=dir` times dir's stage 2, never the repository's."""
    load_tier("numpy")
    reference = Path(__file__).resolve().parent.parent / "stage2_numpy"
    shutil.copytree(reference, tmp_path / "stage2_numpy")
    tiers = load_tiers([1, 2], str(tmp_path))
    assert Path(tiers[2].__file__).parent == tmp_path / "stage2_numpy"
    assert Path(tiers[1].__file__).parent == reference.parent / "stage1_python"


def test_an_epoch_is_timed_with_the_collector_paused_and_then_restored():
    import gc

    from bench.epoch import collector_paused

    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        assert not gc.isenabled()
        raise RuntimeError("a failed epoch")
    assert gc.isenabled()


def test_without_mnist_the_bench_stops_in_one_line_saying_how_to_fetch_it(tmp_path, capsys):
    """`make bench` ends with bench.epoch: a learner who has not fetched MNIST gets the data
    error (exit status 3, as nn's commands), not a traceback."""
    pytest.importorskip("torch")
    from bench.epoch import main

    status = main(["--stage", "2", "--threads", "1", "--data-dir", str(tmp_path),
                   "--output", str(tmp_path / "bench")])  # fmt: skip
    error = capsys.readouterr().err
    assert status == 3
    assert error.startswith("error: bench.epoch: mnist: not found") and error.count("\n") == 1

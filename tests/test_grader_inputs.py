"""The grader's random inputs (grader/inputs.py): float32, reproducible from the seed alone, and
the same whether a large array is drawn in one thread or many."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from grader import inputs

LARGE = (3, inputs.PIECE + 12_345)  # pieces of PIECE elements, the last one short
DRAWS = {
    "normal": lambda rng, shape: inputs.normal(rng, shape, 2.0, -1.0),
    "uniform": lambda rng, shape: inputs.uniform(rng, shape, -0.5, 3.0),
    "away_from_zero": lambda rng, shape: inputs.away_from_zero(rng, shape, 0.5, 0.25),
}


@pytest.mark.parametrize("kind", DRAWS)
@pytest.mark.parametrize("shape", [(7, 5), LARGE])
def test_a_seed_gives_the_same_values_on_any_number_of_threads(kind, shape, monkeypatch):
    draw = DRAWS[kind]
    first = draw(np.random.default_rng([3, 1]), shape)
    other_seed = draw(np.random.default_rng([3, 2]), shape)
    with ThreadPoolExecutor(1) as one_thread:
        monkeypatch.setattr(inputs, "_threads", lambda: one_thread)
        again = draw(np.random.default_rng([3, 1]), shape)
    assert first.dtype == np.float32 and first.shape == shape
    assert np.array_equal(first, again)
    assert not np.array_equal(first, other_seed)


def test_every_piece_is_drawn_and_the_pieces_differ():
    values = inputs.normal(np.random.default_rng(0), LARGE).reshape(-1)
    assert np.isfinite(values).all()
    pieces = [values[start : start + 1000] for start in range(0, values.size, inputs.PIECE)]
    assert len(pieces) == 4
    for i, piece in enumerate(pieces):  # each piece its own generator: no piece repeats another
        assert all(not np.array_equal(piece, other) for other in pieces[i + 1 :])
    assert abs(values.mean()) < 0.01 and abs(values.std() - 1) < 0.01


@pytest.mark.parametrize("shape", [(7, 5), LARGE])
def test_spreads_keep_their_promises(shape):
    rng = np.random.default_rng(5)
    away = inputs.away_from_zero(rng, shape, scale=0.5, gap=0.25)
    assert np.abs(away).min() >= np.float32(0.25)
    assert 0.4 < np.mean(away > 0) < 0.6  # both signs
    low, high = -0.5, 3.0
    uniform = inputs.uniform(rng, shape, low, high)
    assert uniform.min() >= low and uniform.max() <= high
    assert uniform.max() - uniform.min() > 0.9 * (high - low)
    normal = inputs.normal(rng, shape, scale=2.0, offset=-1.0)
    assert abs(normal.mean() + 1) < 0.5 and 1.0 < normal.std() < 3.0


def test_a_failing_fill_raises():
    class Broken(np.random.Generator):
        def spawn(self, count):
            raise RuntimeError("no generators")

    with pytest.raises(RuntimeError, match="no generators"):
        inputs.normal(Broken(np.random.PCG64(0)), LARGE)


def test_a_forked_child_draws_with_threads_of_its_own():
    """A child forked after a large draw has none of the parent's threads: it makes its own."""
    import multiprocessing

    inputs.normal(np.random.default_rng(1), LARGE)  # the parent's threads exist
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as pool:
        drawn = pool.apply_async(inputs.normal, (np.random.default_rng(1), LARGE))
        child = drawn.get(timeout=60)
    assert np.array_equal(child, inputs.normal(np.random.default_rng(1), LARGE))

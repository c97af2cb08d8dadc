"""The shared random stream on every tier (contract/CONTRACT.md, "The shared random stream").

The reference below is written from the contract's formulas in plain Python ints, independently of
every tier. Each tier's dropout mask and initial weights must equal it (to float32 rounding), and
the contract's test vectors must come out of each tier's dropout threshold exactly.
"""

import math
import secrets

import numpy as np
import pytest

MASK64 = 2**64 - 1
GOLDEN = 0x9E3779B97F4A7C15

# (seed, i, uniform(seed, i)) from the contract.
CONTRACT_VECTORS = [
    (0, 0, 0.6524484753608704),
    (0, 1, 0.7012121081352234),
    (42, 7, 0.7347204089164734),
    (123456789, 1000, 0.6647701263427734),
]


def reference_mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def reference_uniform(seed, i):
    key = reference_mix((seed + GOLDEN) & MASK64)
    return (reference_mix((key + (i + 1) * GOLDEN) & MASK64) >> 40) / 2**24


def reference_normal(seed, i):
    radius = math.sqrt(-2.0 * math.log(1.0 - reference_uniform(seed, 2 * i)))
    return radius * math.cos(2.0 * math.pi * reference_uniform(seed, 2 * i + 1))


def reference_fans(shape):
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive_field = math.prod(shape[2:])
    return shape[1] * receptive_field, shape[0] * receptive_field


def assert_float32_close(actual, expected):
    """Equal to float32 rounding (the tiers after stage 1 store float32); NaN never passes."""
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-7, equal_nan=False)


@pytest.fixture
def seed():
    """A fresh seed for each test, printed so that a failure can be replayed."""
    value = secrets.randbits(40)
    print(f"stream seed {value}")
    return value


@pytest.mark.week04
@pytest.mark.parametrize(("seed", "i", "expected"), CONTRACT_VECTORS)
def test_the_reference_formula_gives_the_contract_vectors(seed, i, expected):
    assert reference_uniform(seed, i) == expected


@pytest.mark.week06
@pytest.mark.parametrize(("seed", "i", "expected"), CONTRACT_VECTORS)
def test_each_tier_keeps_exactly_when_uniform_is_at_least_p(tier, seed, i, expected):
    # uniform(seed, i) == expected, so p = expected keeps element i and the next representable
    # uniform (expected + 2^-24, exact in float32 too) drops it.
    x = tier.from_numpy(np.full(i + 1, 2.0, dtype=np.float32))
    _, kept = tier.dropout_forward(x, expected, seed)
    _, dropped = tier.dropout_forward(x, expected + 2**-24, seed)
    assert tier.to_numpy(kept)[i] == 1.0
    assert tier.to_numpy(dropped)[i] == 0.0


@pytest.mark.week06
@pytest.mark.parametrize("shape", [(1,), (37,), (3, 5), (2, 3, 4, 5)])
@pytest.mark.parametrize("p", [0.0, 0.25, 0.5, 0.9])
def test_dropout_mask_is_the_shared_stream_on_every_tier(tier, seed, shape, p):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    y, mask = tier.dropout_forward(tier.from_numpy(x), p, seed)
    count = math.prod(shape)
    expected_mask = np.array(
        [1.0 if reference_uniform(seed, i) >= p else 0.0 for i in range(count)]
    ).reshape(shape)
    np.testing.assert_array_equal(tier.to_numpy(mask), expected_mask)
    assert_float32_close(tier.to_numpy(y), x.astype(np.float64) * expected_mask / (1 - p))


@pytest.mark.week04
@pytest.mark.parametrize("shape", [(7,), (5, 3), (4, 3, 2, 2), (1, 1)])
def test_xavier_uniform_is_the_formula_on_every_tier(tier, seed, shape):
    fan_in, fan_out = reference_fans(shape)
    bound = math.sqrt(6 / (fan_in + fan_out))
    expected = [(2 * reference_uniform(seed, i) - 1) * bound for i in range(math.prod(shape))]
    weights = tier.to_numpy(tier.xavier_uniform(shape, seed))
    assert weights.shape == shape
    assert_float32_close(weights, np.reshape(expected, shape))


@pytest.mark.week04
@pytest.mark.parametrize("shape", [(7,), (5, 3), (4, 3, 2, 2), (1, 1)])
def test_he_normal_is_the_formula_on_every_tier(tier, seed, shape):
    fan_in, _ = reference_fans(shape)
    std = math.sqrt(2 / fan_in)
    expected = [reference_normal(seed, i) * std for i in range(math.prod(shape))]
    weights = tier.to_numpy(tier.he_normal(shape, seed))
    assert weights.shape == shape
    assert_float32_close(weights, np.reshape(expected, shape))


@pytest.mark.week04
def test_he_normal_draws_a_standard_normal_distribution(tier, seed):
    # fan_in = 2 makes the std sqrt(2 / 2) = 1: the samples are normal(seed, i) themselves.
    samples = tier.to_numpy(tier.he_normal((20000, 2), seed)).ravel().astype(np.float64)
    standard_error = 1 / math.sqrt(samples.size)  # of the mean; ~0.005
    assert abs(samples.mean()) < 5 * standard_error
    assert abs(samples.std() - 1.0) < 5 * standard_error  # the std's error is ~0.7 of this
    within_one_std = np.mean(np.abs(samples) < 1.0)
    assert abs(within_one_std - 0.6827) < 0.012
    assert np.all(np.isfinite(samples))


@pytest.mark.week04
def test_xavier_uniform_fills_its_interval_evenly(tier, seed):
    shape = (300, 200)
    bound = math.sqrt(6 / 500)
    samples = tier.to_numpy(tier.xavier_uniform(shape, seed)).ravel() / bound
    assert samples.min() >= -1.0 and samples.max() < 1.0
    counts, _ = np.histogram(samples, bins=10, range=(-1.0, 1.0))
    expected = samples.size / 10
    assert np.all(np.abs(counts - expected) < 5 * math.sqrt(expected))


@pytest.mark.week04
def test_different_seeds_give_different_weights_and_the_same_seed_the_same(tier, seed):
    first = tier.to_numpy(tier.xavier_uniform((8, 8), seed))
    again = tier.to_numpy(tier.xavier_uniform((8, 8), seed))
    other = tier.to_numpy(tier.xavier_uniform((8, 8), seed + 1))
    np.testing.assert_array_equal(first, again)
    assert np.count_nonzero(first != other) > 60

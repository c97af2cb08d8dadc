"""Shared fixtures: one test written once runs on every tier (the minitorch way).

A test that takes the `tier` fixture runs once per tier of the registry (tiers/), named by its
registry name. A tier whose package is absent or whose `available()` says no is skipped with the
reason, never silently passed; one whose code fails to import fails.
"""

import os
import secrets
from pathlib import Path

import numpy as np
import pytest

import tiers


def load_tier(name):
    """Import the tier called `name` (a registry name), or skip the test saying why."""
    loaded = tiers.load(tiers.get(name))
    if loaded.broken:
        pytest.fail(f"tier {name!r} ({loaded.tier.module}): {loaded.reason}")
    if not loaded.ok:
        pytest.skip(f"tier {name!r} unavailable: {loaded.reason}")
    return loaded.module


@pytest.fixture(params=list(tiers.TIERS))
def tier(request):
    """Each tier in turn."""
    return load_tier(request.param)


@pytest.fixture
def shared_data_dir():
    """The data directory holding mnist/ (NN_DATA_DIR, as CI sets it), or skip."""
    path = os.environ.get("NN_DATA_DIR")
    if not path or not (Path(path) / "mnist").is_dir():
        pytest.skip("NN_DATA_DIR does not point at a directory holding mnist/")
    return Path(path)


@pytest.fixture
def rng():
    """A fresh generator for each test; its seed is printed so that a failure can be replayed."""
    seed = secrets.randbits(32)
    print(f"rng seed {seed}")
    return np.random.default_rng(seed)

"""Shared fixtures: one test written once runs on every tier (the minitorch way).

A test that takes the `tier` fixture runs once per tier; a tier joins by being listed in
`TIER_MODULES`. A tier whose package is absent or whose `available()` says no is skipped with the
reason, never silently passed.
"""

import importlib
import os
import secrets
from pathlib import Path

import numpy as np
import pytest

TIER_MODULES = {
    "python": "stage1_python",
    "numpy": "stage2_numpy",
    "c": "stage3_c",
    "numba": "stage4_cuda.numba_impl",
    "nvcc": "stage4_cuda.nvcc_impl",
}


def load_tier(name):
    """Import the tier called `name` (a key of TIER_MODULES), or skip the test saying why."""
    module_name = TIER_MODULES[name]
    try:
        tier = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name and module_name.startswith(error.name):
            pytest.skip(f"tier {name!r} ({module_name}) is not written yet")
        raise
    ok, reason = tier.available()
    if not ok:
        pytest.skip(f"tier {name!r} unavailable: {reason}")
    return tier


@pytest.fixture(params=list(TIER_MODULES))
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


def pytest_report_header():
    """How the C tier was built (target flags, SIMD width, threads): the summation orders of its
    sums, hence its last bits, depend on them."""
    import stage3_c

    if stage3_c.available()[0]:
        return f"stage3_c build: {stage3_c.build_info()}"
    return None

"""Shared fixtures: one test written once runs on every tier (the minitorch way).

A test that takes the `tier` fixture runs once per tier of the registry (tiers/), named by its
registry name. A tier whose package is absent or whose `available()` says no is skipped with the
reason, never silently passed; one whose code fails to import fails.

What costs a minute is made once per run and shared (tests/made_once.py, across pytest-xdist's
workers too): `exercise_workspace`, the workspace `make exercises` writes.
"""

import os
import secrets
import signal
from pathlib import Path

import numpy as np
import pytest
from made_once import made_once, write_exercise_workspace

import tiers

# A run started in the background without job control (nohup, `cmd &` in a script) inherits
# SIGINT ignored; the tests of Ctrl-C need Python's own handler, as a run from a terminal has.
signal.signal(signal.SIGINT, signal.default_int_handler)

# `make test ARGS=...` hands its command-line variables to every make a test starts (through
# MAKEFLAGS and the environment): `make bench` in a page-command test would take pytest's ARGS.
# The tests' own make commands start from the Makefile's defaults, as a learner's do.
for _name in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "ARGS", "STAGE", "WEEK",
              "VARIANT", "IMPL", "AGAINST", "WORKSPACE"):  # fmt: skip
    os.environ.pop(_name, None)


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


@pytest.fixture(scope="session")
def exercise_workspace(tmp_path_factory):
    """A fresh workspace exactly as `make exercises` writes it, made once per run. Read it only: a
    test that changes a workspace works on a copy (made_once.copy_workspace)."""
    return made_once(tmp_path_factory, "exercise_workspace", write_exercise_workspace)


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

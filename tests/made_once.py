"""What costs a minute, made once per test run and shared by the tests that need it.

Under pytest-xdist (`-n 2`) each worker is a process of its own; `made_once` makes a folder once
for all of them: the first worker to need it makes it, under a lock, and the others wait, then
reuse it. conftest.py's session fixtures (the exercise workspace) are built on it.
"""

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def made_once(tmp_path_factory, name, make):
    """The folder `name` under the run's temporary directory, made by `make(folder)` once for the
    whole run, whichever worker asks first."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):  # a worker's basetemp lies inside the run's
        shared = shared.parent
    folder, done = shared / name, shared / f"{name}.done"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            make(folder)
            done.touch()
    return folder


def write_exercise_workspace(out):
    """`python -m tools.exercises --out OUT`, what `make exercises` runs: every tier and nn, the
    C tier and (where nvcc exists) the nvcc library built."""
    written = subprocess.run(
        [sys.executable, "-m", "tools.exercises", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert written.returncode == 0, f"tools.exercises failed:\n{written.stdout}{written.stderr}"


def copy_workspace(workspace, destination, packages=None):
    """A copy of `workspace` at `destination` (a new folder): all of it, or the packages of
    `packages` and those the tool gives with any tier (as `tools.exercises --tiers` writes them).
    File times are kept, so the built C tier and nvcc library stay up to date."""
    from tools.exercises import GIVEN_PACKAGES

    destination.mkdir(parents=True)
    for entry in sorted(workspace.iterdir()):
        if packages is not None and entry.name not in {*packages, *GIVEN_PACKAGES}:
            continue
        if entry.is_dir():
            shutil.copytree(entry, destination / entry.name, symlinks=True)
        else:
            shutil.copy2(entry, destination / entry.name)
    return destination

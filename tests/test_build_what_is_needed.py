"""A command builds only the tiers it needs, and of those only what is stale.

`make train STAGE=1` builds nothing (no tier of stage 1 has a build step); `make grade STAGE=3`
the C tier; stage 4 the C tier (its reference) and the variant graded, the nvcc one only where a
GPU can run it. Every build step runs with
`--if-stale` (a fresh build costs a look at file times), and a change of the C tier's target
(S2C_ARCH_FLAGS, `make build S2C_ARCH_FLAGS=...`) makes it stale like a changed source. That a
changed source is rebuilt before grading is test_stale_build.py's.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stage3_c import build as c_build
from tiers.__main__ import chosen_tiers

ROOT = Path(__file__).resolve().parent.parent
NEEDS_MAKE = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


@pytest.mark.parametrize(
    ("stages", "variant", "references", "expected"),
    [
        ((), None, True, ["python", "numpy", "c", "numba", "nvcc"]),
        ((1,), None, True, ["python", "numpy"]),
        ((1,), None, False, ["python"]),
        ((3,), None, False, ["c"]),
        ((4,), None, True, ["python", "numpy", "c", "numba", "nvcc"]),
        ((4,), "numba", True, ["python", "numpy", "c", "numba"]),
        ((4,), None, False, ["numba"]),  # nn.train's default variant
        ((4,), "nvcc", False, ["nvcc"]),
    ],
)
def test_a_stage_needs_its_tiers_and_those_it_is_checked_against(stages, variant, references,
                                                                 expected, monkeypatch):
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "0")  # a machine with a GPU
    assert [tier.name for tier in chosen_tiers(stages, variant, references)] == expected


def test_without_a_gpu_a_command_does_not_build_the_nvcc_variant(monkeypatch):
    """It could only be refused there; `make build` (every tier) still builds it."""
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    assert [tier.name for tier in chosen_tiers((4,), None)] == ["python", "numpy", "c", "numba"]
    assert [tier.name for tier in chosen_tiers((4,), "nvcc", False)] == []
    assert "nvcc" in [tier.name for tier in chosen_tiers((), None)]


def make_dry_run(*arguments):
    done = subprocess.run(["make", "-n", *arguments], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


@NEEDS_MAKE
@pytest.mark.parametrize(
    ("arguments", "build"),
    [
        (["train", "STAGE=1"], "--if-stale --stage 1 --no-references"),
        (["grade", "STAGE=3"], "--if-stale --stage 3"),
        (["grade", "STAGE=4", "VARIANT=numba"], "--if-stale --stage 4 --variant numba"),
        (["race"], "--if-stale --stage 4 --variant nvcc --no-references"),
        (["test"], "--if-stale"),
        (["progress"], "--if-stale"),
        (["build"], "--if-stale"),
        (["build", "IMPL=workspace"], "--if-stale --impl workspace"),
    ],
)
def test_every_target_builds_what_it_needs_and_only_when_stale(arguments, build):
    lines = [line.split("-m tiers build ")[1].split() for line in
             make_dry_run(*arguments).splitlines() if "-m tiers build" in line]  # fmt: skip
    assert lines == [build.split()]


def test_nothing_is_built_for_stage_1():
    """The build that `make train STAGE=1` runs: no step, no output, at once."""
    done = subprocess.run(
        [sys.executable, "-m", "tiers", "build", "--if-stale", "--stage", "1", "--no-references"],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


@pytest.fixture
def built_c_tier(tmp_path, monkeypatch):
    """The C build's paths pointed at a copy whose extension (an empty file) is newer than its
    sources, built for -march=native."""
    package = tmp_path / "stage3_c"
    shutil.copytree(ROOT / "stage3_c" / "csrc", package / "csrc")
    monkeypatch.setattr(c_build, "PACKAGE_DIR", package)
    monkeypatch.setattr(c_build, "CSRC", package / "csrc")
    monkeypatch.setattr(c_build, "BUILD_RECORD", package / "_build" / "last-build.json")
    (package / "_build").mkdir()
    (package / "_build" / "last-build.json").write_text(json.dumps({"asan": False,
                                                                    "arch": "-march=native"}))
    extension = package / f"{c_build.MODULE}.cpython-311-x86_64-linux-gnu.so"
    extension.touch()
    newest = max(path.stat().st_mtime for path in [*package.rglob("*"), Path(c_build.__file__)])
    os.utime(extension, (newest + 10, newest + 10))
    return package


def test_the_c_tier_is_stale_for_another_target(built_c_tier, monkeypatch):
    monkeypatch.delenv(c_build.ARCH_VARIABLE, raising=False)
    assert c_build.stale_reason() == ""
    monkeypatch.setenv(c_build.ARCH_VARIABLE, "-march=native")
    assert c_build.stale_reason() == ""
    monkeypatch.setenv(c_build.ARCH_VARIABLE, "-march=x86-64-v2")
    assert "S2C_ARCH_FLAGS='-march=x86-64-v2', built for '-march=native'" in c_build.stale_reason()


def test_the_c_tier_is_stale_after_a_source_changed(built_c_tier):
    source = built_c_tier / "csrc" / "linalg.c"
    later = (built_c_tier / f"{c_build.MODULE}.cpython-311-x86_64-linux-gnu.so").stat().st_mtime
    os.utime(source, (later + 5, later + 5))
    assert c_build.stale_reason() == "changed since the last build: linalg.c"


def make_test(args):
    """`make test ARGS=args` without building first (BUILD_STALE=true): (status, output)."""
    done = subprocess.run(["make", "--no-print-directory", "-o", "setup", "test",
                           "BUILD_STALE=true", f"ARGS={args}"],
                          cwd=ROOT, capture_output=True, text=True)  # fmt: skip
    return done.returncode, done.stdout + done.stderr


@NEEDS_MAKE
def test_a_week_without_tests_is_a_message_not_an_error():
    status, output = make_test("-m week17 tests/test_registry.py")
    assert status == 0, output
    assert "no test for this week: it has no exercises of its own" in output, output


@NEEDS_MAKE
def test_no_test_matching_other_arguments_is_still_an_error():
    status, output = make_test("-k no_test_has_this_name tests/test_registry.py")
    assert status != 0, output
    assert "no test matches ARGS" in output, output

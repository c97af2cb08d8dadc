"""EXERCISES.md is generated from the solution markers and the contract, and must not drift.

`python -m tools.exercise_index --write` (`make exercises-index`) writes it; these tests regenerate
it in memory and compare, and prove on a copy of the tiers that a changed marker is caught.
"""

import importlib
import os
import shutil
import subprocess
import sys

import pytest

import tiers
from tools.exercise_index import (
    INDEX,
    LADDER_KERNELS,
    collect,
    drift,
    enclosing_function,
    exercise_packages,
)
from tools.exercises import REPO_ROOT, SKIPPED_NAMES


def test_exercises_md_matches_the_markers():
    difference = drift(REPO_ROOT)
    assert difference == "", f"{INDEX} is out of date: run `make exercises-index`\n{difference}"


@pytest.fixture
def copy_of_the_repository(tmp_path):
    """The packages that hold exercises and EXERCISES.md, copied to a temporary folder."""
    for package in exercise_packages(REPO_ROOT):
        shutil.copytree(
            REPO_ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns(*SKIPPED_NAMES)
        )
    shutil.copy(REPO_ROOT / INDEX, tmp_path / INDEX)
    assert drift(tmp_path) == ""
    return tmp_path


def check(root):
    """`python -m tools.exercise_index --check --root root`: (exit status, output)."""
    done = subprocess.run(
        [sys.executable, "-m", "tools.exercise_index", "--check", "--root", str(root)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    return done.returncode, done.stdout + done.stderr


def test_a_renamed_task_is_caught_as_drift(copy_of_the_repository):
    source = copy_of_the_repository / "stage3_c" / "csrc" / "pooling.c"
    text = source.read_text()
    marker = "BEGIN SOLUTION week 13, task avgpool2d_backward"
    assert marker in text
    source.write_text(text.replace(marker, "BEGIN SOLUTION week 13, task avgpool2d_grad"))

    difference = drift(copy_of_the_repository)

    row = "| stage 3 | `stage3_c/csrc/pooling.c` | `s2c_avgpool2d_backward` | "
    assert f"-{row}avgpool2d_backward | op avgpool2d_backward |" in difference
    assert f"+{row}avgpool2d_grad | no check of its own |" in difference
    assert "- stage 3: matmul, avgpool2d_backward" in difference  # now an op with no exercise
    status, output = check(copy_of_the_repository)
    assert status == 1 and "out of date: run `make exercises-index`" in output, output
    assert check(REPO_ROOT)[0] == 0


def test_a_new_region_is_caught_as_drift(copy_of_the_repository):
    source = copy_of_the_repository / "stage1_python" / "linalg.py"
    text = source.read_text()
    given = "    n, m = tensor_shape(a)\n"
    assert text.count(given) == 1
    region = given.replace("    ", "    # BEGIN SOLUTION week 1, task shape\n    ") + (
        "    # END SOLUTION\n"
    )
    source.write_text(text.replace(given, region))

    difference = drift(copy_of_the_repository)

    added = [line for line in difference.splitlines() if line.startswith("+|")]
    assert added == [
        "+| stage 1 | `stage1_python/linalg.py` | `transpose` | shape | no check of its own | "
        "`make grade STAGE=1 WEEK=1` |"
    ]


def test_a_marker_the_contract_contradicts_stops_the_tool(copy_of_the_repository):
    source = copy_of_the_repository / "stage2_numpy" / "linalg.py"
    text = source.read_text()
    source.write_text(text.replace("week 7, task matmul", "week 8, task matmul"))

    with pytest.raises(ValueError, match="teaches op matmul in week 7 of stage 2"):
        collect(copy_of_the_repository)
    status, output = check(copy_of_the_repository)
    assert status == 2 and "stage2_numpy/linalg.py: task matmul is marked week 8" in output


def test_every_rung_task_names_a_kernel_of_its_tiers_ladder():
    """`matmul_NAME` is graded as `matmul(..., kernel=NAME)`, `softmax_NAME` as
    `softmax(x, kernel=NAME)`, `conv_NAME` as `conv2d_forward(..., kernel=NAME)`: NAME must be in
    the tier's MATMUL_KERNELS, SOFTMAX_KERNELS or CONV_KERNELS."""
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")  # import numba's kernels without a GPU
    rungs = [exercise for exercise in collect() if exercise.rung]
    assert {exercise.tier.stage for exercise in rungs} >= {3, 4}
    assert {exercise.ladder for exercise in rungs} == {"matmul", "softmax", "conv2d_forward"}
    for exercise in rungs:
        module = importlib.import_module(exercise.tier.module)
        kernels = getattr(module, LADDER_KERNELS[exercise.ladder])
        assert exercise.rung in kernels, (exercise.path, exercise.task, kernels)


def test_every_exercise_of_a_tier_is_graded_in_its_week():
    for exercise in collect():
        if exercise.tier:
            stage = exercise.tier.stage
            assert exercise.command.startswith(f"make grade STAGE={stage}")
            assert exercise.command.endswith(f"WEEK={exercise.week}")
            assert exercise.tier in tiers.of_stage(stage)


PYTHON = """\
def outer(x):
    def inner(value):
        return value

    # BEGIN SOLUTION week 1, task outer
    return inner(x)
    # END SOLUTION
"""

C = """\
static inline int helper(const float *x,
                         float *y)
{
    if (x == NULL) {
        /* BEGIN SOLUTION week 11, task helper */
        return 1;
        /* END SOLUTION */
    }
    return 0;
}
"""


def test_the_function_around_a_region_is_named():
    assert enclosing_function(PYTHON.splitlines(), 5, "python") == "outer"  # not `inner`
    assert enclosing_function(C.splitlines(), 5, "c") == "helper"  # not the `if`
    module_level = ["print(1)", "# BEGIN SOLUTION week 1, task x"]
    assert enclosing_function(module_level, 2, "python") == "(module level)"

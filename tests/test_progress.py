"""`make progress` (python -m tools.progress) on workspaces written by the exercise tool.

A fresh workspace is all "not implemented" and needs no grading; an exercise filled in from the
reference passes; a wrong one fails with the grader's message naming the op; weeks 1-3 written show
those weeks done and the rest not implemented, as a learner would see after three weeks.
"""

import io
import os
import shutil
import subprocess

import pytest
from made_once import copy_workspace

import tiers
from tools.exercise_index import collect
from tools.exercises import LANGUAGE_OF_SUFFIX, REPO_ROOT, stub_line, stub_regions
from tools.progress import (
    FAILED,
    NOT_IMPLEMENTED,
    PASSED,
    UNCHECKED,
    main,
    progress,
    why_not_graded,
)

STAGES = (1, 2, 3)  # the tiers progress grades without a GPU
EXERCISES = collect()


@pytest.fixture(scope="module")
def fresh(exercise_workspace, tmp_path_factory):
    """A workspace of stages 1-3 exactly as `make exercises` writes it (the C tier built): those
    tiers of the run's shared exercise workspace (conftest.py), as `--tiers` would write them."""
    out = tmp_path_factory.mktemp("progress") / "workspace"
    return copy_workspace(exercise_workspace, out, ["stage1_python", "stage2_numpy", "stage3_c"])


@pytest.fixture
def workspace(fresh, tmp_path):
    """A copy of the fresh workspace this test may change."""
    copy = tmp_path / "workspace"
    shutil.copytree(fresh, copy, symlinks=True)  # times kept: the C build stays up to date
    return copy


def exercise(path, task):
    return next(e for e in EXERCISES if e.path == path and e.task == task)


def fill(workspace, path, task, body=None):
    """Replace the stubs of `task` in `workspace`/`path` by the reference's regions (or `body`)."""
    reference = (REPO_ROOT / path).read_text()
    language = LANGUAGE_OF_SUFFIX[os.path.splitext(path)[1]]
    _text, regions = stub_regions(reference, language, path)
    lines = reference.splitlines(keepends=True)
    bodies = [
        body or "".join(lines[region.begin_line : region.end_line - 1])
        for region in regions
        if region.task == task
    ]
    target = workspace / path
    stub = stub_line(language, "", exercise(path, task).week, task, path, "")
    written = []
    for line in target.read_text().splitlines(keepends=True):
        written.append(bodies.pop(0) if line.strip() == stub else line)
    assert bodies == [], f"{path}: fewer stubs of {task} than regions"
    target.write_text("".join(written))


def statuses_of(workspace, stages=STAGES):
    statuses, _not_graded = progress(str(workspace), stages)
    return {(e.path, e.task): status for e, (status, _note) in statuses.items()}


def test_a_fresh_workspace_is_all_not_implemented(fresh):
    statuses, not_graded = progress(str(fresh), STAGES)
    assert len(statuses) == len(EXERCISES) > 100
    assert {status for status, _note in statuses.values()} == {NOT_IMPLEMENTED}
    assert not_graded == {
        "stage 4 (numba)": f"{fresh}/ does not hold stage4_cuda",
        "stage 4 (nvcc)": f"{fresh}/ does not hold stage4_cuda",  # its .cu exercises (csrc/)
        "nn": f"{fresh}/ does not hold nn",
    }


def test_a_tier_that_does_not_import_fails_its_written_exercises(workspace):
    fill(workspace, "stage2_numpy/linalg.py", "matmul", body="    return (\n")
    out = io.StringIO()

    main(["--impl", str(workspace), "--stages", "2"], out=out)

    table = out.getvalue()
    assert "stage 2: does not build or import: " in table and "linalg.py" in table, table
    assert "week 7, task matmul (stage2_numpy/linalg.py): stage 2 was not graded" in table


def test_one_exercise_filled_in_passes(workspace):
    fill(workspace, "stage1_python/linalg.py", "matmul")

    statuses = statuses_of(workspace)

    assert statuses.pop(("stage1_python/linalg.py", "matmul")) == PASSED
    assert set(statuses.values()) == {NOT_IMPLEMENTED}


def test_a_wrong_exercise_fails_naming_the_op(workspace):
    fill(workspace, "stage1_python/linalg.py", "transpose", body="    return a\n")

    statuses, _ = progress(str(workspace), STAGES)

    status, note = statuses[exercise("stage1_python/linalg.py", "transpose")]
    assert status == FAILED
    assert note.startswith("correct check: transpose:"), note


def test_a_c_rung_is_graded_through_its_kernel(workspace):
    fill(workspace, "stage3_c/csrc/matmul.c", "matmul_naive")

    statuses = statuses_of(workspace, stages=(3,))

    assert statuses[("stage3_c/csrc/matmul.c", "matmul_naive")] == PASSED
    assert statuses[("stage3_c/csrc/matmul.c", "matmul_blocked")] == NOT_IMPLEMENTED


def test_a_written_op_that_reaches_another_stub_is_not_implemented(workspace):
    """add calls the `elementwise` helper: the helper's stub is what the grader meets."""
    fill(workspace, "stage1_python/linalg.py", "add")

    statuses, _ = progress(str(workspace), (1,))

    status, note = statuses[exercise("stage1_python/linalg.py", "add")]
    assert (status, "not implemented (week 1, task elementwise)" in note) == (NOT_IMPLEMENTED, True)


def test_weeks_1_to_3_written_show_done_and_the_rest_not_implemented(workspace):
    early = [e for e in EXERCISES if e.tier and e.tier.stage == 1 and e.week <= 3]
    for written in early:
        fill(workspace, written.path, written.task)
    out = io.StringIO()

    assert main(["--impl", str(workspace)], out=out) == 0

    table = out.getvalue()
    for week in (1, 2, 3):
        row = next(line for line in table.splitlines() if line.startswith(f"{week:>4}  stage 1"))
        assert row.endswith("done") and f" {NOT_IMPLEMENTED} " not in row, table
    statuses = statuses_of(workspace)
    assert {statuses[e.path, e.task] for e in early} <= {PASSED, UNCHECKED}  # a helper: unchecked
    later = [e for e in EXERCISES if e.tier and e.tier.stage in STAGES and e not in early]
    assert {statuses[e.path, e.task] for e in later} == {NOT_IMPLEMENTED}
    assert "next: week 4, task" in table
    assert "stage 4 (numba)" in table  # listed, its stubs counted, not graded without a GPU


def test_the_reference_passes():
    """Without a workspace, progress reads the reference: every stage-1 op exercise passes."""
    statuses, not_graded = progress(None, (1,))

    stage1 = {e: status for e, (status, _note) in statuses.items() if e.tier and e.tier.stage == 1}
    assert {status for e, status in stage1.items() if e.op} == {PASSED}
    assert {status for e, status in stage1.items() if not e.op} == {UNCHECKED}  # helpers
    assert not_graded["stage 2"] == "not graded here (--stages)"


def test_make_progress_reads_the_folder_IMPL_names():
    """`make progress IMPL=` reads the reference, `IMPL=dir` the folder dir (make's dry run)."""

    def command(impl):
        done = subprocess.run(
            ["make", "-n", "-o", "setup", "progress", f"IMPL={impl}"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        return next(line for line in done.stdout.splitlines() if "-m tools.progress" in line)

    assert "--impl" not in command("")
    assert command("mine").split("-m tools.progress ")[1].strip() == "--impl mine"


def test_without_a_gpu_the_nvcc_variant_is_not_graded_and_the_reason_says_what_runs_here(
    monkeypatch,
):
    """Its exercises are unchecked, never sent to the simulator (which cannot run them), even
    with --stages 4; the reason names the command that compiles them here."""
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    for stages in (None, (4,)):
        reason = why_not_graded(tiers.find(4, "nvcc"), stages)
        assert "only on an NVIDIA GPU" in reason and "make build IMPL=workspace" in reason
    assert "VARIANT=numba" in why_not_graded(tiers.find(4, "numba"), None)
    assert why_not_graded(tiers.find(4, "numba"), (4,)) == ""

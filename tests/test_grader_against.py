"""A learner's own earlier tier as a reference: `make grade STAGE=3 AGAINST=workspace`
(`python -m grader --against-impl DIR`, grader/agreement.py).

The graded tier is compared with the learner's copy of the reference stage (the `agree` rows)
while the repository's tier still judges correctness. A learner's tier that is unwritten, wrong
or broken cannot judge an op: the row says why, a right graded tier never fails for it, and two
tiers wrong the same way never pass. The report's first lines and the JSON record name the
learner's folder; the record never lands among the committed results.
"""

import io
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from c_workspace import c_workspace, learner_tier

from grader import Options, grade
from grader.run import RUNS, default_json_path

ROOT = Path(__file__).resolve().parent.parent
PLANTED = ROOT / "tests" / "planted"

# A learner's stage 1 and stage 2 with planted bugs: relu wrong the same way in both (leaky with
# slope 0.5), sigmoid wrong in stage 2 only (it answers tanh); every other op is the repository's.
PLANTED_STAGE1 = """
import stage1_python as _stage1

globals().update({name: getattr(_stage1, name) for name in dir(_stage1) if name[0] != "_"})


def relu(x):
    return _stage1.leaky_relu(x, 0.5)
"""
PLANTED_STAGE2 = """
import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403


def relu(x):
    return _stage2.leaky_relu(x, 0.5)


def sigmoid(x):
    return _stage2.tanh(x)
"""


def against(tmp_path, stage, folder, ops, **options):
    """Grade `stage` on `ops` (correctness and agreement) with `folder` as the learner's earlier
    tier; returns (exit status, printed lines, {(op, check): Result}, JSON record)."""
    out = io.StringIO()
    status, record = grade(
        Options(stage=stage, ops=ops, checks=("correct", "agree"), against_impl=str(folder),
                json=str(tmp_path / "grade.json"), **options),
        out=out,
    )  # fmt: skip
    results = {(r.op, r.check): r for run in record["runs"] for r in run["results"]}
    return status, out.getvalue().splitlines(), results, record


@pytest.mark.parametrize(
    ("stage", "package", "label", "matmul_week"),
    [(2, "stage1_python", "stage 1 [python]", 1), (3, "stage2_numpy", "stage 2 [numpy]", 7)],
)
def test_a_learners_earlier_tier_judges_and_the_report_names_its_folder(
    tmp_path, stage, package, label, matmul_week
):
    """relu written: the two tiers agree; matmul a stub: it cannot judge, and says why."""
    workspace = learner_tier(tmp_path / "workspace", package, solved={"relu"})
    status, lines, results, record = against(tmp_path, stage, workspace, ("relu", "matmul"))

    assert status == 0, "\n".join(lines)
    own_folder = workspace.resolve() / package
    assert lines[0].startswith(f"grading stage {stage} [")
    assert f"against your {label} from {own_folder}" in lines[0]
    assert re.fullmatch(
        rf"  your {re.escape(label)} judges the agree rows wherever the repository's "
        rf"{re.escape(label)} \(\S*{package}\) shows it right; the repository's tiers judge "
        r"every other check",
        lines[1],
    ), lines[1]
    assert results["relu", "agree"].status == "passed"
    assert results["relu", "agree"].message == f"4 cases, as your {label}"
    assert results["matmul", "correct"].status == "passed"  # the repository's tier judges it
    assert results["matmul", "agree"].status == "skipped"
    assert results["matmul", "agree"].message == (
        f"cannot compare with your {label}: matmul: not implemented (week {matmul_week}, "
        "task matmul)"
    )
    assert record["options"]["against_impl"] == str(workspace)
    assert record["runs"][0]["own_reference"]["origin"] == str(own_folder)
    assert record["runs"][0]["reference"]["origin"] == str(ROOT / package)


def test_a_wrong_learner_stage2_cannot_fail_a_right_stage3(tmp_path):
    """The planted stage 2 pads conv's input off by one: its conv cannot judge the right C."""
    status, lines, results, _ = against(tmp_path, 3, PLANTED / "conv_padding", ("conv2d_forward",))

    assert status == 0, "\n".join(lines)
    assert results["conv2d_forward", "correct"].status == "passed"
    row = results["conv2d_forward", "agree"]
    assert row.status == "skipped"
    assert re.match(
        r"your stage 2 \[numpy\] is wrong here, so it cannot judge: against the repository's "
        r"stage 2 \[numpy\], conv2d_forward: y\[[\d, ]+\] expected .*padding=1\]; fix it first "
        r"\(make grade STAGE=2 WEEK=8 IMPL=tests/planted/conv_padding\)$",
        row.message,
    ), row.message


def test_two_tiers_wrong_the_same_way_never_pass_and_a_disagreement_names_the_wrong_one(
    tmp_path,
):
    """Stage 2 graded against the learner's stage 1: relu wrong in both, sigmoid in stage 2."""
    for package, source in (("stage1_python", PLANTED_STAGE1), ("stage2_numpy", PLANTED_STAGE2)):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text(source)
    status, lines, results, _ = against(
        tmp_path, 2, tmp_path, ("relu", "sigmoid", "tanh"), impl=str(tmp_path)
    )

    assert status == 1, "\n".join(lines)
    assert results["relu", "correct"].status == "failed"
    relu = results["relu", "agree"]
    assert relu.status == "skipped"
    assert relu.message.startswith("your stage 1 [python] is wrong here, so it cannot judge")
    assert "; stage 2 [numpy] gives the same wrong answer [case 1 of" in relu.message
    assert results["sigmoid", "correct"].status == "failed"
    sigmoid = results["sigmoid", "agree"]
    assert sigmoid.status == "failed"
    assert sigmoid.message.startswith(
        "differs from your stage 1 [python], which is right here (as the repository's stage 1 "
        "[python] says): sigmoid: y["
    ), sigmoid.message
    assert results["tanh", "agree"].status == "passed"


def test_a_broken_learner_tier_is_reported_once_and_correctness_still_runs(tmp_path):
    (tmp_path / "stage1_python").mkdir()
    (tmp_path / "stage1_python" / "__init__.py").write_text("def relu(x):\n    return x +\n")
    status, lines, results, _ = against(tmp_path, 2, tmp_path, ("relu",))

    assert status == 0
    broken = results["import", "agree"]
    assert broken.status == "skipped"
    assert broken.message.startswith(
        f"your stage 1 from {tmp_path / 'stage1_python'} is broken: importing it failed: "
        "SyntaxError"
    ), broken.message
    assert broken.message in lines
    assert results["relu", "correct"].status == "passed"
    assert ("relu", "agree") not in results


@pytest.mark.slow
def test_stage4_is_compared_with_a_learners_stage3(tmp_path):
    """The GPU tier (on the CUDA simulator without a GPU) against the learner's C."""
    workspace = c_workspace(tmp_path / "workspace", solved={"relu"})
    status, lines, results, _ = against(tmp_path, 4, workspace, ("relu",), variant="numba")

    assert status == 0, "\n".join(lines)
    assert "against your stage 3 [c] from " in lines[0]
    assert results["relu", "agree"].message == "4 cases, as your stage 3 [c]"


def test_a_run_against_a_learners_tier_is_recorded_under_runs_never_the_results():
    options = Options(stage=3, impl="workspace", against_impl="workspace")
    assert default_json_path(options) == RUNS / "grade-stage3-against.json"


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)  # fmt: skip


@pytest.mark.parametrize(
    ("stage", "folder", "problem"),
    [
        ("3", "no/such/folder", "no folder no/such/folder (your stage 2, which stage 3 is "
                                "compared with)"),
        ("2", "tests/planted/stub", f"no tier package at {PLANTED / 'stub' / 'stage1_python'} "
                                    "(your stage 1, which stage 2 is compared with)"),
        ("4", "tests/planted/stub", f"no tier package at {PLANTED / 'stub' / 'stage3_c'} "
                                    "(your stage 3, which stage 4 is compared with)"),
    ],
)  # fmt: skip
def test_a_folder_without_the_earlier_stage_is_a_one_line_usage_error(stage, folder, problem):
    done = run_cli("--stage", stage, "--against-impl", folder)
    assert done.returncode == 2
    assert done.stderr == f"python -m grader: error: --against-impl {folder}: {problem}\n"


NEEDS_MAKE = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


@NEEDS_MAKE
def test_the_committed_results_refuse_a_learners_reference():
    done = run_cli("--stage", "2", "--results", "--against-impl", "workspace")
    assert done.returncode == 2
    assert "--results records the repository's tier in full: no --impl, --against-impl" in (
        done.stderr
    )
    done = subprocess.run(["make", "-o", "setup", "results", "AGAINST=workspace"], cwd=ROOT,
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode != 0
    assert "make results: AGAINST=workspace goes with make grade only" in done.stdout


@NEEDS_MAKE
def test_make_grade_passes_AGAINST_to_the_grader():
    done = subprocess.run(["make", "-n", "-o", "setup", "grade", "STAGE=3", "AGAINST=mine"],
                          cwd=ROOT, capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert re.search(r"-m grader --stage 3 .*--against-impl mine", done.stdout), done.stdout

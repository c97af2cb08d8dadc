"""Every week can be finished with only the weeks before it written.

A workspace holding weeks 1..k as a learner who has done them has them (the reference's code,
`python -m tools.exercises --solved-through k`) and stubs for every later week must pass week k:
the grader on week k's ops, and for the network (weeks 9 and 10) `make progress` marking the week
done and the week's cheap page commands (training on small sets, the models' summaries) running to
their end. A piece that week k needs from a later week would stop it here with that week's stub
("week 10, task ...: not implemented yet").

Only what proves the order is run, once per week: the grader's quick correctness check of the
week's own ops (the weeks before were proved in their turn; the tests of each week's ops are
test_weeks.py's), and the training commands on synthetic sets or a few hundred digits (the
network's checks at full size are test_nn_exercises.py's). Each workspace is written once per
session, without building anything: a native tier is built when its week is graded.
"""

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tiers
from contract import ops_for_week, week_of
from datasets.errors import DatasetError
from datasets.sources import find
from grader.ops import OPS
from grader.records import FAILED, PASSED, SKIPPED, Result, Task
from grader.run import Options, _run_tasks, grade, selected_ops, skipped_if_later_week
from tiers.loading import build_if_stale
from tools import exercises
from tools.progress import NOT_IMPLEMENTED, grade_network, progress

ROOT = Path(__file__).resolve().parent.parent
# The packages of a workspace of the CPU weeks: stage 4 has test_a_gpu_week_... below.
CPU_PACKAGES = "stage1_python,stage2_numpy,stage3_c,nn"


def tier_weeks(stage):
    """The weeks that teach ops of `stage`, in order."""
    return sorted({week_of(stage, name) for name in OPS})


# (stage, week) of every week that teaches a CPU tier's ops: weeks 1-8 and 11-13.
CPU_WEEKS = [(stage, week) for stage in (1, 2, 3) for week in tier_weeks(stage)]
GPU_WEEKS = [(4, week) for week in tier_weeks(4)]


@pytest.fixture(scope="module")
def solved_through(tmp_path_factory):
    """solved_through(k, packages): a workspace of `packages` with weeks 1..k written and the
    rest stubs, written once per session."""
    written = {}

    def workspace(week, packages=CPU_PACKAGES):
        if (week, packages) not in written:
            out = tmp_path_factory.mktemp(f"through-week{week:02d}") / "workspace"
            # As `make exercises` writes it, unbuilt: the week that grades a native tier builds it
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(exercises, "build_tier", lambda out, build: None)
                exercises.main(["--out", str(out), "--tiers", packages,
                                "--solved-through", str(week)])
            written[week, packages] = out
        return written[week, packages]

    return workspace


def grade_week(workspace, stage, week):
    """The grader's quick correctness check of week `week`'s ops of `stage` in `workspace`: every
    op passes, none meets a stub."""
    for tier in tiers.of_stage(stage):  # built here, not against the grader's clock
        assert build_if_stale(tier, workspace / tier.package) == ""
    out = io.StringIO()
    options = Options(stage=stage, week=week, impl=str(workspace), quick=True,
                      checks=("correct",), json=str(workspace.parent / f"week{week}.json"))
    status, record = grade(options, out)
    results = [result for run in record["runs"] for result in run["results"]]
    failed = [f"{r.op}: {r.message}" for r in results if r.status == FAILED]
    assert status == 0 and not failed, "\n".join(failed) or out.getvalue()
    assert {r.op for r in results if r.status == PASSED} == set(ops_for_week(stage, week))


@pytest.mark.parametrize(("stage", "week"), CPU_WEEKS, ids=[f"week{w:02d}" for _, w in CPU_WEEKS])
def test_a_tier_week_passes_with_only_the_weeks_before_it(solved_through, stage, week):
    grade_week(solved_through(week), stage, week)


@pytest.mark.slow
@pytest.mark.parametrize(("stage", "week"), GPU_WEEKS, ids=[f"week{w:02d}" for _, w in GPU_WEEKS])
def test_a_gpu_week_passes_with_only_the_weeks_before_it(solved_through, stage, week):
    """Both variants; the workspace's nvcc library is built when first graded (a minute)."""
    numba = tiers.find(4, "numba")
    if numba.simulated or not tiers.load(numba).ok:
        pytest.skip("stage 4's weeks run on a GPU: numba's simulator takes minutes a week, and "
                    "the nvcc variant needs a GPU")
    grade_week(solved_through(week, "stage4_cuda"), stage, week)


def train(workspace, stage, model, *flags):
    """`make train STAGE=stage` of `model` on the workspace's network and tier (nn.train): its
    output."""
    environment = os.environ | {"S2C_NN": str(workspace)}
    run_dir = workspace.parent / "runs" / f"{model}-stage{stage}"
    command = [sys.executable, "-m", "nn.train", "--stage", str(stage), "--impl", str(workspace),
               "--model", model, "--no-progress", "--run-dir", str(run_dir), *flags]
    done = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    if "--summary" not in flags:  # a training run names its network: the workspace's
        assert f"network: nn/ of {workspace}" in done.stdout + done.stderr
    return done.stdout


# Each network week's page commands, cheap: training on the synthetic sets, the MLP on a few
# hundred MNIST digits (its recipe's optimizer, schedule and augmentation), and the larger models'
# summaries (built by the workspace's network). Week 10's workspace holds the whole network, so
# its training is the reference's, which test_nn_*.py train.
SMALL = ["--train-size", "256", "--val-size", "64", "--epochs", "1", "--batch-size", "32"]
PAGE_COMMANDS = [  # (week, stage, model, flags)
    (9, 1, "perceptron", ["--data", "blobs"]),
    (9, 1, "xor", ["--data", "xor"]),
    (9, 2, "mlp", ["--data", "mnist", *SMALL]),
    (9, 2, "lenet5", ["--summary"]),
    (10, 2, "fashion_cnn", ["--summary"]),
    (10, 2, "resnet_mini", ["--summary"]),
]


@pytest.mark.parametrize(("week", "stage", "model", "flags"), PAGE_COMMANDS,
                         ids=[f"week{week:02d}-{model}" for week, _, model, _ in PAGE_COMMANDS])
def test_a_network_week_trains_with_only_the_weeks_before_it(solved_through, week, stage, model,
                                                            flags):
    if "mnist" in flags:
        try:
            find("mnist")  # where nn.train looks: NN_DATA_DIR, the cache, Debian's package
        except DatasetError as error:
            pytest.skip(str(error))
    output = train(solved_through(week), stage, model, *flags)
    ending = "total parameters:" if "--summary" in flags else "test_accuracy="
    assert output.strip().splitlines()[-1].startswith(ending), output


def test_make_progress_marks_the_network_weeks_done_in_their_turn(solved_through):
    """Weeks 1..9 written: the network's exercises of week 9 pass, week 10's are its stubs, still
    to write; weeks 1..10: week 10's pass too (workspaces of the network alone: no tier to
    grade; week 9's checks run once, on the first)."""
    statuses, _ = progress(str(solved_through(9, "nn")))
    network = {e: status for e, (status, _note) in statuses.items() if e.tier is None}
    assert {status for e, status in network.items() if e.week == 9} == {PASSED}, statuses
    assert {status for e, status in network.items() if e.week == 10} == {NOT_IMPLEMENTED}
    week10 = [e for e in network if e.week == 10]
    graded = grade_network(solved_through(10, "nn"), week10)
    assert {status for status, _note in graded.values()} == {PASSED}, graded


def test_solved_through_keeps_the_weeks_up_to_k_and_stubs_the_rest(tmp_path, capsys):
    out = tmp_path / "workspace"
    exercises.main(["--out", str(out), "--tiers", "stage1_python", "--solved-through", "1"])
    linalg = (out / "stage1_python" / "linalg.py").read_text()
    reference = (ROOT / "stage1_python" / "linalg.py").read_text()
    assert "SOLUTION" not in linalg
    # week 1's regions are the reference's, markers gone; week 21's (swap_middle_axes) a stub
    later = 'raise NotImplementedError("week 21, task swap_middle_axes: not implemented yet'
    assert linalg.count("not implemented yet") == 1 and later in linalg
    week1 = reference.split("BEGIN SOLUTION week 1, task transpose")[1].split("# END")[0]
    assert week1.strip().splitlines()[0].strip() in linalg
    stub = 'raise NotImplementedError("week 2, task relu: not implemented yet'
    assert stub in (out / "stage1_python" / "activations.py").read_text()
    assert "week  1" not in capsys.readouterr().out  # the regions left to write: weeks 2 on


@pytest.mark.parametrize("week", ["-1", str(max(exercises.WEEKS) + 1)])
def test_solved_through_must_be_a_week(tmp_path, week):
    with pytest.raises(SystemExit) as stopped:
        exercises.main(["--out", str(tmp_path / "w"), "--tiers", "nn", "--solved-through", week])
    assert stopped.value.code == 2


@pytest.mark.parametrize(("stub_week", "graded_week", "status"), [
    (16, 15, SKIPPED),  # the nvcc variant's matmul rungs are week 16's SGEMM ladder
    (16, 16, FAILED),
    (14, 15, FAILED),  # an earlier week's stub is the learner's to write
    (16, None, FAILED),  # a whole stage is graded: everything is due
])  # fmt: skip
def test_a_check_that_stops_at_a_later_weeks_stub_is_skipped(stub_week, graded_week, status):
    message = f"matmul: not implemented (week {stub_week}, task sgemm_naive)"
    result = skipped_if_later_week(Result("matmul", "correct", FAILED, message), graded_week)
    assert result.status == status
    assert message in result.message


class StubbedAfterWeek7:
    """A grader runner over a workspace written through week 7: week 8's ops stop at their stub."""

    def run(self, task, limit):
        if task.op in ("conv2d_forward", "maxpool2d_forward"):
            stub = f"{task.op}: not implemented (week 8, task {task.op})"
            return Result(task.op, task.kind, FAILED, stub)
        return Result(task.op, task.kind, PASSED)


def test_the_bench_of_a_workspace_written_up_to_a_week_times_what_is_written():
    """make bench on weeks 1..k: later weeks' ops are skipped, named in one line, none failed."""
    tasks = [Task("speed", op) for op in ("relu", "conv2d_forward", "conv2d_forward",
                                          "maxpool2d_forward", "adam_step")]  # fmt: skip
    results, out = [], io.StringIO()
    _run_tasks(20, StubbedAfterWeek7(), tasks, results, out, bench=True)
    assert [r.status for r in results] == [PASSED, SKIPPED, SKIPPED, PASSED]
    lines = out.getvalue().splitlines()
    assert len(lines) == 3 and "failed" not in out.getvalue()
    assert lines[-1] == (
        "not benched, 2 not written yet (the stubs of week 8: conv2d_forward, maxpool2d_forward)"
    )
    graded = []  # a grading (no bench) still fails them: every op of the stage is due
    _run_tasks(20, StubbedAfterWeek7(), tasks, graded, io.StringIO())
    assert [r.status for r in graded].count(FAILED) == 2


@pytest.mark.parametrize(("stage", "through"), [(1, 6), (2, 8), (3, 13), (4, 16)])
def test_through_k_grades_the_whole_tier_as_far_as_week_k(stage, through):
    """The whole tier a week ends (weeks 6, 8, 13, 16): every op of its weeks, none of week 19's,
    whose stubs a learner in order still has."""
    names = selected_ops(Options(stage=stage, through=through))
    assert names == [name for name in OPS if week_of(stage, name) <= through]
    assert "conv2d_forward" in names and "int8_linear" not in names

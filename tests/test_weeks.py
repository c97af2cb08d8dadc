"""Each week's ops, checked by the grader on the tier `make test` takes (minitorch's task markers).

`make test ARGS='-m week07'` runs week 7's cases here: every op the week teaches, through the
grader's own correctness, gradient and distribution checks, on the learner's tier. The folder comes
from S2C_IMPL, which `make test` sets by the rule of `make grade` (README, "Which code runs"):
workspace/ when it exists, `IMPL=dir` for another folder, `IMPL=` (empty) for the reference. A stage
that folder does not hold is the repository's. Inputs are fresh random numbers (the seed is in
every failure message); native tiers run in a worker process, so a crash fails one case.
"""

import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

import tiers
from contract import ops_for_week, week_of
from grader.isolation import InProcessRunner, IsolatedRunner
from grader.ops import OPS
from grader.records import FAILED, SKIPPED, Setup, Task

IMPL = os.environ.get("S2C_IMPL") or None
SEED = secrets.randbits(31)
CHECK_SECONDS = 60  # per check; generous, the machine may be shared
# numba's CUDA simulator runs each GPU thread as a Python thread: stage 4's conv2d_backward check
# took 58 s of the 60 on a 2-core machine (2026-11-27), so a simulated tier gets four times as long.
SIMULATED_CHECK_SECONDS = 4 * CHECK_SECONDS


def graded_folder(stage):
    """The folder holding the graded tier of `stage`: IMPL when it holds it, else None."""
    if IMPL and (Path(IMPL) / tiers.find(stage).package / "__init__.py").exists():
        return str(Path(IMPL).resolve())
    return None


def week_cases():
    """(stage, variant, op, check) for every op of every week that teaches a tier's ops."""
    cases = []
    for stage in tiers.STAGES:
        variants = tiers.variants(stage) or (None,)
        for week in sorted({week_of(stage, name) for name in OPS}):
            for name in ops_for_week(stage, week):
                op = OPS[name]
                checks = ["correct"] + ["grad"] * bool(op.grads) + ["dist"] * bool(op.dist)
                mark = getattr(pytest.mark, f"week{week:02d}")
                for variant in variants:
                    for check in checks:
                        tier = f"stage{stage}" + (f"-{variant}" if variant else "")
                        case = (stage, variant, name, check)
                        cases.append(pytest.param(*case, marks=mark, id=f"{tier}-{name}-{check}"))
    return cases


@pytest.fixture(scope="module")
def runners():
    """One grader runner per tier, started on first use and closed at the end."""
    started = {}
    yield started
    for runner in started.values():
        runner.close()


def runner_for(runners, stage, variant):
    """The runner grading `stage` (`variant`): a worker process for native tiers (3 and 4)."""
    if (stage, variant) not in runners:
        tier = tiers.find(stage, variant)
        setup = Setup(stage, variant, graded_folder(stage), tier.reference_stages, SEED)
        runners[stage, variant] = (IsolatedRunner if tier.native else InProcessRunner)(setup)
    return runners[stage, variant]


@pytest.mark.parametrize(("stage", "variant", "op", "check"), week_cases())
def test_week_op(runners, stage, variant, op, check):
    runner = runner_for(runners, stage, variant)
    graded = runner.describe()["graded"]
    where = graded_folder(stage) or "the reference"
    if not graded["ok"]:
        if graded["broken"]:
            pytest.fail(f"{graded['label']} from {where} does not import: {graded['reason']}")
        pytest.skip(f"{graded['label']}: {graded['reason']}")
    simulated = stage == 4 and os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
    result = runner.run(Task(check, op), SIMULATED_CHECK_SECONDS if simulated else CHECK_SECONDS)
    if result.status == FAILED:
        pytest.fail(f"{graded['label']} from {where}, seed {SEED}: {result.message}", False)
    if result.status == SKIPPED:
        pytest.skip(result.message)


ROOT = Path(__file__).resolve().parent.parent
DOCS = [
    ROOT / "README.md",
    ROOT / "contract" / "CONTRACT.md",
    *sorted((ROOT / "curriculum").glob("*.md")),
    *sorted(ROOT.glob("stage*/README.md")),
]
COUNT_WEEK_MARKERS = """
import collections, json, pytest

class Count:
    weeks = collections.Counter()

    def pytest_collection_finish(self, session):
        for item in session.items:
            self.weeks.update({m.name for m in item.iter_markers() if m.name.startswith("week")})

pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "tests"], plugins=[Count()])
print(json.dumps(Count.weeks))
"""


def test_every_week_the_docs_cite_has_tests():
    """`-m weekNN` in any page selects at least one test (pytest's exit 5 is "no tests")."""
    cited = {week for doc in DOCS for week in re.findall(r"-m week(\d\d)", doc.read_text())}
    assert len(cited) >= 12, cited
    env = os.environ | {"NUMBA_ENABLE_CUDASIM": "1"}
    done = subprocess.run(
        [sys.executable, "-c", COUNT_WEEK_MARKERS],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    counts = json.loads(done.stdout.splitlines()[-1])
    assert sorted(week for week in cited if not counts.get(f"week{week}")) == []


def test_the_week_tests_check_the_folder_S2C_IMPL_names(tmp_path):
    """With S2C_IMPL naming a fresh workspace, week 1's matmul is the learner's stub."""
    workspace = tmp_path / "workspace"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tools.exercises",
            "--out",
            str(workspace),
            "--tiers",
            "stage1_python",
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            __file__,
            "-m",
            "week01",
            "-k",
            "stage1-matmul-correct",
        ],
        cwd=ROOT,
        env=os.environ | {"S2C_IMPL": str(workspace)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stdout
    assert f"from {workspace}" in done.stdout
    assert "matmul: not implemented (week 1, task matmul)" in done.stdout

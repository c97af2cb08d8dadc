"""`python -m grader` from the command line: the summary line, exit status, JSON record."""

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from grader import Options, grade

ROOT = Path(__file__).parent.parent
SUMMARY = re.compile(r"\d+ passed, \d+ failed(, \d+ skipped)?")


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)  # fmt: skip


@pytest.mark.timing
def test_last_line_is_the_summary_and_json_is_written(tmp_path):
    path = tmp_path / "grade.json"
    done = run_cli("--stage", "2", "--ops", "relu,relu_backward", "--quick", "--json", str(path))
    last = done.stdout.splitlines()[-1]
    assert done.returncode == 0, done.stdout + done.stderr
    assert SUMMARY.fullmatch(last) and last.endswith(" 0 failed")
    record = json.loads(path.read_text())
    assert {"cpu", "cores", "os", "python", "numpy", "blas", "gpu"} <= set(record["machine"])
    results = record["runs"][0]["results"]
    assert {(r["op"], r["check"]) for r in results} >= {("relu", "correct"), ("relu", "speed"),
                                                        ("relu_backward", "grad")}  # fmt: skip
    speed = next(r for r in results if r["check"] == "speed")
    assert speed["timing"]["median"] > 0 and speed["timing"]["q1"] <= speed["timing"]["q3"]


def test_a_failure_exits_non_zero_with_the_summary_last(tmp_path):
    done = run_cli("--stage", "2", "--impl", "tests/planted/softmax_overflow", "--ops", "softmax",
                   "--isolate", "--quick", "--json", str(tmp_path / "g.json"))  # fmt: skip
    assert done.returncode == 1
    assert SUMMARY.fullmatch(done.stdout.splitlines()[-1])
    assert "FAILED softmax correct: softmax: y[" in done.stdout


def test_a_week_without_tier_ops_is_a_usage_error():
    done = run_cli("--stage", "2", "--week", "9")
    assert done.returncode == 2
    assert "week 9 has no ops of stage 2" in done.stderr


def test_an_unavailable_tier_is_skipped_with_its_reason(tmp_path):
    out = io.StringIO()
    # the nvcc variant: unavailable without a GPU (numba runs everywhere, on the simulator)
    status, record = grade(Options(stage=4, variant="nvcc", json=str(tmp_path / "g.json")), out=out)
    lines = out.getvalue().splitlines()
    assert status == 0
    assert lines[-1] == "0 passed, 0 failed, 1 skipped"
    assert "stage 4 (nvcc) is unavailable: " in out.getvalue()
    assert record["runs"][0]["results"][0].message


@pytest.mark.timing
def test_stage2_matmul_64_is_timed_against_stage1(tmp_path):
    """The speedup the issue asks for: stage 2 over stage 1 on a 64x64x64 matmul, same run."""
    status, record = grade(Options(stage=2, ops=("matmul",), quick=True,
                                   json=str(tmp_path / "g.json")), out=io.StringIO())  # fmt: skip
    speed = [r for r in record["runs"][0]["results"] if r.check == "speed"]
    assert status == 0
    assert speed[0].size == "64x64x64"
    assert speed[0].timing["reference"]["tier"].startswith("stage 1")
    assert speed[0].timing["speedup"] >= 100


@pytest.mark.slow
@pytest.mark.timing
def test_bench_writes_json_and_a_markdown_table_naming_the_machine(tmp_path):
    path = tmp_path / "bench-stage2.json"
    done = run_cli("bench", "--stage", "2", "--quick", "--json", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert SUMMARY.fullmatch(done.stdout.splitlines()[-1])
    record = json.loads(path.read_text())
    speed = [r for r in record["runs"][0]["results"] if r["check"] == "speed"]
    assert {r["op"] for r in speed} >= {"matmul", "conv2d_forward", "conv2d_backward"}
    conv = next(r for r in speed if r["op"] == "conv2d_forward")
    assert conv["size"].startswith("LeNet-5 conv1") and conv["timing"]["speedup"] > 1
    table = path.with_suffix(".md").read_text()
    assert f"Machine: {record['machine']['cpu']}, {record['machine']['cores']} cores" in table
    assert "| matmul | 64x64x64 |" in table


def test_numbas_note_on_a_small_grid_is_not_shown_among_the_results(monkeypatch):
    """The correctness cases launch grids of a few blocks on purpose; numba's warning that such a
    grid leaves the GPU idle is the grader's doing, so none reaches the report. Other warnings
    still do."""
    import warnings

    from grader import correctness
    from grader.records import PASSED, Result, Setup, Task
    from grader.session import Session

    def check_correct(session, task):
        warnings.warn("\x1b[1mGrid size 1 will likely result in GPU under-utilization due to "
                      "low occupancy.\x1b[0m", RuntimeWarning, stacklevel=1)  # fmt: skip
        warnings.warn("a warning of the tier's own", RuntimeWarning, stacklevel=1)
        return Result(task.op, task.kind, PASSED, "", size=task.label)

    monkeypatch.setattr(correctness, "check_correct", check_correct)
    session = Session(Setup(2, None, None, (1,)))
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        result = session.run(Task("correct", "relu"))
    assert result.status == PASSED
    assert [str(w.message) for w in shown] == ["a warning of the tier's own"]

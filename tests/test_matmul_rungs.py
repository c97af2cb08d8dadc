"""Week 11 is climbed rung by rung: the grader checks each rung of the C matmul ladder on its own,
a stub rung is "not implemented" without hiding the rungs that work, and the plain `matmul` runs
the fastest rung that is written."""

import io
import re

import pytest
from c_workspace import c_workspace

from grader.run import Options, grade


@pytest.mark.week11
@pytest.mark.timing
def test_a_workspace_partway_up_the_ladder_grades_rung_by_rung(tmp_path):
    c_workspace(tmp_path, solved={"matmul_naive", "matmul_loop_order"})
    out = io.StringIO()
    options = Options(stage=3, impl=str(tmp_path), ops=("matmul",), quick=True)
    options.json = str(tmp_path / "grade.json")
    status, record = grade(options, out)
    text = out.getvalue()

    assert status == 1, text
    results = {r.size: r for r in record["runs"][0]["results"] if r.check == "correct"}
    assert results[""].status == "passed", text  # plain matmul: loop_order, the best one written
    for rung in ("naive", "loop_order"):
        assert results[f"kernel {rung}"].status == "passed", text
    for rung in ("blocked", "register", "simd"):
        failed = results[f"kernel {rung}"]
        assert failed.status == "failed", text
        assert f"matmul: not implemented (week 11, task matmul_{rung})" in failed.message, text
    speed = [r for r in record["runs"][0]["results"] if r.check == "speed"]
    assert speed and all(r.status == "passed" for r in speed), text  # the plain op is timed
    assert re.search(r"^\d+ passed, 3 failed", text, re.MULTILINE), text  # the 3 stubbed rungs

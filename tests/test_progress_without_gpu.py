"""`make progress`'s "next:" on a machine without a GPU never points at the nvcc variant, whose
grader can only answer "unavailable" there: it points at the numba variant (numba's CUDA simulator
runs it) and says which exercises need a GPU. With a GPU, every variant is next in its turn."""

import io
import re

import pytest
from c_workspace import learner_tier

from tools.progress import NOT_IMPLEMENTED, main, progress


@pytest.fixture(scope="module")
def stage4(tmp_path_factory):
    """A workspace of stage 4 alone, every exercise a stub (nothing to build or grade)."""
    return learner_tier(tmp_path_factory.mktemp("progress-gpu") / "workspace", "stage4_cuda")


def next_lines(workspace):
    out = io.StringIO()
    assert main(["--impl", str(workspace)], out=out) == 0
    return [line for line in out.getvalue().splitlines() if line.startswith(("next:", "needs"))]


def test_without_a_gpu_next_is_the_numba_variant_and_the_nvcc_one_needs_a_gpu(stage4, monkeypatch):
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    upcoming, needs_gpu = next_lines(stage4)
    assert upcoming.startswith("next: week 14, task ") and "stage4_cuda/numba_impl/" in upcoming
    assert "`make grade STAGE=4 VARIANT=numba WEEK=14" in upcoming
    assert "numba's CUDA simulator runs it" in upcoming
    assert needs_gpu.startswith("needs a GPU: ")
    assert re.search(r"of stage 4 \(nvcc\) \(weeks 14-\d+\)", needs_gpu), needs_gpu
    assert "`make grade STAGE=4 VARIANT=nvcc` can only say it is unavailable" in needs_gpu


def test_with_a_gpu_nothing_is_set_apart(stage4, monkeypatch):
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "0")
    (upcoming,) = next_lines(stage4)
    assert upcoming.startswith("next: week 14, task ") and "simulator" not in upcoming


def test_a_fresh_stage_4_is_all_not_implemented_void_kernels_included(stage4):
    """A stub in a function returning void (`return; /* week 14, task ... */`) counts as one, so
    that nothing of a fresh workspace is graded (on a GPU machine: built)."""
    statuses, _ = progress(str(stage4), stages=(4,))
    assert {status for exercise, (status, _note) in statuses.items()
            if exercise.package == "stage4_cuda"} == {NOT_IMPLEMENTED}  # fmt: skip

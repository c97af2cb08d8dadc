"""`make bench`'s matmul kernel ladder: threads on a CPU, none on a GPU.

A GPU tier sets no thread count (it has no `set_num_threads`): its kernels run once each, next to
the GPU library, with no 2-thread rung; the C tier's run at 1 thread, then its fastest at 2.
"""

from types import SimpleNamespace

import pytest

from grader.bench import THREADS, markdown_report, plan_bench
from grader.records import PASSED, Result
from tiers.machine import machine_info

GFLOPS = {"naive": 10.0, "tiled": 40.0}  # tiled the fastest


def plan(stage, variant):
    """The bench's kernel and library tasks, each kernel passing as the runner records it (the
    plan reads the results of the rungs before it)."""
    options = SimpleNamespace(stage=stage, variant=variant, quick=True)
    results, planned = [], []
    for task in plan_bench(options, {"matmul_kernels": tuple(GFLOPS)}, results):
        if task.kind in ("kernel", "blas"):
            planned.append((task.kind, task.kernel, task.threads))
        if task.kind == "kernel":
            results.append(passed_kernel(task.kernel, task.threads, GFLOPS[task.kernel]))
    return planned


def passed_kernel(kernel, threads, gflops):
    timing = {"kernel": kernel, "threads": threads, "gflops": gflops, "median": 1 / gflops}
    return Result("matmul", "kernel", PASSED, timing=timing)


@pytest.mark.parametrize("variant", ["numba", "nvcc"])
def test_a_gpu_tier_runs_each_kernel_once_with_no_thread_count(variant):
    assert plan(4, variant) == [
        ("kernel", "naive", None), ("kernel", "tiled", None), ("blas", None, None)
    ]  # fmt: skip


def test_the_c_tier_runs_each_kernel_at_one_thread_then_its_fastest_at_two():
    one, two = THREADS
    assert plan(3, None) == [
        ("kernel", "naive", one), ("kernel", "tiled", one), ("blas", None, one),
        ("kernel", "tiled", two), ("blas", None, two),
    ]  # fmt: skip


def test_the_gpu_kernel_table_names_the_library_and_no_thread_count():
    library = {"threads": None, "gflops": 40000.0, "median": 5e-5, "library": "PyTorch CUDA"}
    results = [
        passed_kernel("tiled", None, 10000.0),
        Result("matmul", "library", PASSED, timing=library),
    ]
    record = {
        "options": {"stage": 4},
        "command": "python -m grader bench --stage 4 --variant numba",
        "created": "today",
        "machine": machine_info(),
        "runs": [{"tier": "stage 4 (numba)", "results": results}],
    }
    table = markdown_report(record)
    assert "| tiled | GPU | " in table and "| 25% |" in table
    assert "| PyTorch CUDA | GPU | " in table

"""Overlapped launches are safe in stage 4's CUDA C (csrc/common.h, "Overlapped launches";
stage4_cuda/kernel_waits.py): every kernel of the library waits for the previous kernel first,
the library launches every kernel overlapped, the SGEMM ladder none, and the build refuses a
kernel that does not wait (a learner's too: a workspace builds with its own copy of the check).
"""

import pytest

from stage4_cuda import kernel_waits, nvcc_build

CSRC = nvcc_build.CSRC


def test_every_kernel_of_the_library_waits_for_the_previous_kernel_first():
    assert kernel_waits.problems(CSRC) == []
    kernels = sum(len(kernel_waits.DEFINITION.findall(kernel_waits.code(path.read_text())))
                  for path in kernel_waits.library_sources(CSRC))  # fmt: skip
    assert kernels > 60  # the check found the kernels


def test_the_library_launches_every_kernel_overlapped():
    for path in kernel_waits.library_sources(CSRC):
        assert "<<<" not in kernel_waits.code(path.read_text()), path.relative_to(CSRC)


def test_the_sgemm_ladder_launches_as_written_in_cuda():
    ladder = sorted((CSRC / kernel_waits.LADDER).glob("*.cu"))
    assert ladder and not set(ladder) & set(kernel_waits.library_sources(CSRC))
    for path in ladder:
        assert "launch_overlapped" not in kernel_waits.code(path.read_text()), path.name


@pytest.mark.parametrize(
    "body",
    [
        "{ int i = threadIdx.x; wait_for_previous_kernel(); y[i] = x[i]; }",  # too late
        "{ if (threadIdx.x == 0) wait_for_previous_kernel(); y[0] = x[0]; }",  # one thread
        "{ /* wait_for_previous_kernel(); */ y[threadIdx.x] = x[threadIdx.x]; }",  # a comment
        "{ y[threadIdx.x] = x[threadIdx.x]; }",  # never
    ],
)
def test_a_kernel_that_does_not_wait_first_is_named(body):
    text = ("__global__ void __launch_bounds__(256)\n"
            f"    copy_kernel(const float *x, float *y)\n{body}")
    assert kernel_waits.kernels_not_waiting_first(text) == ["copy_kernel"]
    fixed = text.replace("{", "{ wait_for_previous_kernel();", 1)
    assert kernel_waits.kernels_not_waiting_first(fixed) == []


def test_the_build_refuses_a_kernel_that_does_not_wait(monkeypatch, capsys, tmp_path):
    (tmp_path / "sgemm").mkdir()
    kernel = "template <int N>\n__global__ void {}(float *y) {{ {}y[0] = 1.0f; }}\n"
    (tmp_path / "copy.cu").write_text(kernel.format("fill_kernel", "") +
                                      kernel.format("kept_kernel", "wait_for_previous_kernel(); "))
    (tmp_path / "sgemm" / "01_naive.cu").write_text(kernel.format("sgemm_kernel", ""))
    monkeypatch.setattr(nvcc_build, "CSRC", tmp_path)
    monkeypatch.setattr(nvcc_build, "LIBRARY", tmp_path / "libs2c_cuda.so")  # not built
    monkeypatch.setattr(nvcc_build, "nvcc", lambda: pytest.fail("compiled an unsafe kernel"))
    assert nvcc_build.main(["--if-stale"]) == 1
    error = capsys.readouterr().err
    assert "must call wait_for_previous_kernel() first" in error
    assert error.rstrip().endswith("copy.cu: fill_kernel")  # the ladder's kernel is not named

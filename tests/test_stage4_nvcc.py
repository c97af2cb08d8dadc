"""Stage 4, nvcc variant: the build, the exercise stubs and the error paths here (nvcc, no GPU);
every written op against stage 2 on a GPU.

Without a GPU (this machine, CI): the library builds with nvcc, each .cu file compiles alone with
CI's command, the variant says it is unavailable and why, the workspace's stubbed sources compile
and each stub's status becomes a NotImplementedError naming its week and task, and a launch that
fails becomes a RuntimeError naming the kernel. The stubs return before any CUDA call, and a
refused launch touches no memory, so none of this needs a GPU.

On a GPU (NUMBA_ENABLE_CUDASIM=0): every op the variant has is checked against stage 2 at small
sizes with its outputs poisoned, both paths of the elementwise kernels (float4 and scalar), the
broadcasting, the transposed operands of the product, each rung of the softmax ladder (and the
fused cross-entropy) with rows at every 16-byte offset and NaN propagation, and the errors again.
"""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import load_tier
from stage4_ops import (
    BACKWARDS,
    FORWARDS,
    assert_close,
    backward_args,
    check_backward,
    check_forward,
    device,
    run_both,
)

import stage2_numpy as stage2
import stage4_cuda.nvcc_impl as nvcc
import tiers
from grader import inputs
from grader.poison import poisoned_allocations
from stage4_cuda import nvcc_build
from stage4_cuda.nvcc_impl import _library
from tools.exercises import plan_tier

REPO = Path(__file__).resolve().parent.parent
CSRC = REPO / "stage4_cuda" / "csrc"
NVCC = nvcc_build.nvcc()

needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc (the CUDA toolkit) is not installed")
pytestmark = pytest.mark.filterwarnings("ignore:Grid size")


def run(args, cwd=REPO, env=None):
    """Run `python args...` (stdout and stderr together)."""
    environment = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=environment, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip


# --- the build ------------------------------------------------------------------------------------


@needs_nvcc
@pytest.mark.slow
def test_the_library_builds_and_a_changed_source_makes_it_stale(tmp_path):
    copy = tmp_path / "stage4_cuda"
    shutil.copytree(REPO / "stage4_cuda", copy,
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    done = run(["-m", "stage4_cuda.nvcc_build"], cwd=tmp_path)
    assert done.returncode == 0, done.stdout
    assert "built stage4_cuda/nvcc_impl/_build/libs2c_cuda.so" in done.stdout
    assert "-gencode=arch=compute_90,code=compute_90" in done.stdout  # PTX for newer GPUs
    assert run(["-m", "stage4_cuda.nvcc_build", "--if-stale"], cwd=tmp_path).stdout == ""
    (copy / "csrc" / "linalg.cu").touch()
    stale = run(["-c", "from stage4_cuda import nvcc_build; print(nvcc_build.stale_reason())"],
                cwd=tmp_path, env={"PYTHONPATH": str(tmp_path) + os.pathsep + str(REPO)})
    assert "changed since the last build: linalg.cu" in stale.stdout, stale.stdout


def test_a_program_with_main_stays_out_of_the_library(tmp_path, monkeypatch):
    """The SGEMM ladder's benchmark (csrc/sgemm/) is a program: its main is not linked in."""
    (tmp_path / "sgemm").mkdir()
    (tmp_path / "kernel.cu").write_text('extern "C" int s2c_x(void) { return 0; }\n')
    (tmp_path / "sgemm" / "bench.cu").write_text("int main(int argc, char **argv) { return 0; }\n")
    (tmp_path / "sgemm" / "rungs.cu").write_text("int s2c_sgemm_naive(void) { return 0; }\n")
    monkeypatch.setattr(nvcc_build, "CSRC", tmp_path)
    assert [path.name for path in nvcc_build.sources()] == ["kernel.cu", "rungs.cu"]


def test_without_nvcc_the_build_says_why_and_succeeds(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(nvcc_build, "nvcc", lambda: None)
    monkeypatch.setattr(nvcc_build, "LIBRARY", tmp_path / "libs2c_cuda.so")  # not built
    assert nvcc_build.main([]) == 0
    assert "nvcc variant not built: nvcc (the CUDA toolkit) not found" in capsys.readouterr().out
    assert nvcc_build.main(["--if-stale"]) == 0  # a load: quiet, available() says why
    assert capsys.readouterr().out == ""


def test_without_nvcc_an_old_library_is_an_error(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(nvcc_build, "nvcc", lambda: None)
    monkeypatch.setattr(nvcc_build, "stale_reason", lambda: "changed since the last build: x.cu")
    monkeypatch.setattr(nvcc_build, "LIBRARY", tmp_path / "libs2c_cuda.so")
    (tmp_path / "libs2c_cuda.so").touch()
    assert nvcc_build.main(["--if-stale"]) == 1
    assert "out of date (changed since the last build: x.cu)" in capsys.readouterr().err


def test_the_registry_builds_it():
    assert tiers.get("nvcc").build == "stage4_cuda.nvcc_build"


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("source", sorted(CSRC.rglob("*.cu")), ids=lambda path: path.name)
def test_each_cu_file_compiles_alone_with_cis_command(source, tmp_path):
    """.ci/run's "nvcc compile check": -arch=sm_90, its own folder and stage3_c/csrc included."""
    done = subprocess.run(
        [NVCC, "-c", "-arch=sm_90", "-I", str(source.parent), "-I", str(REPO / "stage3_c" / "csrc"),
         "-o", str(tmp_path / "out.o"), str(source)],
        capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr


# --- availability ---------------------------------------------------------------------------------


def test_the_tier_says_why_it_is_unavailable_and_never_breaks():
    loaded = tiers.load(tiers.get("nvcc"))
    assert not loaded.broken, loaded.reason
    if loaded.ok:
        pytest.skip("a GPU is present: the variant is available")
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        assert "simulator" in loaded.reason
    else:
        assert "no CUDA GPU" in loaded.reason or "not built" in loaded.reason, loaded.reason


def test_the_variant_has_every_op_of_the_contract():
    from grader.ops import OPS

    missing = [name for name in OPS if not callable(getattr(nvcc, name, None))]
    assert missing == []


# --- exercises ------------------------------------------------------------------------------------


def test_the_exercise_table_names_each_region_of_the_sources():
    csrc = "stage4_cuda/csrc/"
    regions = {(region.task, region.path.removeprefix(csrc)): region.week
               for region in plan_tier(REPO, "stage4_cuda")[1]
               if region.path.startswith(csrc)}  # fmt: skip
    for function, (week, task, file) in _library.EXERCISES.items():
        found = regions.get((task, file))
        assert found == week, f"{function}: no region of week {week}, task {task} in {file}"
    exported = set(re.findall(r"\bint (s2c_cuda_\w+)\(", (CSRC / "s2c_cuda.h").read_text()))
    assert set(_library.EXERCISES) <= exported


@needs_nvcc
@pytest.mark.slow
def test_the_workspace_stubs_compile_and_each_names_its_week_and_task(tmp_path):
    done = run(["-m", "tools.exercises", "--out", str(tmp_path), "--tiers", "stage4_cuda"])
    assert done.returncode == 0, done.stdout
    built = tmp_path / "stage4_cuda" / "nvcc_impl" / "_build" / "libs2c_cuda.so"
    assert built.is_file(), done.stdout
    spec = importlib.util.spec_from_file_location(
        "workspace_library", tmp_path / "stage4_cuda" / "nvcc_impl" / "_library.py")
    library = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(library)
    lib = library.library()
    for function, (week, task, file) in library.EXERCISES.items():
        # Every stub returns before its first CUDA call: pointers NULL, every size 1.
        kinds = [argument.kind for argument in library._ffi.typeof(getattr(lib, function)).args]
        args = [None if kind == "pointer" else 1 for kind in kinds]
        expected = rf"^week {week}, task {task}: not implemented yet \(stage4_cuda/csrc/{file}"
        with pytest.raises(NotImplementedError, match=expected):
            library.call(function, *args)


# --- errors ---------------------------------------------------------------------------------------


def test_a_refused_launch_is_a_runtime_error_naming_the_kernel():
    """A grid of 2^31 blocks is refused at launch on a GPU (before touching any memory), and
    without a GPU every launch fails: both are CUDA errors the library reports by kernel."""
    if _library.unavailable_reason():
        pytest.skip(_library.unavailable_reason())
    with pytest.raises(RuntimeError,
                       match=r"s2c_cuda_softmax_online failed: softmax_online_kernel: .*\(cuda"):
        _library.call("s2c_cuda_softmax_online", None, None, None, 2**31, 1, 0)


def test_a_status_the_wrapper_should_have_prevented_is_a_value_error():
    if _library.unavailable_reason():
        pytest.skip(_library.unavailable_reason())
    with pytest.raises(ValueError, match="s2c_cuda_gemm rejected its arguments"):
        _library.call("s2c_cuda_gemm", None, None, None, None, 2**22, 1, 1, 0, 0)


# --- on a GPU -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gpu():
    return load_tier("nvcc")


@pytest.mark.parametrize("op_name", FORWARDS)
def test_forward_matches_stage_2(gpu, rng, op_name):
    check_forward(gpu, rng, op_name)


@pytest.mark.parametrize("op_name", BACKWARDS)
def test_backward_matches_stage_2(gpu, rng, op_name):
    check_backward(gpu, rng, op_name)


@pytest.mark.parametrize("size", [4096, 4099])  # float4 loads, then the scalar path
@pytest.mark.parametrize("op_name", ["relu", "sigmoid", "tanh"])
def test_both_paths_of_the_elementwise_kernels(gpu, rng, op_name, size):
    args = {"x": inputs.normal(rng, (size,))}
    received, expected, _ = run_both(gpu, op_name, args)
    assert_close(op_name, received, expected, args, f" [{size}]")


def test_a_misaligned_view_takes_the_scalar_path(gpu, rng):
    x = inputs.normal(rng, (4097,))
    shifted = gpu.from_numpy(x)[1:]  # contiguous, 4 bytes past a 16-byte boundary
    assert_close("relu", gpu.to_numpy(gpu.relu(shifted)), np.maximum(x[1:], 0), {"x": x[1:]})


@pytest.mark.parametrize("columns", [8, 7])  # a row of float4s, then of floats
@pytest.mark.parametrize("op_name", ["add", "mul"])
def test_a_broadcast_row(gpu, rng, op_name, columns):
    args = {"a": inputs.normal(rng, (33, columns)), "b": inputs.normal(rng, (columns,))}
    received, expected, _ = run_both(gpu, op_name, args)
    assert_close(op_name, received, expected, args)


@pytest.mark.parametrize("n, k, m", [(1, 1, 1), (33, 65, 31), (64, 32, 96)])
def test_matmul_across_tile_edges(gpu, rng, n, k, m):
    args = {"a": inputs.normal(rng, (n, k)), "b": inputs.normal(rng, (k, m))}
    received, expected, _ = run_both(gpu, "matmul", args)
    assert_close("matmul", received, expected, args)


# --- the softmax ladder (csrc/softmax/) -----------------------------------------------------------

# One column, rows shorter than a warp, odd lengths (rows starting at every offset from a 16-byte
# boundary: the float4 path's head and tail), rows longer than a 1024-thread block's float4s.
LADDER_SHAPES = [(1, 1), (3, 10), (5, 37), (4, 1030), (3, 9001)]


def ladder_inputs(rng, shape):
    """Logits of either sign, some as large as 1e3 (exp overflows without the maximum)."""
    x = inputs.normal(rng, shape)
    x[0] *= 1e3 / max(np.abs(x[0]).max(), 1e-3)
    return x


@pytest.mark.parametrize("kernel", [*nvcc.SOFTMAX_KERNELS, "best", 2])
@pytest.mark.parametrize("op_name", ["softmax", "log_softmax"])
def test_each_softmax_rung(gpu, rng, op_name, kernel):
    for shape in LADDER_SHAPES:
        args = {"x": ladder_inputs(rng, shape)}
        received, expected, _ = run_both(gpu, op_name, args, kernel=kernel)
        assert_close(op_name, received, expected, args, f" ({kernel}, {shape})")


@pytest.mark.parametrize("kernel", nvcc.SOFTMAX_KERNELS)
@pytest.mark.parametrize("op_name", ["softmax", "log_softmax"])
def test_each_softmax_rung_propagates_nan_in_its_row(gpu, rng, op_name, kernel):
    x = ladder_inputs(rng, (4, 1030))
    x[2, 517] = np.nan
    y = gpu.to_numpy(getattr(gpu, op_name)(gpu.from_numpy(x), kernel=kernel))
    assert np.isnan(y[2]).all(), f"{op_name} ({kernel}): a NaN in row 2 left finite outputs"
    clean = np.delete(x, 2, axis=0)
    assert_close(op_name, np.delete(y, 2, axis=0), getattr(stage2, op_name)(clean), {"x": clean})


@pytest.mark.parametrize("kernel", nvcc.SOFTMAX_KERNELS)
def test_a_view_whose_rows_lie_apart_from_the_outputs(gpu, rng, kernel):
    """Rows 1.. of a [4, 37] array start 148 bytes in: the outputs' 16-byte offsets differ."""
    x = ladder_inputs(rng, (4, 37))
    view = gpu.from_numpy(x)[1:]
    y = gpu.to_numpy(gpu.softmax(view, kernel=kernel))
    assert_close("softmax", y, stage2.softmax(x[1:]), {"x": x[1:]})


def test_an_unknown_rung_is_refused(gpu, rng):
    with pytest.raises(ValueError, match=r"softmax: kernel must be 'best', one of \('three_pass'"):
        gpu.softmax(gpu.from_numpy(inputs.normal(rng, (2, 3))), kernel="fastest")


@pytest.mark.parametrize("shape", LADDER_SHAPES)
def test_the_fused_cross_entropy_gives_loss_and_gradient(gpu, rng, shape):
    logits, labels = ladder_inputs(rng, shape), inputs.labels(rng, shape[0], shape[1])
    args = {"logits": logits, "labels": labels}
    with poisoned_allocations(gpu):
        loss, grad = gpu.cross_entropy_loss_and_grad(*device(gpu, args).values())
    expected_loss = stage2.cross_entropy_loss(logits, labels)
    assert_close("cross_entropy_loss", np.float64(float(loss)), expected_loss, args)
    expected_grad = stage2.cross_entropy_loss_backward(logits, labels)
    assert_close("cross_entropy_loss_backward", gpu.to_numpy(grad), expected_grad, args)


def test_the_fused_cross_entropy_propagates_nan_in_its_row(gpu, rng):
    logits, labels = ladder_inputs(rng, (4, 1030)), inputs.labels(rng, 4, 1030)
    logits[1, 3] = np.nan
    loss, grad = gpu.cross_entropy_loss_and_grad(gpu.from_numpy(logits), gpu.from_numpy(labels))
    grad = gpu.to_numpy(grad)
    assert np.isnan(float(loss)) and np.isnan(grad[1]).all()
    assert np.isfinite(np.delete(grad, 1, axis=0)).all()


def test_the_loss_stays_on_the_device(gpu, rng):
    logits, labels = inputs.normal(rng, (5, 3)), inputs.labels(rng, 5, 3)
    loss = gpu.cross_entropy_loss(gpu.from_numpy(logits), gpu.from_numpy(labels))
    assert isinstance(loss, gpu.DeviceScalar)
    args = {"logits": logits, "labels": labels}
    expected = run_both(gpu, "cross_entropy_loss", args)[1]
    assert_close("cross_entropy_loss", np.float64(float(loss)), expected, args)


def test_conv2d_backward_without_dx(gpu, rng):
    args = backward_args(rng, "conv2d_backward")
    received, expected, _ = run_both(gpu, "conv2d_backward", args, need_dx=False)
    assert received[0] is None
    assert_close("conv2d_backward", received[1:], expected[1:], args)


def test_labels_of_another_integer_type_are_refused(gpu, rng):
    from numba import cuda

    logits = gpu.from_numpy(inputs.normal(rng, (4, 3)))
    labels = cuda.to_device(np.array([0, 1, 2, 0], np.int32))
    with pytest.raises(TypeError, match="cross_entropy_loss: labels must hold int64 values"):
        gpu.cross_entropy_loss(logits, labels)

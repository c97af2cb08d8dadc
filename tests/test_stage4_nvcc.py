"""Stage 4, nvcc variant: the build, the exercise stubs and the error paths here (nvcc, no GPU);
every written op against stage 2 on a GPU.

Without a GPU (this machine, CI): the library builds with nvcc, each .cu file compiles alone with
CI's command, the variant says it is unavailable and why, the workspace's stubbed sources compile
and each stub's status becomes a NotImplementedError naming its week and task, and a launch that
fails becomes a RuntimeError naming the kernel. The stubs return before any CUDA call, and a
refused launch touches no memory, so none of this needs a GPU.

On a GPU (NUMBA_ENABLE_CUDASIM=0): every op the variant has is checked against stage 2 at small
sizes with its outputs poisoned, both paths of the elementwise kernels (float4 and scalar), the
broadcasting, the transposed operands of the product, and the errors again; every rung of the
conv2d ladder and the backward against PyTorch in float64 within the rung's error bound
(stage4_cuda/conv_accuracy.py, whose bounds are shown here, without a GPU, to catch a wrong tap)
and against stage 3, and repeated runs bit-identical.
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
    run_both,
)

import stage4_cuda.nvcc_impl as nvcc
import tiers
from grader import inputs
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
    regions = {(region.task, region.path.removeprefix("stage4_cuda/csrc/")): region.week
               for region in plan_tier(REPO, "stage4_cuda")[1]
               if region.path.startswith("stage4_cuda/csrc/")}  # fmt: skip
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
    with pytest.raises(RuntimeError, match=r"s2c_cuda_softmax failed: softmax_kernel: .*\(cuda"):
        _library.call("s2c_cuda_softmax", None, None, 2**31, 1, 0)


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


# --- the conv2d ladder ----------------------------------------------------------------------------

# (N, C, K, kernel size, stride, padding, H, W): the curriculum's layers at batch 2, odd sizes
# (partial tiles, partial Winograd blocks), a stride of 2 and a non-square image.
CONV_SHAPES = [
    (2, 1, 6, 5, 1, 2, 28, 28),
    (2, 6, 16, 5, 1, 0, 14, 14),
    (2, 1, 64, 3, 1, 0, 28, 28),
    (2, 64, 128, 3, 1, 0, 13, 13),
    (3, 5, 7, 3, 1, 1, 9, 11),
    (3, 4, 33, 3, 2, 1, 10, 7),
]


def _conv_inputs(rng, shape):
    n, c, k, size, stride, padding, h, w = shape
    out_h, out_w = (h + 2 * padding - size) // stride + 1, (w + 2 * padding - size) // stride + 1
    return (inputs.normal(rng, (n, c, h, w)), inputs.normal(rng, (k, c, size, size)),
            inputs.normal(rng, (k,)), inputs.normal(rng, (n, k, out_h, out_w)))  # fmt: skip


def test_each_conv_bound_catches_a_wrong_tap(rng):
    """The error bounds of stage4_cuda/conv_accuracy.py can fail: reading the neighbouring pixel
    (the commonest indexing mistake) exceeds every rung's bound somewhere."""
    torch = pytest.importorskip("torch")
    from stage4_cuda import conv_accuracy

    x, w, b, _ = (torch.from_numpy(a).double() for a in _conv_inputs(rng, CONV_SHAPES[3]))
    exact = torch.nn.functional.conv2d(x, w, b)
    shifted = torch.nn.functional.conv2d(torch.roll(x, 1, dims=3), w, b)
    for kernel in nvcc.CONV_KERNELS:
        bound = conv_accuracy.forward_bound(kernel, x, w, b, 1, 0)
        assert ((shifted - exact).abs() > bound).any(), kernel


def _close_to_exact(received, exact, bound, what):
    received = np.asarray(received, np.float64)
    assert np.isfinite(received).all(), f"{what}: NaN or inf (an unwritten output?)"
    excess = np.abs(received - exact.numpy()) / bound.numpy()
    assert excess.max() <= 1, f"{what}: error {excess.max():.3g} x its bound"


@pytest.mark.parametrize("shape", CONV_SHAPES, ids=str)
@pytest.mark.parametrize("kernel", nvcc.CONV_KERNELS)
def test_each_conv_rung_within_its_error_bound_and_stage_3(gpu, rng, kernel, shape):
    """Every rung against PyTorch in float64 within the rung's bound, and against stage 3
    (both within the bound of the exact result: within twice it of each other)."""
    torch = pytest.importorskip("torch")
    from grader.poison import poisoned_allocations
    from stage4_cuda import conv_accuracy
    from stage4_cuda.nvcc_impl.conv import winograd_applies

    stride, padding = shape[4], shape[5]
    x, w, b, _ = _conv_inputs(rng, shape)
    with poisoned_allocations(gpu):
        y = gpu.to_numpy(gpu.conv2d_forward(gpu.from_numpy(x), gpu.from_numpy(w),
                                            gpu.from_numpy(b), stride, padding, kernel=kernel))
    ran = kernel if kernel != "winograd" or winograd_applies(shape[3], shape[3], stride) else (
        "implicit_gemm")  # fmt: skip
    x64, w64, b64 = (torch.from_numpy(a).double() for a in (x, w, b))
    exact = torch.nn.functional.conv2d(x64, w64, b64, stride, padding)
    bound = conv_accuracy.forward_bound(ran, x64, w64, b64, stride, padding)
    _close_to_exact(y, exact, bound, kernel)
    s3 = load_tier("c")
    stage3 = s3.to_numpy(s3.conv2d_forward(*map(s3.from_numpy, (x, w, b)), stride, padding))
    _close_to_exact(y, torch.from_numpy(np.asarray(stage3, np.float64)), 2 * bound,
                    f"{kernel} against stage 3")


@pytest.mark.parametrize("shape", CONV_SHAPES, ids=str)
def test_conv_backward_within_its_error_bound_and_stage_3(gpu, rng, shape):
    torch = pytest.importorskip("torch")
    from grader.poison import poisoned_allocations
    from stage4_cuda import conv_accuracy

    stride, padding = shape[4], shape[5]
    x, w, _, dy = _conv_inputs(rng, shape)
    with poisoned_allocations(gpu):
        grads = gpu.conv2d_backward(*map(gpu.from_numpy, (x, w, dy)), stride, padding)
    x64, w64, dy64 = (torch.from_numpy(a).double() for a in (x, w, dy))
    exact = torch.ops.aten.convolution_backward(
        dy64, x64, w64, [w.shape[0]], [stride] * 2, [padding] * 2, [1, 1], False, [0, 0], 1,
        [True, True, True])
    bounds = conv_accuracy.backward_bound(x64, w64, dy64, stride, padding)
    s3 = load_tier("c")
    stage3 = s3.conv2d_backward(*map(s3.from_numpy, (x, w, dy)), stride, padding)
    results = zip("dx dw db".split(), grads, exact, bounds, stage3, strict=True)
    for name, got, want, bound, theirs in results:
        _close_to_exact(gpu.to_numpy(got), want, bound, name)
        theirs = torch.from_numpy(np.asarray(s3.to_numpy(theirs), np.float64))
        _close_to_exact(gpu.to_numpy(got), theirs, 2 * bound, f"{name} against stage 3")


@pytest.mark.parametrize("kernel", nvcc.CONV_KERNELS)
def test_conv_rungs_and_backward_are_deterministic(gpu, rng, kernel):
    """Two runs on the same inputs give the same bits (the grader checks it too)."""
    x, w, b, dy = map(gpu.from_numpy, _conv_inputs(rng, CONV_SHAPES[3]))
    runs = [gpu.to_numpy(gpu.conv2d_forward(x, w, b, kernel=kernel)) for _ in range(2)]
    np.testing.assert_array_equal(*runs)
    first, second = (tuple(map(gpu.to_numpy, gpu.conv2d_backward(x, w, dy))) for _ in range(2))
    for a, b_ in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b_)


def test_a_conv_rung_is_named_or_numbered(gpu, rng):
    x, w, b, _ = map(gpu.from_numpy, _conv_inputs(rng, CONV_SHAPES[4]))
    by_number = gpu.to_numpy(gpu.conv2d_forward(x, w, b, 1, 1, kernel=3))
    np.testing.assert_array_equal(
        by_number, gpu.to_numpy(gpu.conv2d_forward(x, w, b, 1, 1, kernel="implicit_gemm")))
    with pytest.raises(ValueError, match="conv2d_forward: kernel must be 'best', one of"):
        gpu.conv2d_forward(x, w, b, 1, 1, kernel="cudnn")

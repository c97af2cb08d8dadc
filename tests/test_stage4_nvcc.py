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
fused cross-entropy) with rows at every 16-byte offset and NaN propagation, and the errors again;
every rung of the conv2d ladder and the backward against PyTorch in float64 within the rung's
error bound (stage4_cuda/conv_accuracy.py, whose bounds are shown here, without a GPU, to catch a
wrong tap) and against stage 3, and repeated runs bit-identical.
"""

import importlib.util
import json
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
    call,
    check_backward,
    check_forward,
    device,
    run_both,
)

import stage2_numpy as reference
import stage4_cuda.nvcc_impl as nvcc
import tiers
from grader import inputs
from grader.ops import OPS
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
    for source in (copy / "csrc").rglob("*.cu"):  # two files build as the whole would, faster
        if source.name not in ("errors.cu", "linalg.cu"):
            source.unlink()
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
    monkeypatch.setattr(nvcc_build, "changed_reason", lambda: "changed since the last build: x.cu")
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
    """.ci/run's "nvcc compile check": -arch=sm_90, its own folder included."""
    if os.environ.get("S2C_CI_COMPILED_ALONE") == "1":
        pytest.skip(".ci/run compiled every .cu file alone with this command before the tests "
                    "(test_sgemm_cuda.py the SGEMM ladder's)")
    done = subprocess.run(
        [NVCC, "-c", "-arch=sm_90", "-I", str(source.parent), "-o", str(tmp_path / "out.o"),
         str(source)],
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
    regions = {(region.task, str(Path(region.path).relative_to("stage4_cuda/csrc"))): region.week
               for region in plan_tier(REPO, "stage4_cuda")[1]
               if region.path.startswith("stage4_cuda/csrc/")}  # fmt: skip
    for function, (week, task, file) in _library.EXERCISES.items():
        found = regions.get((task, file))
        assert found == week, f"{function}: no region of week {week}, task {task} in {file}"
    exported = set(re.findall(r"\bint (s2c_\w+)\(", (CSRC / "s2c_cuda.h").read_text()))
    assert set(_library.EXERCISES) <= exported


@needs_nvcc
@pytest.mark.slow
def test_the_workspace_stubs_compile_and_each_names_its_week_and_task(exercise_workspace):
    """The library built from the stubs of the run's shared workspace (make exercises leaves it
    to the first command that can run it, on a GPU: built here with the workspace's own step)."""
    nvcc_impl = exercise_workspace / "stage4_cuda" / "nvcc_impl"
    built = subprocess.run([sys.executable, "-m", "stage4_cuda.nvcc_build", "--if-stale"],
                           cwd=exercise_workspace, capture_output=True, text=True)  # fmt: skip
    assert built.returncode == 0, f"the workspace's stubs do not compile:\n{built.stderr[-3000:]}"
    assert (nvcc_impl / "_build" / "libs2c_cuda.so").is_file(), "the build wrote no library"
    spec = importlib.util.spec_from_file_location("workspace_library", nvcc_impl / "_library.py")
    library = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(library)
    lib = library.library()
    for function, (week, task, file) in library.EXERCISES.items():
        # Every stub returns before its first CUDA call, so pointers that point nowhere do (the
        # SGEMM launchers refuse NULL for a matrix that is not empty before their region), every
        # size 1.
        kinds = [argument.kind for argument in library.ffi.typeof(getattr(lib, function)).args]
        nowhere = library.ffi.cast("void *", 256)
        args = [nowhere if kind == "pointer" else 1 for kind in kinds]
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
        _library.call("s2c_cuda_gemm", None, None, None, None, None, 2**22, 1, 1, 0, 0)


def test_the_range_of_indices_is_found_over_several_blocks():
    """The range check of labels and argmax (runtime/checks.py) reduces over a grid of blocks,
    then one: under the simulator, 3000 values make 4 blocks of the first level."""
    from stage4_cuda.runtime import checks, device

    if not device.SIMULATOR and not device.cuda.is_available():
        pytest.skip("needs numba's CUDA simulator or a GPU")
    values = np.random.default_rng(3).integers(-10**12, 10**12, 3000)
    values[2999], values[1234] = -10**15, 10**15  # the extremes in the last and a middle block
    assert checks.TIER.index_range(device.cuda.to_device(values)) == (-10**15, 10**15)


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
    assert_close(op_name, np.delete(y, 2, axis=0), getattr(reference, op_name)(clean), {"x": clean})


@pytest.mark.parametrize("kernel", nvcc.SOFTMAX_KERNELS)
def test_a_view_whose_rows_lie_apart_from_the_outputs(gpu, rng, kernel):
    """Rows 1.. of a [4, 37] array start 148 bytes in: the outputs' 16-byte offsets differ."""
    x = ladder_inputs(rng, (4, 37))
    view = gpu.from_numpy(x)[1:]
    y = gpu.to_numpy(gpu.softmax(view, kernel=kernel))
    assert_close("softmax", y, reference.softmax(x[1:]), {"x": x[1:]})


def test_an_unknown_rung_is_refused(gpu, rng):
    with pytest.raises(ValueError, match=r"softmax: kernel must be 'best', one of \('three_pass'"):
        gpu.softmax(gpu.from_numpy(inputs.normal(rng, (2, 3))), kernel="fastest")


@pytest.mark.parametrize("shape", LADDER_SHAPES)
def test_the_fused_cross_entropy_gives_loss_and_gradient(gpu, rng, shape):
    logits, labels = ladder_inputs(rng, shape), inputs.labels(rng, shape[0], shape[1])
    args = {"logits": logits, "labels": labels}
    with poisoned_allocations(gpu):
        loss, grad = gpu.cross_entropy_loss_and_grad(*device(gpu, args).values())
    expected_loss = reference.cross_entropy_loss(logits, labels)
    assert_close("cross_entropy_loss", np.float64(float(loss)), expected_loss, args)
    expected_grad = reference.cross_entropy_loss_backward(logits, labels)
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


@pytest.mark.parametrize("size", [0, 1, 3000, 3_000_000])
def test_the_librarys_range_of_int64_indices(gpu, rng, size):
    # nvcc_impl/_checks.py: csrc/checks.cu's kernel, one block up to a grid-stride loop over
    # several values a thread; the extremes anywhere (a middle element, the last)
    from numba import cuda

    from stage4_cuda.nvcc_impl import _checks

    values = rng.integers(-10**12, 10**12, size)
    if size:
        values[size // 2], values[-1] = 10**15, -10**15
    expected = (values.min(), values.max()) if size else (2**63 - 1, -2**63)
    assert _checks.TIER.index_range(cuda.to_device(values)) == expected
    int32 = cuda.to_device(np.array([5, -3, 9], np.int32))  # numba's kernel reads the others
    assert _checks.TIER.index_range(int32) == (-3, 9)


def test_a_recorded_step_checks_its_labels_once(gpu, rng):
    # the range check is made when the op is first called, never launched again by the recording
    logits = gpu.from_numpy(inputs.normal(rng, (4, 3)))
    labels = gpu.from_numpy(np.array([0, 2, 1, 2], np.int64))
    _, recording = gpu.record_step(lambda: gpu.cross_entropy_loss(logits, labels))
    recorded = [what for what, *_ in recording.launches]
    assert recorded and "s2c_cuda_index_range" not in recorded and "numba" not in recorded


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
    (2, 16, 24, 3, 1, 1, 9, 11),  # padded, and the backward by Winograd's 4x4 blocks
    (2, 16, 20, 3, 1, 0, 8, 8),  # the backward's dw by 2x2 blocks (6x6 outputs), dx by 4x4
]


def _conv_inputs(rng, shape):
    n, c, k, size, stride, padding, h, w = shape
    out_h, out_w = (h + 2 * padding - size) // stride + 1, (w + 2 * padding - size) // stride + 1
    return (inputs.normal(rng, (n, c, h, w)), inputs.normal(rng, (k, c, size, size)),
            inputs.normal(rng, (k,)), inputs.normal(rng, (n, k, out_h, out_w)))  # fmt: skip


@pytest.mark.oracle
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


@pytest.mark.oracle
@pytest.mark.parametrize("shape", CONV_SHAPES, ids=str)
@pytest.mark.parametrize("kernel", nvcc.CONV_KERNELS)
def test_each_conv_rung_within_its_error_bound_and_stage_3(gpu, rng, kernel, shape):
    """Every rung against PyTorch in float64 within the rung's bound, and against stage 3
    (both within the bound of the exact result: within twice it of each other)."""
    torch = pytest.importorskip("torch")
    from grader.poison import poisoned_allocations
    from stage4_cuda import conv_accuracy
    from stage4_cuda.nvcc_impl.conv import kernel_that_runs

    stride, padding = shape[4], shape[5]
    x, w, b, _ = _conv_inputs(rng, shape)
    with poisoned_allocations(gpu):
        y = gpu.to_numpy(gpu.conv2d_forward(gpu.from_numpy(x), gpu.from_numpy(w),
                                            gpu.from_numpy(b), stride, padding, kernel=kernel))
    ran = kernel_that_runs(kernel, x.shape, w.shape, stride, padding)
    x64, w64, b64 = (torch.from_numpy(a).double() for a in (x, w, b))
    exact = torch.nn.functional.conv2d(x64, w64, b64, stride, padding)
    bound = conv_accuracy.forward_bound(ran, x64, w64, b64, stride, padding)
    _close_to_exact(y, exact, bound, kernel)
    s3 = load_tier("c")
    stage3 = s3.to_numpy(s3.conv2d_forward(*map(s3.from_numpy, (x, w, b)), stride, padding))
    _close_to_exact(y, torch.from_numpy(np.asarray(stage3, np.float64)), 2 * bound,
                    f"{kernel} against stage 3")


@pytest.mark.oracle
@pytest.mark.parametrize("shape", CONV_SHAPES, ids=str)
def test_conv_backward_within_its_error_bound_and_stage_3(gpu, rng, shape):
    torch = pytest.importorskip("torch")
    from grader.poison import poisoned_allocations
    from stage4_cuda import conv_accuracy
    from stage4_cuda.nvcc_impl.conv import backward_winograd_blocks

    stride, padding = shape[4], shape[5]
    x, w, _, dy = _conv_inputs(rng, shape)
    with poisoned_allocations(gpu):
        grads = gpu.conv2d_backward(*map(gpu.from_numpy, (x, w, dy)), stride, padding)
    x64, w64, dy64 = (torch.from_numpy(a).double() for a in (x, w, dy))
    exact = torch.ops.aten.convolution_backward(
        dy64, x64, w64, [w.shape[0]], [stride] * 2, [padding] * 2, [1, 1], False, [0, 0], 1,
        [True, True, True])
    winograd = backward_winograd_blocks(x.shape, w.shape, stride, padding)
    bounds = conv_accuracy.backward_bound(x64, w64, dy64, stride, padding, winograd)
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


# --- recorded steps and CUDA graphs ---------------------------------------------------------------


def _trained_parameters(tier, data, recipe, **steps):
    """The parameters of LeNet-5 after one epoch of `recipe` on `data`, trained on `tier` by nn's
    trainer with `steps` (recorded, graph)."""
    from nn.models import build_model
    from nn.trainer import Trainer

    model = build_model("lenet5", data.input_shape, data.num_classes).build(tier, recipe.seed)
    trainer = Trainer(model, data, recipe, "/nonexistent", progress_bar=False, **steps)
    trainer.train_epoch()
    return {name: tier.to_numpy(param.value) for name, param in model.parameters().items()}


@pytest.mark.parametrize("graph", [False, True], ids=["recorded", "graph"])
def test_recorded_steps_train_exactly_as_op_by_op(gpu, graph):
    # The same kernels on the same batches in the same order: identical weights, bit for bit,
    # with a learning rate that changes at every step (cosine) and shifted images, and a last
    # batch of another size (100 examples in batches of 32: a recording for 32, one for 4).
    from nn.data import load_data
    from nn.recipes import Recipe

    recipe = Recipe(epochs=1, batch_size=32, optimizer="nesterov", lr=0.05, schedule="cosine",
                    shift=1, val_size=0, seed=7)  # fmt: skip
    data = load_data("mnist", val_size=0, train_size=100)
    expected = _trained_parameters(gpu, data, recipe, recorded=False)
    received = _trained_parameters(gpu, data, recipe, graph=graph)
    for name, value in expected.items():
        np.testing.assert_array_equal(received[name], value, err_msg=name)


def test_a_step_that_launches_a_numba_kernel_is_recorded_but_not_captured(gpu, rng):
    # numba's kernels run on the legacy default stream, which a CUDA graph cannot capture
    from stage4_cuda import numba_impl

    x = gpu.from_numpy(inputs.normal(rng, (4, 4)))
    total, recording = gpu.record_step(lambda: numba_impl.sum_rows(x))
    recording.launch()
    values = gpu.to_numpy(x)  # a float32 sum's last bit depends on its order: bound by the terms
    error = np.abs(gpu.to_numpy(total) - values.sum(axis=0, dtype=np.float64))
    assert np.all(error <= 4 * np.finfo(np.float32).eps * np.abs(values).sum(axis=0)), error
    with pytest.raises(ValueError, match=r"launched \d+ numba kernel"):
        gpu.capture_graph(recording)


# --- the memory-bound kernels' paths (on a GPU) ------------------------------------------------


@pytest.mark.parametrize("size", [(1000, 100), (317, 331)])  # several blocks: float4, then floats
@pytest.mark.parametrize("op_name", ["mse_loss", "bce_with_logits_loss"])
def test_a_mean_over_several_blocks(gpu, rng, op_name, size):
    """100,000 terms: 25 blocks of the first level, then the second; 317 x 331: odd, no float4."""
    args = OPS[op_name].build(rng, (size, 1.0))
    received, expected, _ = run_both(gpu, op_name, args)
    assert_close(op_name, received, expected, args, f" {size}")


@pytest.mark.parametrize("op_name", ["hinge_loss", "hinge_loss_backward"])
def test_hinge_over_many_rows(gpu, rng, op_name):
    """3000 rows of 37 scores: a warp a row, several blocks of the mean, columns past one warp."""
    forward = OPS["hinge_loss"]
    args = forward.build(rng, (3000, 37, 1.0))
    received, expected, _ = run_both(gpu, op_name, args)
    assert_close(op_name, received, expected, args)


def test_a_mean_is_the_same_on_every_run(gpu, rng):
    x = gpu.from_numpy(inputs.normal(rng, (2048, 1024)))
    t = gpu.from_numpy(inputs.normal(rng, (2048, 1024)))
    assert len({float(gpu.mse_loss(x, t)) for _ in range(5)}) == 1


# (n, c, h, w, k, stride): overlapping windows, a stride past the window, rows left over
POOL_GEOMETRIES = [(2, 3, 9, 7, 3, 2), (2, 2, 10, 11, 2, 3), (1, 2, 7, 9, 2, 2), (3, 2, 8, 8, 2, 2)]


@pytest.mark.parametrize("geometry", POOL_GEOMETRIES)
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pooling_backward_gathers_over_any_geometry(gpu, rng, kind, geometry):
    n, c, h, w, k, stride = geometry
    forward = f"{kind}pool2d_forward"
    x = inputs.distinct(rng, (n, c, h, w))
    outputs = getattr(reference, forward)(x, k, stride)
    y = outputs[0] if kind == "max" else outputs
    args = {"dy": inputs.normal(rng, y.shape)}
    if kind == "max":
        args["argmax"] = outputs[1]
    args.update(x_shape=x.shape, k=k, stride=stride)
    op_name = f"{kind}pool2d_backward"
    received, expected, _ = run_both(gpu, op_name, args)
    assert_close(op_name, received, expected, args, f" {geometry}")


def test_max_pooling_keeps_a_nan_and_routes_its_gradient(gpu, rng):
    x = inputs.distinct(rng, (1, 1, 4, 4))
    x[0, 0, 2, 3] = np.nan  # in window (1, 1) of k = stride = 2
    y, argmax = gpu.maxpool2d_forward(gpu.from_numpy(x), 2, 2)
    y, argmax = gpu.to_numpy(y), gpu.to_numpy(argmax)
    assert np.isnan(y[0, 0, 1, 1]) and np.isfinite(np.delete(y.ravel(), 3)).all()
    assert argmax[0, 0, 1, 1] == 2 * 4 + 3
    dy = np.arange(1, 5, dtype=np.float32).reshape(1, 1, 2, 2)
    dx = gpu.to_numpy(gpu.maxpool2d_backward(gpu.from_numpy(dy), gpu.from_numpy(argmax),
                                             x.shape, 2, 2))  # fmt: skip
    assert dx[0, 0, 2, 3] == 4.0 and dx.sum() == dy.sum()


@pytest.mark.parametrize("shape", [(32, 4, 16, 16), (64, 3, 9, 9), (5000, 3)])
def test_batchnorm_over_several_blocks_a_channel(gpu, rng, shape):
    """8192 and 5184 values a channel (2 blocks each; float4 runs, then runs of 81 floats), and
    an [N, C] batch of runs of one float."""
    forward = OPS["batchnorm_forward"]
    args = forward.build(rng, (shape, True, 0.1))
    received, expected, natives = run_both(gpu, "batchnorm_forward", args)
    assert_close("batchnorm_forward", received, expected, args, f" {shape}")
    backward = {"dy": inputs.normal(rng, shape), "x": args["x"], "gamma": args["gamma"],
                "saved": expected[1]}  # fmt: skip
    received, expected, _ = run_both(gpu, "batchnorm_backward", backward)
    assert_close("batchnorm_backward", received, expected, backward, f" {shape}")


@pytest.mark.parametrize("size", [4096, 4099])  # float4, then a last partial quad
@pytest.mark.parametrize("op_name", ["sgd_step", "momentum_step", "rmsprop_step", "adam_step",
                                     "dropout_forward"])  # fmt: skip
def test_four_elements_a_thread_with_a_partial_last_quad(gpu, rng, op_name, size):
    op = OPS[op_name]
    args = op.build(rng, (((size,), 0.5) if op_name == "dropout_forward" else ((size,), 0)))
    received, expected, natives = run_both(gpu, op_name, args)
    reference_args = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}
    call(reference, op_name, args, reference_args)  # stage 2 updates its copies in place
    for name in op.inplace:
        assert_close(op_name, gpu.to_numpy(natives[name]), reference_args[name], args, f" {name}")
    if op.outputs:
        assert_close(op_name, received, expected, args)


def test_the_fused_bias_relu_equals_add_then_relu(gpu, rng):
    x, b = inputs.normal(rng, (33, 12)), inputs.normal(rng, (12,))
    x[3, 4] = np.nan
    fused = gpu.to_numpy(gpu.bias_relu(gpu.from_numpy(x), gpu.from_numpy(b)))
    np.testing.assert_array_equal(fused, np.maximum(x + b, 0))  # the NaN too, in its place
    wrong = gpu.from_numpy(np.ones(5, np.float32))
    with pytest.raises(ValueError, match=r"bias_relu: b must have shape \[M=12\] \(M: x's col"):
        gpu.bias_relu(gpu.from_numpy(x), wrong)



# (n, c, h, w, k, stride): the Fashion CNN's two poolings (float2 stores of rows of 2), an odd
# width (single stores), overlapping windows (the two ops: the fused backward takes k == stride)
FUSED_POOLS = [(8, 64, 26, 26, 2, 2), (4, 128, 11, 11, 2, 2), (3, 5, 9, 7, 2, 2),
               (2, 3, 9, 8, 3, 2)]  # fmt: skip


@pytest.mark.parametrize("pool", FUSED_POOLS)
def test_the_fused_maxpool_relu_equals_maxpool_then_relu(gpu, rng, pool):
    n, c, h, w, k, stride = pool
    x = inputs.normal(rng, (n, c, h, w))
    x[0, 0, 4, 4] = np.nan
    relu_y, argmax = gpu.maxpool2d_relu_forward(gpu.from_numpy(x), k, stride)
    y, expected_argmax = gpu.maxpool2d_forward(gpu.from_numpy(x), k, stride)
    expected_y = gpu.relu(y)
    np.testing.assert_array_equal(gpu.to_numpy(relu_y), gpu.to_numpy(expected_y))
    np.testing.assert_array_equal(gpu.to_numpy(argmax), gpu.to_numpy(expected_argmax))
    dy = gpu.from_numpy(inputs.normal(rng, tuple(relu_y.shape)))
    dx = gpu.maxpool2d_relu_backward(dy, argmax, relu_y, x.shape, k, stride)
    expected_dx = gpu.maxpool2d_backward(gpu.relu_backward(y, dy), argmax, x.shape, k, stride)
    np.testing.assert_array_equal(gpu.to_numpy(dx), gpu.to_numpy(expected_dx))
    with pytest.raises(ValueError, match=r"maxpool2d_relu_backward: relu_y must have dy's shape"):
        gpu.maxpool2d_relu_backward(dy, argmax, gpu.from_numpy(x), x.shape, k, stride)

# --- the memory benchmark's table (no GPU) -------------------------------------------------------


def test_the_memory_benchmark_prints_the_table_of_a_record(tmp_path, capsys):
    from bench import memory_bound
    from grader.timing import Timing

    def row(op, seconds):  # 1 GB in `seconds`, against a copy of 2000 GB/s
        return memory_bound._row(op, "[4096x4096]", 10**9, Timing(seconds, seconds, seconds,
                                 seconds, seconds, 5, 1, 1e-5), 2e12)  # fmt: skip

    epilogue = [row("add + relu (two ops)", 2e-3), row("bias_relu (fused)", 1e-3)]
    record = {"device": "a GPU", "copy_bandwidth_gb_per_s": 2000.0, "target_of_copy": 0.9,
              "command": "python -m bench.memory_bound --write",
              "rows": [row("relu", 1e-3)], "epilogue": epilogue}  # fmt: skip
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record))
    assert memory_bound.main(["--table", str(path)]) == 0
    page = capsys.readouterr().out
    assert "# Memory-bound ops of the nvcc variant on a GPU" in page
    assert "| relu | [4096x4096] | 1000.0 us | 1000 MB | 1000 | 50.0% |" in page
    assert "The fused kernel takes 0.50x the two ops' time." in page

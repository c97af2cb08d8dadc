"""Stage 4, nvcc variant: the memory-bound kernels (pooling, dropout, the epilogue, the losses,
batchnorm, the optimizer steps), the dense layer's products (split along k or not) and the
device-data hooks run on the CPU, through the emulation of
CUDA in tests/cuda_emulation/ (a block's threads are fibers, __syncthreads a barrier, warp
shuffles a barrier of the warp's 32 threads: warp_shuffle.h), against stage 2. No GPU needed: this
checks what the kernels compute (indices, edges, the float4 and scalar paths, the two-level
reductions), not their speed, which tests/test_stage4_nvcc.py and bench/memory_bound.py measure
on a GPU.

The sources are compiled by g++ into a shared library whose exported functions take host
pointers (the emulation's "device" memory is the host's), called through ctypes."""

import ctypes
import shutil
from pathlib import Path

import numpy as np
import pytest
from cuda_emulated import build_library

import stage2_numpy as reference

REPO = Path(__file__).resolve().parent.parent
CSRC = REPO / "stage4_cuda" / "csrc"
EMULATION = REPO / "tests" / "cuda_emulation"
# losses.cu's cross-entropy calls rung 5 of the softmax ladder (softmax/05_cross_entropy.cu)
SOURCES = ["pooling.cu", "dropout.cu", "epilogue.cu", "losses.cu", "norm.cu", "optim.cu",
           "device_data.cu", "errors.cu", "softmax/05_cross_entropy.cu", "matmul.cu", "dense.cu",
           "linalg.cu", "attention.cu"]  # fmt: skip
# `kernel<<<grid, block>>>(arguments)` -> `emulate::Launch(grid, block).run(kernel, arguments)`

V, I64, F32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_float
SIGNATURES = {
    "maxpool2d_forward": [V, V, V, V], "maxpool2d_backward": [V, V, V, V],
    "maxpool2d_relu_forward": [V, V, V, V], "maxpool2d_relu_backward": [V, V, V, V, V],
    "avgpool2d_forward": [V, V, V], "avgpool2d_backward": [V, V, V],
    "dropout_forward": [V, V, V, I64, ctypes.c_double, ctypes.c_uint64],
    "dropout_backward": [V, V, V, I64, ctypes.c_double], "bias_relu": [V, V, V, I64, I64],
    "mse_loss": [V, V, V, V, I64], "mse_loss_backward": [V, V, V, I64],
    "bce_with_logits_loss": [V, V, V, V, I64], "bce_with_logits_loss_backward": [V, V, V, I64],
    "hinge_loss": [V, V, F32, V, V, I64, I64], "hinge_loss_backward": [V, V, F32, V, I64, I64],
    "batchnorm_forward": [V] * 9 + [I64, I64, I64, ctypes.c_int, F32, F32],
    "batchnorm_backward": [V] * 9 + [I64, I64, I64],
    "sgd_step": [V, V, I64, F32, F32], "momentum_step": [V, V, V, I64, F32, F32, ctypes.c_int, F32],
    "rmsprop_step": [V, V, V, I64, F32, F32, F32, F32], "adam_step": [V, V, V, V, I64] + [F32] * 7,
    "momentum_step_list": [V, V, V, V, V, I64, F32, F32, ctypes.c_int],
    "take": [V, V, V, I64, I64], "take_int64": [V, V, V, I64, I64],
    "shift_images": [V] * 5 + [I64] * 5, "correct_count": [V, V, V, I64, I64],
    "linear_scratch": [I64, I64, I64, V], "linear_forward": [V] * 5 + [I64] * 3,
    "linear_relu_forward": [V] * 5 + [I64] * 3,
    "linear_backward": [V] * 7 + [I64] * 3,
    "layernorm": [V] * 6 + [I64, I64, F32], "layernorm_backward": [V] * 9 + [I64, I64],
    "gelu": [V, V, I64, ctypes.c_int], "gelu_backward": [V, V, V, I64, ctypes.c_int],
}  # fmt: skip


class Geometry(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int64) for name in
                "planes height width out_height out_width k stride".split()]  # fmt: skip


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed here")
    library = build_library(tmp_path_factory.mktemp("emulated"), CSRC, EMULATION, SOURCES)
    loaded = ctypes.CDLL(str(library))
    for name, arguments in SIGNATURES.items():
        getattr(loaded, f"s2c_cuda_{name}").argtypes = arguments
    loaded.s2c_cuda_layernorm_chunks.argtypes, loaded.s2c_cuda_layernorm_chunks.restype = [I64], I64
    return loaded


def call(lib, name, *args):
    """Call s2c_cuda_<name> with NumPy arrays as their pointers; the status must be OK."""
    pointers = [a.ctypes.data_as(V) if isinstance(a, np.ndarray) else a for a in args]
    assert getattr(lib, f"s2c_cuda_{name}")(*pointers) == 0


def empty(shape, dtype=np.float32):
    """An output filled with NaN (integers: -7), so that an unwritten element shows."""
    return np.full(shape, -7 if np.dtype(dtype).kind == "i" else np.nan, dtype)


@pytest.fixture
def rng():
    return np.random.default_rng(5)


# (n, c, h, w, k, stride): overlapping windows, a stride past the window, rows left over, a window
# the size of the plane
POOLS = [(2, 3, 9, 7, 3, 2), (2, 2, 10, 11, 2, 3), (1, 2, 7, 9, 2, 2), (3, 2, 8, 8, 2, 2),
         (1, 1, 5, 5, 5, 1), (2, 2, 7, 5, 1, 3)]  # fmt: skip


@pytest.mark.parametrize("pool", POOLS)
def test_pooling_forward_and_backward(lib, rng, pool):
    n, c, h, w, k, stride = pool
    oh, ow = (h - k) // stride + 1, (w - k) // stride + 1
    geometry = ctypes.byref(Geometry(n * c, h, w, oh, ow, k, stride))
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    x[0, 0, h // 2, w // 2] = np.nan  # max pooling keeps it
    y, argmax = empty((n, c, oh, ow)), empty((n, c, oh, ow), np.int64)
    call(lib, "maxpool2d_forward", x, y, argmax, geometry)
    expected_y, expected_argmax = reference.maxpool2d_forward(x, k, stride)
    np.testing.assert_array_equal(y, expected_y)
    np.testing.assert_array_equal(argmax, expected_argmax)
    dy, dx = rng.standard_normal((n, c, oh, ow)).astype(np.float32), empty(x.shape)
    call(lib, "maxpool2d_backward", dy, argmax, dx, geometry)
    expected = reference.maxpool2d_backward(dy, expected_argmax, x.shape, k, stride)
    np.testing.assert_allclose(dx, expected, rtol=1e-6, atol=1e-6)
    # fused with the ReLU after it: the two ops' results, bit for bit
    relu_y, argmax = empty((n, c, oh, ow)), empty((n, c, oh, ow), np.int64)
    call(lib, "maxpool2d_relu_forward", x, relu_y, argmax, geometry)
    np.testing.assert_array_equal(relu_y, reference.relu(expected_y))
    np.testing.assert_array_equal(argmax, expected_argmax)
    dx = empty(x.shape)
    fused_backward = lib.s2c_cuda_maxpool2d_relu_backward(
        *(a.ctypes.data_as(V) for a in (dy, argmax, relu_y, dx)), geometry)
    if k != stride:  # overlapping windows: refused (the wrapper takes the two ops)
        assert fused_backward == 2
    else:
        assert fused_backward == 0
        masked = reference.relu_backward(relu_y, dy)
        expected = reference.maxpool2d_backward(masked, expected_argmax, x.shape, k, stride)
        np.testing.assert_array_equal(dx, expected)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    y, dx = empty((n, c, oh, ow)), empty(x.shape)
    call(lib, "avgpool2d_forward", x, y, geometry)
    np.testing.assert_allclose(y, reference.avgpool2d_forward(x, k, stride), rtol=1e-6, atol=1e-6)
    call(lib, "avgpool2d_backward", dy, dx, geometry)
    expected = reference.avgpool2d_backward(dy, x.shape, k, stride)
    np.testing.assert_allclose(dx, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("size", [4096, 4099, 13])  # float4, then a partial last quad
def test_dropout_and_the_fused_epilogue(lib, rng, size):
    x, y, mask = rng.standard_normal(size).astype(np.float32), empty(size), empty(size)
    call(lib, "dropout_forward", x, y, mask, size, 0.3, 12345)
    expected_y, expected_mask = reference.dropout_forward(x, 0.3, 12345)
    np.testing.assert_array_equal(mask, expected_mask)  # the shared stream, exactly
    np.testing.assert_allclose(y, expected_y, rtol=1e-6)
    dx = empty(size)
    call(lib, "dropout_backward", y, mask, dx, size, 0.3)
    np.testing.assert_allclose(dx, reference.dropout_backward(y, mask, 0.3), rtol=1e-6)
    rows, cols = 3, size // 3
    x, y = np.ascontiguousarray(x[: rows * cols].reshape(rows, cols)), empty((rows, cols))
    bias = rng.standard_normal(cols).astype(np.float32)
    call(lib, "bias_relu", x, bias, y, rows, cols)
    np.testing.assert_array_equal(y, np.maximum(x + bias, 0))


@pytest.mark.parametrize("shape", [(1000, 100), (317, 331), (3, 5)])  # 25 blocks; no float4
@pytest.mark.parametrize("loss", ["mse_loss", "bce_with_logits_loss"])
def test_a_two_level_mean_and_its_gradient(lib, rng, loss, shape):
    a = rng.standard_normal(shape).astype(np.float32)
    b = rng.random(shape).astype(np.float32)
    partials, result = empty(1024, np.float64), empty(1)
    call(lib, loss, a, b, partials, result, a.size)
    np.testing.assert_allclose(result[0], getattr(reference, loss)(a, b), rtol=1e-5)
    grad = empty(shape)
    call(lib, f"{loss}_backward", a, b, grad, a.size)
    np.testing.assert_allclose(grad, getattr(reference, f"{loss}_backward")(a, b), rtol=1e-5,
                               atol=1e-9)  # fmt: skip


@pytest.mark.parametrize("rows, cols", [(3000, 37), (5, 10), (70, 100)])
def test_hinge_a_warp_a_row(lib, rng, rows, cols):
    scores = rng.standard_normal((rows, cols)).astype(np.float32)
    labels = rng.integers(0, cols, rows).astype(np.int64)
    partials, result, grad = empty(1024, np.float64), empty(1), empty((rows, cols))
    call(lib, "hinge_loss", scores, labels, 1.0, partials, result, rows, cols)
    np.testing.assert_allclose(result[0], reference.hinge_loss(scores, labels, 1.0), rtol=1e-5)
    call(lib, "hinge_loss_backward", scores, labels, 1.0, grad, rows, cols)
    np.testing.assert_allclose(grad, reference.hinge_loss_backward(scores, labels, 1.0))


@pytest.mark.parametrize("shape", [(32, 4, 16, 16), (64, 3, 9, 9), (5000, 3), (2, 3, 4, 5)])
def test_batchnorm_over_blocks_of_a_channel(lib, rng, shape):
    """2 blocks a channel of float4 runs; of runs of 81 floats; [N, C]; one block."""
    n, c = shape[:2]
    length = int(np.prod(shape)) // (n * c)
    x = (rng.standard_normal(shape) * 2 + 1.5).astype(np.float32)
    gamma, beta = (rng.standard_normal(c).astype(np.float32) for _ in range(2))
    running = [rng.standard_normal(c).astype(np.float32), rng.uniform(0.5, 2, c).astype(np.float32)]
    expected_running = [r.copy() for r in running]
    y, mean, invstd, partials = empty(shape), empty(c), empty(c), empty(2 * 64 * c, np.float64)
    call(lib, "batchnorm_forward", x, gamma, beta, *running, y, mean, invstd, partials, n, c,
         length, 1, 0.1, 1e-5)  # fmt: skip
    expected_y, saved = reference.batchnorm_forward(x, gamma, beta, *expected_running, True, 0.1,
                                                    1e-5)  # fmt: skip
    np.testing.assert_allclose(y, expected_y, rtol=1e-4, atol=1e-4)
    for got, want in zip([mean, invstd, *running], [*saved, *expected_running], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    dy = rng.standard_normal(shape).astype(np.float32)
    dx, dgamma, dbeta = empty(shape), empty(c), empty(c)
    call(lib, "batchnorm_backward", dy, x, gamma, *saved, dx, dgamma, dbeta, partials, n, c,
         length)  # fmt: skip
    for got, want in zip([dx, dgamma, dbeta], reference.batchnorm_backward(dy, x, gamma, saved),
                         strict=True):  # fmt: skip
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)
    y = empty(shape)  # evaluation: the running statistics, no partial sums (NULL)
    call(lib, "batchnorm_forward", x, gamma, beta, *running, y, mean, invstd, None, n, c, length,
         0, 0.1, 1e-5)  # fmt: skip
    expected_y, _ = reference.batchnorm_forward(x, gamma, beta, *running, False, 0.1, 1e-5)
    np.testing.assert_allclose(y, expected_y, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(3, 300), (70, 3), (1, 7), (2, 5, 33), (2, 300, 37)])
def test_layernorm_rows_past_a_block_and_many_short_rows(lib, rng, shape):
    """Rows longer than a block of 256 threads; many rows of 3 (a block each, and dgamma's sums
    down 70 rows); one row; [N, T, D]; 600 rows of 37 (dgamma's partial sums over three chunks of
    rows, the last one short, and features past a block's 32)."""
    d = shape[-1]
    rows = int(np.prod(shape)) // d
    x = (rng.standard_normal(shape) * 2 + 1.5).astype(np.float32)
    gamma, beta = (rng.standard_normal(d).astype(np.float32) for _ in range(2))
    y, mean, invstd = empty(shape), empty(shape[:-1]), empty(shape[:-1])
    call(lib, "layernorm", x, gamma, beta, y, mean, invstd, rows, d, 1e-5)
    expected_y, saved = reference.layernorm(x, gamma, beta, 1e-5)
    np.testing.assert_allclose(y, expected_y, rtol=1e-4, atol=1e-4)
    for got, want in zip([mean, invstd], saved, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    dy = rng.standard_normal(shape).astype(np.float32)
    dx, dgamma, dbeta = empty(shape), empty(d), empty(d)
    partial = empty(2 * lib.s2c_cuda_layernorm_chunks(rows) * d)
    call(lib, "layernorm_backward", dy, x, gamma, *saved, dx, dgamma, dbeta, partial, rows, d)
    for got, want in zip([dx, dgamma, dbeta], reference.layernorm_backward(dy, x, gamma, saved),
                         strict=True):  # fmt: skip
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("size", [4096, 4099])  # float4, then the scalar path
def test_gelu_both_forms(lib, rng, size, approximate):
    x = (rng.standard_normal(size) * 4).astype(np.float32)
    x[:3] = (np.nan, np.inf, -np.inf)
    dy, y, dx = rng.standard_normal(size).astype(np.float32), empty(size), empty(size)
    call(lib, "gelu", x, y, size, int(approximate == "tanh"))
    np.testing.assert_allclose(y, reference.gelu(x, approximate), rtol=1e-5, atol=1e-6)
    call(lib, "gelu_backward", x, dy, dx, size, int(approximate == "tanh"))
    expected = reference.gelu_backward(x, dy, approximate)
    np.testing.assert_allclose(dx, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("size", [4096, 4099, 7])  # float4, then a partial last quad
def test_the_optimizer_steps_four_parameters_a_thread(lib, rng, size):
    p, g, m = (rng.standard_normal(size).astype(np.float32) for _ in range(3))
    v = rng.random(size).astype(np.float32)
    steps = {  # name: (the library's arguments after the arrays, stage 2's after the arrays)
        "sgd_step": ((0.1, 0.01), (0.1, 0.01), [p]),
        "momentum_step": ((0.1, 0.9, 1, 0.0), (0.1, 0.9, True, 0.0), [p, v]),
        "rmsprop_step": ((0.01, 0.99, 1e-8, 0.0), (0.01, 0.99, 1e-8, 0.0), [p, v]),
        "adam_step": ((0.01, 0.9, 0.999, 1e-8, 0.01, 1 - 0.9**3, 1 - 0.999**3),
                      (3, 0.01, 0.9, 0.999, 1e-8, 0.01), [p, m, v]),
    }  # fmt: skip
    for name, (library_scalars, reference_scalars, states) in steps.items():
        ours, theirs = [s.copy() for s in states], [s.copy() for s in states]
        call(lib, name, ours[0], g, *ours[1:], size, *library_scalars)
        getattr(reference, name)(theirs[0], g.copy(), *theirs[1:], *reference_scalars)
        for got, want in zip(ours, theirs, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)


def test_a_list_step_gives_each_tensor_its_own_step(lib, rng):
    # momentum_step_list on 19 tensors (a launch of 16, then one of 3): sizes with and without a
    # partial last quad, every third off a 16-byte boundary (the scalar path), each with its own
    # weight decay; bit for bit momentum_step's values on each tensor
    count = 19
    sizes = [int(size) for size in rng.integers(1, 3000, count)]
    decays = np.array([0.01 * (i % 3) for i in range(count)], np.float32)

    def tensors():  # p, g, v of each size, the same values on every call
        made = np.random.default_rng(11)
        return [[made.standard_normal(size + i % 3 // 2).astype(np.float32)[i % 3 // 2:]
                 for _ in range(3)] for i, size in enumerate(sizes)]  # fmt: skip

    expected, received = tensors(), tensors()
    for (p, g, v), size, decay in zip(expected, sizes, decays, strict=True):
        call(lib, "momentum_step", p, g, v, size, 0.1, 0.9, 1, float(decay))

    def pointers(which):
        return (V * count)(*[arrays[which].ctypes.data for arrays in received])

    call(lib, "momentum_step_list", pointers(0), pointers(1), pointers(2),
         np.array(sizes, np.int64), decays, count, 0.1, 0.9, 1)  # fmt: skip
    for got, want in zip(received, expected, strict=True):
        for got_array, want_array in zip(got, want, strict=True):
            np.testing.assert_array_equal(got_array, want_array)


def test_take_gathers_rows_of_floats_and_of_labels(lib, rng):
    x = rng.standard_normal((10, 3, 4)).astype(np.float32)
    labels = rng.integers(0, 10, 10)
    indices = rng.integers(0, 10, 7)
    y, taken = empty((7, 3, 4)), empty(7, np.int64)
    call(lib, "take", x, indices, y, 7, 12)
    call(lib, "take_int64", labels, indices, taken, 7, 1)
    np.testing.assert_array_equal(y, x[indices])
    np.testing.assert_array_equal(taken, labels[indices])


def test_shift_images_moves_each_image_by_its_offset(lib, rng):
    n, c, h, w, shift = 5, 2, 6, 7, 2
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    rows, cols = rng.integers(0, 2 * shift + 1, n), rng.integers(0, 2 * shift + 1, n)
    fill = np.array([-1.5, 2.5], np.float32)
    y = empty(x.shape)
    call(lib, "shift_images", x, rows, cols, fill, y, n, c, h, w, shift)
    # nn/augment.shifted's rule: pad by `shift` with the fill, crop at (rows[n], cols[n])
    padded = np.broadcast_to(fill[None, :, None, None], (n, c, h + 2 * shift, w + 2 * shift)).copy()
    padded[:, :, shift : shift + h, shift : shift + w] = x
    expected = np.stack([padded[i, :, rows[i] : rows[i] + h, cols[i] : cols[i] + w]
                         for i in range(n)])  # fmt: skip
    np.testing.assert_array_equal(y, expected)


@pytest.mark.parametrize("rows, cols", [(1000, 10), (3, 1)])  # rows past the block; one logit
def test_correct_count(lib, rng, rows, cols):
    logits = rng.integers(-2, 3, (rows, cols)).astype(np.float32)  # ties: the first highest wins
    labels = rng.integers(0, max(cols, 2), rows)
    count = empty(1)
    call(lib, "correct_count", logits, labels, count, rows, cols)
    predicted = (logits[:, 0] > 0).astype(np.int64) if cols == 1 else logits.argmax(axis=1)
    assert count[0] == (predicted == labels).sum()


# (n, in, out): the forward split along in (one tile for the emulated 132 multiprocessors: 16
# pieces of 64), dw split along n (the backward), neither (70 x 33 x 45)
@pytest.mark.parametrize("sizes", [(8, 1000, 40), (1000, 40, 8), (70, 33, 45)])
def test_the_dense_products_split_along_k_or_not(lib, rng, sizes):
    n, inputs, outputs = sizes
    x = rng.standard_normal((n, inputs)).astype(np.float32)
    w = rng.standard_normal((outputs, inputs)).astype(np.float32)
    b = rng.standard_normal(outputs).astype(np.float32)
    dy = rng.standard_normal((n, outputs)).astype(np.float32)
    floats = np.zeros(1, np.int64)
    call(lib, "linear_scratch", n, inputs, outputs, floats)
    scratch = empty(max(int(floats[0]), 1))
    y = empty((n, outputs))
    call(lib, "linear_forward", x, w, b, y, scratch, n, inputs, outputs)
    dx, dw, db = empty(x.shape), empty(w.shape), empty(outputs)
    call(lib, "linear_backward", x, w, dy, dx, dw, db, scratch, n, inputs, outputs)
    # each output within 1e-5 of the sum of its terms' magnitudes (a float32 sum in any order)
    for got, exact, size in [
        (y, x.astype(np.float64) @ w.T + b, np.abs(x) @ np.abs(w).T + np.abs(b)),
        (dx, dy.astype(np.float64) @ w, np.abs(dy) @ np.abs(w)),
        (dw, dy.T.astype(np.float64) @ x, np.abs(dy).T @ np.abs(x)),
        (db, dy.sum(axis=0, dtype=np.float64), np.abs(dy).sum(axis=0)),
    ]:
        assert np.all(np.abs(got - exact) <= 1e-5 * size), np.max(np.abs(got - exact) / size)


# (n, in, out): split along in (LeNet-5's fc1 at batch 1: 7 pieces; 16 pieces), not split
@pytest.mark.parametrize("sizes", [(1, 400, 120), (8, 1000, 40), (70, 33, 45)])
def test_the_dense_layer_with_its_relu_is_linear_forward_then_relu(lib, rng, sizes):
    """linear_relu_forward (inference's extra: the ReLU in the product's last kernel) gives
    linear_forward's numbers through a ReLU, zeros and positives; a NaN in x's row 0 (of a batch
    of more than one) keeps that row NaN."""
    n, inputs, outputs = sizes
    x = rng.standard_normal((n, inputs)).astype(np.float32)
    if n > 1:
        x[0, inputs // 2] = np.nan
    w = rng.standard_normal((outputs, inputs)).astype(np.float32)
    b = rng.standard_normal(outputs).astype(np.float32)
    floats = np.zeros(1, np.int64)
    call(lib, "linear_scratch", n, inputs, outputs, floats)
    scratch = empty(max(int(floats[0]), 1))
    y, fused = empty((n, outputs)), empty((n, outputs))
    call(lib, "linear_forward", x, w, b, y, scratch, n, inputs, outputs)
    call(lib, "linear_relu_forward", x, w, b, fused, scratch, n, inputs, outputs)
    np.testing.assert_array_equal(fused, np.where(y <= 0, 0, y))  # NaN equals NaN here
    assert (fused == 0).any() and (fused > 0).any()
    if n > 1:
        assert np.isnan(fused[0]).all() and not np.isnan(fused[1:]).any()

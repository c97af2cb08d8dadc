"""Stage 3 (C) against stage 2 (NumPy) on every op, backward ops and optimizers included; the two
conv algorithms against each other; the wrapper's status handling and its table of exercises.

Inputs are fresh random float32 numbers at awkward shapes (batch 1, odd sizes, sizes that are not
multiples of any tile, strided and padded windows); both tiers get the same values, and stage 3's
outputs must match within float32 tolerance. The C extension must be built (`make build`);
without it these tests are skipped, saying so.
"""

import re
import types
from pathlib import Path

import numpy as np
import pytest

import stage2_numpy as s2
import stage3_c as s3
from contract import WEEKS
from grader import inputs
from stage3_c import _native

pytestmark = pytest.mark.skipif(not s3.available()[0], reason=s3.available()[1])

CSRC = Path(s3.__file__).parent / "csrc"
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}


def week(group):
    """The pytest mark of the week that teaches `group` in stage 3."""
    return getattr(pytest.mark, f"week{WEEKS[3][group]:02d}")



def assert_same(received, expected, tolerance=TOLERANCE, what="output"):
    """Outputs (arrays, floats, tuples of them) match: same structure, shapes, dtypes, values."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(received, (tuple, list)) and len(received) == len(expected), what
        for index, (got, want) in enumerate(zip(received, expected, strict=True)):
            assert_same(got, want, tolerance, f"{what}[{index}]")
        return
    if expected is None:
        assert received is None, what
        return
    if isinstance(expected, float):
        assert isinstance(received, float), f"{what}: a loss must be a Python float"
    else:
        assert isinstance(received, np.ndarray), f"{what}: got {type(received).__name__}"
        assert received.shape == expected.shape, f"{what}: shape {received.shape}"
        assert received.dtype == expected.dtype, f"{what}: dtype {received.dtype}"
        assert received.flags.c_contiguous, f"{what}: not C-contiguous"
    # atol grows with the output's largest value: a sum of K products carries rounding relative
    # to the size of its terms, not of its (possibly tiny) result
    scale = max(1.0, float(np.max(np.abs(expected))))
    np.testing.assert_allclose(
        received, expected, rtol=tolerance["rtol"], atol=tolerance["atol"] * scale, err_msg=what
    )


def run_both(op, *args, **kwargs):
    """Call `op` on stage 2 and on stage 3 with copies of the same arguments; compare outputs
    and every argument the op may update in place."""
    args2 = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    args3 = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    expected = getattr(s2, op)(*args2, **kwargs)
    received = getattr(s3, op)(*args3, **kwargs)
    assert_same(received, expected, what=op)
    for index, (got, want) in enumerate(zip(args3, args2, strict=True)):
        if isinstance(want, np.ndarray):
            assert_same(got, want, what=f"{op} argument {index} after the call")
    return received


# ---- linear algebra (week 11) ----------------------------------------------------------------


@week("linear algebra")
@pytest.mark.parametrize("kernel", [*s3.MATMUL_KERNELS, "best", 1, 5])
@pytest.mark.parametrize("n, k, m", [(1, 1, 1), (17, 33, 9), (70, 5, 131)])
def test_matmul_every_kernel(rng, kernel, n, k, m):
    a, b = inputs.normal(rng, (n, k)), inputs.normal(rng, (k, m))
    expected = s2.matmul(a, b)
    assert_same(s3.matmul(a, b, kernel=kernel), expected, what=f"matmul kernel {kernel}")


@week("linear algebra")
@pytest.mark.parametrize("shape", [(1, 1), (7, 45), (67, 33)])
def test_transpose_sum_rows_scale(rng, shape):
    x = inputs.normal(rng, shape)
    run_both("transpose", x)
    run_both("sum_rows", x)
    run_both("scale", x, float(rng.normal()))


@week("linear algebra")
@pytest.mark.parametrize("op", ["add", "mul"])
@pytest.mark.parametrize("shape", [(5,), (3, 7), (2, 3, 4, 5), (300, 301)])
def test_add_mul_same_shape_and_row(rng, op, shape):
    a = inputs.normal(rng, shape)
    run_both(op, a, inputs.normal(rng, shape))
    run_both(op, a, inputs.normal(rng, shape[-1:]))


def test_sum_rows_of_many_rows_keeps_its_digits(rng):
    """Column sums of 100,000 rows in double: float32 running sums would drift by ~1e-3."""
    x = inputs.uniform(rng, (100_000, 3), 0.0, 1.0)
    expected = x.astype(np.float64).sum(axis=0)
    np.testing.assert_allclose(s3.sum_rows(x), expected, rtol=1e-6)


# ---- dense, activations, losses (week 12) ------------------------------------------------------


@week("dense")
@pytest.mark.parametrize("n, n_in, n_out", [(1, 1, 1), (13, 29, 7), (64, 784, 128)])
def test_linear_forward_and_backward(rng, n, n_in, n_out):
    x, w = inputs.normal(rng, (n, n_in)), inputs.normal(rng, (n_out, n_in))
    run_both("linear_forward", x, w, inputs.normal(rng, (n_out,)))
    run_both("linear_backward", x, w, inputs.normal(rng, (n, n_out)))


@week("activations")
@pytest.mark.parametrize("shape", [(1,), (3, 5), (2, 3, 7, 9), (70_001,)])
@pytest.mark.parametrize("scale", [1.0, 30.0])
def test_elementwise_activations(rng, shape, scale):
    x, dy = inputs.away_from_zero(rng, shape, scale), inputs.normal(rng, shape)
    run_both("relu", x)
    run_both("relu_backward", x, dy)
    run_both("leaky_relu", x, 0.1)
    run_both("leaky_relu_backward", x, dy, 0.1)
    for name in ("sigmoid", "tanh"):
        y = run_both(name, x)
        run_both(f"{name}_backward", y, dy)


@week("softmax")
@pytest.mark.parametrize("shape", [(1, 1), (4, 10), (33, 200)])
@pytest.mark.parametrize("scale", [1.0, 1e4])
def test_softmax_and_log_softmax(rng, shape, scale):
    x, dy = inputs.normal(rng, shape, scale), inputs.normal(rng, shape)
    for name in ("softmax", "log_softmax"):
        y = run_both(name, x)
        run_both(f"{name}_backward", y, dy)


@week("losses")
@pytest.mark.parametrize("n, c", [(1, 1), (1, 3), (37, 10)])
def test_losses_and_their_gradients(rng, n, c):
    scores = inputs.normal(rng, (n, c), 3.0)
    labels = rng.integers(0, c, n)
    targets = inputs.uniform(rng, (n, c), 0.0, 1.0)
    for name, args in [
        ("mse_loss", (scores, inputs.normal(rng, (n, c)))),
        ("cross_entropy_loss", (scores, labels)),
        ("cross_entropy_loss", (scores, labels.astype(np.int32))),
        ("bce_with_logits_loss", (scores, targets)),
        ("hinge_loss", (scores, labels)),
    ]:
        run_both(name, *args)
        run_both(f"{name}_backward", *args)
    run_both("hinge_loss", scores, labels, margin=0.5)
    run_both("hinge_loss_backward", scores, labels, margin=0.5)


# ---- optimizers and init (week 12) ------------------------------------------------------------


@week("optimizers")
@pytest.mark.parametrize("shape", [(1,), (5, 3), (300, 301)])
@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_optimizer_steps_update_in_place(rng, shape, weight_decay):
    """Five steps of each optimizer; p and every state array must match after each."""
    p = inputs.normal(rng, shape)
    states = {
        "sgd_step": ([], {}),
        "momentum_step": ([np.zeros(shape, np.float32)], {"momentum": 0.9}),
        "nesterov": ([np.zeros(shape, np.float32)], {"momentum": 0.9, "nesterov": True}),
        "rmsprop_step": ([np.zeros(shape, np.float32)], {}),
        "adam_step": ([np.zeros(shape, np.float32), np.zeros(shape, np.float32)], {}),
    }
    for name, (state, extra) in states.items():
        op = "momentum_step" if name == "nesterov" else name
        p2, p3 = p.copy(), p.copy()
        state2, state3 = [a.copy() for a in state], [a.copy() for a in state]
        for t in range(1, 6):
            g = inputs.normal(rng, shape)
            step = (t,) if op == "adam_step" else ()
            lr = {"lr": 0.01, "weight_decay": weight_decay, **extra}
            assert getattr(s2, op)(p2, g, *state2, *step, **lr) is None
            assert getattr(s3, op)(p3, g, *state3, *step, **lr) is None
            assert_same(p3, p2, what=f"{name} p after step {t}")
            assert_same(state3, state2, what=f"{name} state after step {t}")


@week("init")
@pytest.mark.parametrize("shape", [(7,), (10, 3), (16, 6, 5, 5)])
def test_init_matches_stage2(rng, shape):
    seed = int(rng.integers(0, 2**63))
    for name in ("xavier_uniform", "he_normal"):
        assert_same(getattr(s3, name)(shape, seed), getattr(s2, name)(shape, seed), what=name)


# ---- conv, pooling, normalization, dropout (week 13) -----------------------------------------

CONV_CASES = [  # x shape, w shape, stride, padding
    ((1, 1, 5, 5), (1, 1, 5, 5), 1, 0),
    ((2, 3, 9, 7), (4, 3, 3, 2), 2, 1),
    ((3, 2, 11, 10), (5, 2, 5, 3), 1, 2),
    ((2, 4, 8, 8), (3, 4, 3, 3), 3, 4),
    ((4, 6, 14, 14), (16, 6, 5, 5), 1, 0),
    ((23, 2, 9, 9), (3, 2, 3, 3), 1, 0),  # batch-last groups (C*R*S > K) of 20 and 3 images
    ((120, 3, 9, 7), (4, 3, 3, 2), 2, 1),  # batch-last groups of 51, 51 and 18 images
    ((3, 1, 30, 30), (16, 1, 3, 3), 1, 1),  # k > C*R*S: dweights computed transposed
]


@week("conv")
@pytest.mark.parametrize("x_shape, w_shape, stride, padding", CONV_CASES)
def test_im2col_and_col2im(rng, x_shape, w_shape, stride, padding):
    x = inputs.normal(rng, x_shape)
    kh, kw = w_shape[2:]
    cols = run_both("im2col", x, kh, kw, stride, padding)
    run_both("col2im", inputs.normal(rng, cols.shape), x_shape, kh, kw, stride, padding)


@week("conv")
@pytest.mark.parametrize("algorithm", ["im2col", "direct"])
@pytest.mark.parametrize("x_shape, w_shape, stride, padding", CONV_CASES)
def test_conv2d_forward_and_backward(rng, algorithm, x_shape, w_shape, stride, padding):
    x, w = inputs.normal(rng, x_shape), inputs.normal(rng, w_shape)
    b = inputs.normal(rng, w_shape[:1])
    y = s2.conv2d_forward(x, w, b, stride, padding)
    assert_same(s3.conv2d_forward(x, w, b, stride, padding, algorithm=algorithm), y)
    dy = inputs.normal(rng, y.shape)
    expected = s2.conv2d_backward(x, w, dy, stride, padding)
    received = s3.conv2d_backward(x, w, dy, stride, padding, algorithm=algorithm)
    assert_same(received, expected, what=f"conv2d_backward ({algorithm})")


@week("conv")
def test_conv_algorithms_agree_on_a_fashion_cnn_layer(rng):
    x, w = inputs.normal(rng, (3, 64, 13, 13)), inputs.normal(rng, (128, 64, 3, 3))
    b = inputs.normal(rng, (128,))
    direct = s3.conv2d_forward(x, w, b, algorithm="direct")
    assert_same(s3.conv2d_forward(x, w, b), direct, what="im2col vs direct")
    dy = inputs.normal(rng, direct.shape)
    direct_grads = s3.conv2d_backward(x, w, dy, algorithm="direct")
    assert_same(s3.conv2d_backward(x, w, dy), direct_grads, what="im2col vs direct backward")


@week("pooling")
@pytest.mark.parametrize(
    "x_shape, k, stride",
    [((1, 1, 2, 2), 2, 2), ((2, 3, 9, 8), 3, 2), ((2, 2, 7, 7), 3, 1), ((3, 4, 28, 28), 2, 2)],
)
def test_pooling(rng, x_shape, k, stride):
    x = inputs.distinct(rng, x_shape)
    y, argmax = run_both("maxpool2d_forward", x, k, stride)
    assert argmax.dtype == np.int64
    dy = inputs.normal(rng, y.shape)
    run_both("maxpool2d_backward", dy, argmax, x_shape, k, stride)
    run_both("avgpool2d_forward", x, k, stride)
    run_both("avgpool2d_backward", dy, x_shape, k, stride)


@week("pooling")
def test_maxpool_ties_pick_the_first_in_window_order():
    x = np.ones((1, 1, 3, 3), np.float32)
    _, argmax = s3.maxpool2d_forward(x, 2, 1)
    assert argmax.ravel().tolist() == [0, 1, 3, 4]


@week("pooling")
def test_maxpool_lets_the_first_nan_win_as_stage2(rng):
    x = inputs.distinct(rng, (2, 3, 6, 6))
    x[0, 0, 0, 1] = x[0, 0, 1, 0] = x[1, 2, 5, 5] = np.nan
    y, argmax = run_both("maxpool2d_forward", x, 2, 2)
    assert np.isnan(y[0, 0, 0, 0]) and argmax[0, 0, 0, 0] == 1


@week("normalization")
@pytest.mark.parametrize("shape", [(2, 1), (9, 5), (1, 3, 4, 5), (8, 16, 7, 7)])
@pytest.mark.parametrize("training", [True, False])
def test_batchnorm(rng, shape, training):
    c = shape[1]
    x = inputs.normal(rng, shape, 2.0, 0.5)
    gamma, beta = inputs.normal(rng, (c,)), inputs.normal(rng, (c,))
    running_mean = inputs.normal(rng, (c,))
    running_var = inputs.uniform(rng, (c,), 0.5, 2.0)
    y, saved = run_both("batchnorm_forward", x, gamma, beta, running_mean, running_var, training)
    run_both("batchnorm_backward", inputs.normal(rng, shape), x, gamma, saved)


@week("regularization")
@pytest.mark.parametrize("p", [0.0, 0.3, 0.9])
@pytest.mark.parametrize("shape", [(1,), (7, 9), (2, 3, 200, 201)])
def test_dropout_draws_stage2s_mask(rng, p, shape):
    x = inputs.normal(rng, shape)
    seed = int(rng.integers(0, 2**64, dtype=np.uint64))
    y, mask = run_both("dropout_forward", x, p, seed)
    np.testing.assert_array_equal(mask, s2.dropout_forward(x, p, seed)[1])
    run_both("dropout_backward", inputs.normal(rng, shape), mask, p)


# ---- the wrappers ---------------------------------------------------------------------------


def test_non_contiguous_and_reversed_inputs_give_the_contiguous_result(rng):
    x = inputs.normal(rng, (6, 3, 10, 12))
    w = inputs.normal(rng, (4, 3, 3, 3))
    b = inputs.normal(rng, (4,))
    expected = s3.conv2d_forward(x, w, b, 1, 1)
    strided = np.asfortranarray(x)
    reversed_batch = x[::-1].copy()[::-1]  # a negative-stride view holding x's values
    for variant in (strided, reversed_batch):
        assert not variant.flags.c_contiguous
        np.testing.assert_array_equal(s3.conv2d_forward(variant, w, b, 1, 1), expected)
    a = inputs.normal(rng, (40, 30))
    np.testing.assert_array_equal(s3.matmul(a.T, a), s3.matmul(a.T.copy(), a))


def test_inputs_are_never_modified(rng):
    x, w = inputs.normal(rng, (2, 3, 8, 8)), inputs.normal(rng, (4, 3, 3, 3))
    dy = inputs.normal(rng, (2, 4, 6, 6))
    before = [x.copy(), w.copy(), dy.copy()]
    s3.conv2d_backward(x, w, dy)
    for after, original in zip((x, w, dy), before, strict=True):
        np.testing.assert_array_equal(after, original)


def test_results_do_not_depend_on_the_thread_count(rng):
    x, w = inputs.normal(rng, (37, 3, 12, 12)), inputs.normal(rng, (8, 3, 3, 3))
    b, dy = inputs.normal(rng, (8,)), inputs.normal(rng, (37, 8, 10, 10))
    a = inputs.normal(rng, (2048, 2049))  # past the size where elementwise ops use threads

    def results():
        return (
            *s3.conv2d_backward(x, w, dy),
            s3.conv2d_forward(x, w, b),
            s3.sum_rows(a),
            s3.relu(a),
        )

    threads = s3.get_num_threads()
    try:
        s3.set_num_threads(1)
        single = results()
        s3.set_num_threads(2)
        assert s3.get_num_threads() == 2
        double = results()
    finally:
        s3.set_num_threads(0)
    # each element is computed in the same order on any number of threads: equal bit for bit
    for got, want in zip(double, single, strict=True):
        np.testing.assert_array_equal(got, want)
    assert s3.get_num_threads() == threads


def test_tier_interface():
    assert s3.NAME == "c"
    assert s3.available() == (True, "")
    a = s3.from_numpy(np.arange(6, dtype=np.float64).reshape(2, 3).T)
    assert a.dtype == np.float32 and a.flags.c_contiguous and a.shape == (3, 2)
    labels = s3.from_numpy(np.array([1, 2], dtype=np.uint8))
    assert labels.dtype == np.int64
    assert s3.from_numpy(np.float64(2.5)) == 2.5
    back = s3.to_numpy(a)
    np.testing.assert_array_equal(back, a)
    assert back is not a
    assert s3.synchronize() is None


def test_an_unbuilt_extension_is_reported_not_raised(monkeypatch):
    monkeypatch.setattr(_native, "_extension_module", None)
    monkeypatch.setattr(_native, "_load", lambda: None)
    ok, reason = s3.available()
    assert not ok and "make build" in reason
    with pytest.raises(RuntimeError, match="make build"):
        s3.relu(np.ones(3, np.float32))


@pytest.mark.parametrize(
    "status, exception, message",
    [
        (_native.NOT_IMPLEMENTED, NotImplementedError,
         r"week 12, task relu: not implemented yet \(stage3_c/csrc/activations.c\)"),
        (_native.BAD_ARGUMENT, ValueError, "s2c_relu rejected its arguments"),
        (_native.OUT_OF_MEMORY, MemoryError, "out of memory"),
        (99, RuntimeError, "unknown status 99"),
    ],
)  # fmt: skip
def test_status_codes_become_exceptions(status, exception, message):
    with pytest.raises(exception, match=message):
        _native.check_status("s2c_relu", status)
    _native.check_status("s2c_relu", _native.OK)  # no exception


def test_a_stub_in_c_surfaces_as_not_implemented(monkeypatch):
    """What a learner sees when a stubbed C function returns S2C_NOT_IMPLEMENTED."""

    class StubbedLib:
        def __getattr__(self, name):
            return lambda *args: _native.NOT_IMPLEMENTED

    built = _native.extension()
    stubbed = types.SimpleNamespace(ffi=built.ffi, lib=StubbedLib())
    monkeypatch.setattr(_native, "_extension_module", stubbed)
    x = np.ones((2, 1, 4, 4), np.float32)
    with pytest.raises(NotImplementedError, match=r"week 13, task maxpool2d_forward"):
        s3.maxpool2d_forward(x, 2, 2)
    with pytest.raises(NotImplementedError, match=r"week 12, task adam_step"):
        p = np.ones(3, np.float32)
        s3.adam_step(p, p.copy(), np.zeros(3, np.float32), np.zeros(3, np.float32), 1, 0.1)


def test_status_codes_match_the_header():
    header = (CSRC / "s2c.h").read_text()
    for name, value in [("OK", 0), ("NOT_IMPLEMENTED", 1), ("BAD_ARGUMENT", 2),
                        ("OUT_OF_MEMORY", 3)]:  # fmt: skip
        assert re.search(rf"S2C_{name} = {value}\b", header)
        assert getattr(_native, name) == value == getattr(_native.extension().lib, f"S2C_{name}")


def exercise_regions():
    """{C function: (week, task, file)} read from the markers in csrc/: the region inside the
    body of each public function (one declared in a header)."""
    public = set()
    for header in ("s2c.h", "matmul.h"):
        public |= set(re.findall(r"^int (s2c_\w+)\(", (CSRC / header).read_text(), re.M))
    found = {}
    for source in sorted(CSRC.glob("*.c")):
        text = source.read_text()
        for match in re.finditer(r"^int (s2c_\w+)\([^)]*\)\s*\{(.*?)^\}", text, re.M | re.S):
            name, body = match.groups()
            marker = re.search(r"BEGIN SOLUTION week (\d+), task (\w+)", body)
            if name in public and marker:
                found[name] = (int(marker[1]), marker[2], source.name)
    return found


def test_the_exercise_table_matches_the_markers_in_the_c_sources():
    assert exercise_regions() == _native.EXERCISES


def test_every_public_c_function_is_an_exercise_of_weeks_11_to_13_19_or_22():
    regions = exercise_regions()
    weeks = {week for week, _, _ in regions.values()}
    assert weeks == {11, 12, 13, 19, 22}
    header = (CSRC / "s2c.h").read_text() + (CSRC / "matmul.h").read_text()
    given = ("s2c_get_num_threads", "s2c_simd_width", "s2c_int8_kernel_supported",
             "s2c_int8_best_kernel", "s2c_int8_gemm_rung_status")  # fmt: skip
    for name in re.findall(r"^int (s2c_\w+)\(", header, re.M):
        if name not in given:
            assert name in regions, f"{name} has no solution region"

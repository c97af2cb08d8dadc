"""Every op of every tier against PyTorch, the outside oracle (skipped without torch).

Inputs are fresh float32 random numbers (grader/inputs.py), so every tier receives the same
values; PyTorch computes the reference in float64 from them, every backward through autograd
with a random upstream gradient. Shapes are awkward on purpose: batch 1, odd sizes, sizes that are
not multiples of any tile, strided and padded convolutions, overlapping pooling windows, logits of
magnitude 1e4. Stage 1 (Python floats) gets smaller shapes, as it is slow, and a tighter tolerance.
Each test is marked with the week that teaches its ops in each tier (`pytest -m week08`).
"""

import math
import secrets

import numpy as np
import pytest

from contract import WEEK_EXCEPTIONS, WEEKS
from grader import inputs

torch = pytest.importorskip("torch")
F = torch.nn.functional

pytestmark = pytest.mark.oracle

STAGE_OF_TIER = {"python": 1, "numpy": 2, "c": 3, "numba": 4, "nvcc": 4}
# |received - expected| <= atol + rtol * |expected|: float32 tiers round each step to float32
# (eps 6e-8) and sum in float32; stage 1 differs from PyTorch's float64 by summation order only.
FLOAT32_TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
FLOAT64_TOLERANCE = {"rtol": 1e-10, "atol": 1e-12}


def on_every_tier(group, op=None):
    """Parametrize the `tier` fixture over every tier, each marked with the week of `group` there.

    `op` names an op the contract teaches in another week than its group (numba's matmul).
    """

    def week(stage):
        return WEEK_EXCEPTIONS.get((stage, op), WEEKS[stage][group])

    return pytest.mark.parametrize(
        "tier",
        [
            pytest.param(name, marks=getattr(pytest.mark, f"week{week(stage):02d}"))
            for name, stage in STAGE_OF_TIER.items()
        ],
        indirect=True,
    )



def small(tier, python_value, value):
    """`python_value` for stage 1 and for stage 4 on numba's CUDA simulator (pure Python, and the
    simulator's one Python thread per CUDA thread, are slow), `value` for the others."""
    slow = tier.NAME == "python" or getattr(tier, "SIMULATOR", False)
    return python_value if slow else value


def t64(array, grad=False):
    """A float64 tensor holding `array`'s values (float32 inputs convert exactly)."""
    return torch.tensor(np.asarray(array, dtype=np.float64), requires_grad=grad)


def as_array(tensor):
    """A tensor's values as a float64 NumPy array."""
    return tensor.detach().numpy().astype(np.float64)


def vjp(output, upstream, *wrt):
    """Autograd: the gradients of sum(output * upstream) w.r.t. the tensors `wrt`."""
    return [as_array(g) for g in torch.autograd.grad(output, wrt, t64(upstream))]


def assert_close(tier, received, expected, what, sums=False):
    """`received` (native, or a Python float) matches `expected` within the tier's tolerance.

    The dtype must be the tier's float type, the shape the reference's, a NumPy result
    C-contiguous, and NaN never passes. `sums`: every element is a long sum of products (matmul,
    linear, conv), whose float32 rounding error scales with the size of its terms, not with the
    sum, which cancellation can make small (a conv dw of 0.02 among values of 40 is off by 1e-5 in
    any summation order); the absolute tolerance then scales with the result's largest element.
    """
    if tier.NAME == "python":
        tolerance, dtype = dict(FLOAT64_TOLERANCE), np.float64
    else:
        tolerance, dtype = dict(FLOAT32_TOLERANCE), np.float32
    expected = np.asarray(expected, dtype=np.float64)
    if sums and expected.size:
        tolerance["atol"] *= max(1.0, float(np.max(np.abs(expected))))
    if isinstance(received, float):  # a loss
        got = np.float64(received)
    else:
        if isinstance(received, np.ndarray):  # stages 2 and 3 return C-contiguous arrays
            assert received.flags.c_contiguous, f"{what}: the result is not C-contiguous"
        got = np.asarray(tier.to_numpy(received))
        assert got.dtype == dtype, f"{what}: dtype {got.dtype}, expected {np.dtype(dtype)}"
    assert got.shape == expected.shape, f"{what}: shape {got.shape}, expected {expected.shape}"
    np.testing.assert_allclose(got, expected, equal_nan=False, err_msg=what, **tolerance)


def assert_integers_equal(tier, received, expected, what):
    """Native integers (argmax) equal `expected` exactly."""
    got = np.asarray(tier.to_numpy(received))
    assert got.dtype.kind in "iu", f"{what}: dtype {got.dtype}, expected integers"
    np.testing.assert_array_equal(got, np.asarray(expected), err_msg=what)


# --- linear algebra ---------------------------------------------------------------------------


@on_every_tier("linear algebra", op="matmul")
def test_matmul(tier, rng):
    for n, k, m in small(tier, [(1, 1, 1), (1, 7, 3), (5, 9, 4)], [(1, 1, 1), (1, 17, 5),
                                                                 (37, 53, 29), (65, 130, 33)]):
        a, b = inputs.normal(rng, (n, k)), inputs.normal(rng, (k, m))
        got = tier.matmul(tier.from_numpy(a), tier.from_numpy(b))
        assert_close(tier, got, as_array(t64(a) @ t64(b)), f"matmul {n}x{k}x{m}", sums=True)


@on_every_tier("linear algebra")
def test_transpose_and_sum_rows(tier, rng):
    for shape in [(1, 1), (1, 5), (13, 7)]:
        x = inputs.normal(rng, shape)
        assert_close(tier, tier.transpose(tier.from_numpy(x)), as_array(t64(x).T), "transpose")
        assert_close(tier, tier.sum_rows(tier.from_numpy(x)), as_array(t64(x).sum(0)), "sum_rows")


@on_every_tier("linear algebra")
@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4, 5)])
@pytest.mark.parametrize("row", [False, True], ids=["same-shape", "one-row"])
def test_add_mul_scale(tier, rng, shape, row):
    a = inputs.normal(rng, shape)
    b = inputs.normal(rng, shape[-1:] if row else shape)
    s = inputs.real(rng, -3.0, 3.0)
    native_a, native_b = tier.from_numpy(a), tier.from_numpy(b)
    assert_close(tier, tier.add(native_a, native_b), as_array(t64(a) + t64(b)), "add")
    assert_close(tier, tier.mul(native_a, native_b), as_array(t64(a) * t64(b)), "mul")
    assert_close(tier, tier.scale(native_a, s), as_array(s * t64(a)), "scale")


# --- dense ------------------------------------------------------------------------------------


@on_every_tier("dense")
def test_linear_forward_and_backward(tier, rng):
    for n, i, o in small(tier, [(1, 3, 2), (4, 5, 3)], [(1, 5, 3), (37, 29, 13), (64, 100, 10)]):
        x, w, b = inputs.normal(rng, (n, i)), inputs.normal(rng, (o, i)), inputs.normal(rng, o)
        dy = inputs.normal(rng, (n, o))
        tx, tw, tb = t64(x, True), t64(w, True), t64(b, True)
        y = F.linear(tx, tw, tb)
        native_x, native_w = tier.from_numpy(x), tier.from_numpy(w)
        got = tier.linear_forward(native_x, native_w, tier.from_numpy(b))
        assert_close(tier, got, as_array(y), "linear_forward y", sums=True)
        grads = tier.linear_backward(native_x, native_w, tier.from_numpy(dy))
        for name, received, expected in zip("dx dw db".split(), grads, vjp(y, dy, tx, tw, tb),
                                            strict=True):
            assert_close(tier, received, expected, f"linear_backward {name}", sums=True)


# --- activations ------------------------------------------------------------------------------

ELEMENTWISE = {  # name: (torch function, whether the backward takes the forward's output)
    "relu": (torch.relu, False),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.1), False),
    "sigmoid": (torch.sigmoid, True),
    "tanh": (torch.tanh, True),
}


@on_every_tier("activations")
@pytest.mark.parametrize("name", list(ELEMENTWISE))
@pytest.mark.parametrize("scale", [1.0, 30.0], ids=["scale1", "scale30"])
def test_elementwise_activation_and_backward(tier, rng, name, scale):
    function, takes_output = ELEMENTWISE[name]
    shape = small(tier, (2, 3, 5), (3, 7, 5, 11))
    x = inputs.away_from_zero(rng, shape, scale)  # no input on relu's kink
    dy = inputs.normal(rng, shape)
    extra = (0.1,) if name == "leaky_relu" else ()
    tx = t64(x, True)
    y = function(tx)
    got = getattr(tier, name)(tier.from_numpy(x), *extra)
    assert_close(tier, got, as_array(y), name)
    # The backward gets the reference output in float64: stage 1 keeps all its digits.
    first = as_array(y) if takes_output else x
    got = getattr(tier, f"{name}_backward")(tier.from_numpy(first), tier.from_numpy(dy), *extra)
    assert_close(tier, got, vjp(y, dy, tx)[0], f"{name}_backward")


@on_every_tier("softmax")
@pytest.mark.parametrize("scale", [1.0, 1e4], ids=["scale1", "scale1e4"])
def test_softmax_log_softmax_and_backward(tier, rng, scale):
    for n, c in small(tier, [(1, 4), (3, 5)], [(1, 10), (7, 13), (64, 10)]):
        x = inputs.normal(rng, (n, c), scale)
        dy = inputs.normal(rng, (n, c))
        for name, function in [("softmax", F.softmax), ("log_softmax", F.log_softmax)]:
            tx = t64(x, True)
            y = function(tx, dim=1)
            assert_close(tier, getattr(tier, name)(tier.from_numpy(x)), as_array(y), name)
            got = getattr(tier, f"{name}_backward")(tier.from_numpy(as_array(y)),
                                                    tier.from_numpy(dy))
            assert_close(tier, got, vjp(y, dy, tx)[0], f"{name}_backward, scale {scale}")


# --- losses -----------------------------------------------------------------------------------


def check_loss(tier, name, reference, first, *rest):
    """The tier's `name` and `name`_backward on (first, *rest) against torch and autograd.

    `rest` are NumPy arrays or scalars, in the op's argument order; `reference(tensor, *rest)`
    computes the loss from a float64 tensor holding `first`.
    """
    tensor = t64(first, True)
    loss = reference(tensor, *rest)
    native = [tier.from_numpy(a) if isinstance(a, np.ndarray) else a for a in (first, *rest)]
    value = getattr(tier, name)(*native)
    # A Python float, or on a GPU a device value that float() reads (CONTRACT.md)
    on_device = hasattr(value, "__cuda_array_interface__") and hasattr(value, "__float__")
    assert isinstance(value, float) or on_device, f"{name} returned {type(value).__name__}"
    assert_close(tier, float(value), loss.item(), name)
    (expected,) = torch.autograd.grad(loss, tensor)
    assert_close(tier, getattr(tier, f"{name}_backward")(*native), as_array(expected),
                 f"{name}_backward")


@on_every_tier("losses")
def test_mse_loss(tier, rng):
    for shape in [(1,), (5, 7), small(tier, (2, 3, 4), (16, 3, 9, 9))]:
        pred, target = inputs.normal(rng, shape), inputs.normal(rng, shape)
        check_loss(tier, "mse_loss", lambda p, t: F.mse_loss(p, t64(t)), pred, target)


@on_every_tier("losses")
@pytest.mark.parametrize("scale", [1.0, 1e4], ids=["scale1", "scale1e4"])
def test_cross_entropy_loss(tier, rng, scale):
    for n, c in small(tier, [(1, 3), (4, 5)], [(1, 10), (37, 13), (64, 10)]):
        logits, labels = inputs.normal(rng, (n, c), scale), inputs.labels(rng, n, c)
        check_loss(tier, "cross_entropy_loss",
                   lambda z, y: F.cross_entropy(z, torch.from_numpy(y)), logits, labels)


@on_every_tier("losses")
@pytest.mark.parametrize("scale", [1.0, 50.0], ids=["scale1", "scale50"])
def test_bce_with_logits_loss(tier, rng, scale):
    for shape in [(1,), (7, 3), small(tier, (2, 3, 4), (64, 10))]:
        logits, targets = inputs.normal(rng, shape, scale), inputs.uniform(rng, shape, 0.0, 1.0)
        check_loss(tier, "bce_with_logits_loss",
                   lambda z, t: F.binary_cross_entropy_with_logits(z, t64(t)), logits, targets)


def torch_hinge(scores, labels, margin):
    """The multiclass SVM loss in torch ops: the mean over rows of the wrong classes' hinges."""
    labels = torch.from_numpy(labels)
    correct = scores.gather(1, labels[:, None])
    wrong = 1.0 - F.one_hot(labels, scores.shape[1]).double()
    return (torch.clamp(scores - correct + margin, min=0.0) * wrong).sum(dim=1).mean()


@on_every_tier("losses")
@pytest.mark.parametrize("margin", [1.0, 0.5])
def test_hinge_loss(tier, rng, margin):
    for n, c in small(tier, [(1, 3), (4, 5)], [(1, 10), (37, 13)]):
        labels = inputs.labels(rng, n, c)
        scores = inputs.hinge_scores(rng, labels, c, margin)  # no margin on the kink
        check_loss(tier, "hinge_loss", torch_hinge, scores, labels, margin)


# --- convolution ------------------------------------------------------------------------------

# (N, C, H, W, kh, kw, stride, padding): batch 1, odd and non-square sizes, stride 2 + padding 1
CONV_CASES_PYTHON = [(1, 1, 4, 4, 3, 3, 1, 0), (2, 2, 5, 6, 3, 2, 2, 1), (1, 3, 5, 5, 1, 1, 1, 0)]
CONV_CASES = [
    (1, 1, 5, 5, 3, 3, 1, 0),
    (2, 3, 9, 7, 3, 3, 2, 1),
    (3, 5, 11, 13, 5, 3, 3, 2),
    (4, 6, 13, 13, 3, 3, 1, 1),
    (2, 7, 8, 9, 1, 1, 1, 0),
]


@on_every_tier("conv")
def test_im2col_is_unfold_and_col2im_is_fold(tier, rng):
    for case in small(tier, CONV_CASES_PYTHON, CONV_CASES):
        n, c, h, w, kh, kw, stride, padding = case
        x = inputs.normal(rng, (n, c, h, w))
        cols = as_array(F.unfold(t64(x), (kh, kw), padding=padding, stride=stride))
        got = tier.im2col(tier.from_numpy(x), kh, kw, stride, padding)
        assert_close(tier, got, cols, f"im2col {case}")
        patches = inputs.normal(rng, cols.shape)
        expected = F.fold(t64(patches), (h, w), (kh, kw), padding=padding, stride=stride)
        got = tier.col2im(tier.from_numpy(patches), (n, c, h, w), kh, kw, stride, padding)
        assert_close(tier, got, as_array(expected), f"col2im {case}")


@on_every_tier("conv")
def test_conv2d_forward_and_backward(tier, rng):
    for case in small(tier, CONV_CASES_PYTHON, CONV_CASES):
        n, c, h, w, kh, kw, stride, padding = case
        k = small(tier, 3, 7)
        x, weight = inputs.normal(rng, (n, c, h, w)), inputs.normal(rng, (k, c, kh, kw))
        bias = inputs.normal(rng, k)
        tx, tw, tb = t64(x, True), t64(weight, True), t64(bias, True)
        y = F.conv2d(tx, tw, tb, stride=stride, padding=padding)
        dy = inputs.normal(rng, tuple(y.shape))
        native_x, native_w = tier.from_numpy(x), tier.from_numpy(weight)
        got = tier.conv2d_forward(native_x, native_w, tier.from_numpy(bias), stride, padding)
        assert_close(tier, got, as_array(y), f"conv2d_forward {case}", sums=True)
        grads = tier.conv2d_backward(native_x, native_w, tier.from_numpy(dy), stride, padding)
        for name, received, expected in zip("dx dw db".split(), grads, vjp(y, dy, tx, tw, tb),
                                            strict=True):
            assert_close(tier, received, expected, f"conv2d_backward {name} {case}", sums=True)


# --- pooling ----------------------------------------------------------------------------------

# (N, C, H, W, k, stride): odd sizes that leave a border, overlapping windows (stride < k)
POOL_CASES_PYTHON = [(1, 1, 4, 4, 2, 2), (2, 2, 5, 7, 3, 2), (1, 2, 5, 5, 3, 1)]
POOL_CASES = [(1, 1, 4, 4, 2, 2), (2, 3, 7, 9, 2, 2), (3, 4, 9, 11, 3, 2), (2, 5, 8, 7, 3, 1),
              (4, 3, 13, 13, 4, 3)]


@on_every_tier("pooling")
def test_maxpool2d_forward_indices_and_backward(tier, rng):
    for n, c, h, w, k, stride in small(tier, POOL_CASES_PYTHON, POOL_CASES):
        x = inputs.distinct(rng, (n, c, h, w))  # one clear winner per window
        tx = t64(x, True)
        y, indices = F.max_pool2d(tx, k, stride, return_indices=True)
        got, argmax = tier.maxpool2d_forward(tier.from_numpy(x), k, stride)
        case = f"{(n, c, h, w, k, stride)}"
        assert_close(tier, got, as_array(y), f"maxpool2d_forward y {case}")
        assert_integers_equal(tier, argmax, indices.numpy(), f"maxpool2d_forward argmax {case}")
        dy = inputs.normal(rng, tuple(y.shape))
        got = tier.maxpool2d_backward(tier.from_numpy(dy), tier.from_numpy(indices.numpy()),
                                      (n, c, h, w), k, stride)
        assert_close(tier, got, vjp(y, dy, tx)[0], f"maxpool2d_backward {case}")


@on_every_tier("pooling")
def test_maxpool2d_ties_pick_the_first_in_window_order(tier, rng):
    for n, c, h, w, k, stride in small(tier, POOL_CASES_PYTHON, POOL_CASES):
        x = inputs.with_ties(rng, (n, c, h, w))
        y, indices = F.max_pool2d(t64(x), k, stride, return_indices=True)
        got, argmax = tier.maxpool2d_forward(tier.from_numpy(x), k, stride)
        assert_close(tier, got, as_array(y), "maxpool2d_forward y with ties")
        assert_integers_equal(tier, argmax, indices.numpy(), "maxpool2d_forward argmax with ties")


@on_every_tier("pooling")
def test_avgpool2d_forward_and_backward(tier, rng):
    for n, c, h, w, k, stride in small(tier, POOL_CASES_PYTHON, POOL_CASES):
        x = inputs.normal(rng, (n, c, h, w))
        tx = t64(x, True)
        y = F.avg_pool2d(tx, k, stride)
        case = f"{(n, c, h, w, k, stride)}"
        assert_close(tier, tier.avgpool2d_forward(tier.from_numpy(x), k, stride), as_array(y),
                     f"avgpool2d_forward {case}")
        dy = inputs.normal(rng, tuple(y.shape))
        got = tier.avgpool2d_backward(tier.from_numpy(dy), (n, c, h, w), k, stride)
        assert_close(tier, got, vjp(y, dy, tx)[0], f"avgpool2d_backward {case}")


# --- normalization ----------------------------------------------------------------------------


def batchnorm_inputs(rng, shape):
    """x, gamma, beta, running_mean, running_var (positive) for a batchnorm over `shape`."""
    c = shape[1]
    return (inputs.normal(rng, shape, 2.0, 0.5), inputs.normal(rng, c), inputs.normal(rng, c),
            inputs.normal(rng, c), inputs.uniform(rng, c, 0.5, 2.0))


@on_every_tier("normalization")
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_batchnorm_forward_running_stats_and_backward(tier, rng, training):
    momentum, eps = 0.3, 1e-5
    for shape in small(tier, [(5, 3), (2, 3, 3, 4)], [(7, 5), (1, 4, 5, 6), (8, 6, 7, 9)]):
        x, gamma, beta, running_mean, running_var = batchnorm_inputs(rng, shape)
        axes = [0] + list(range(2, len(shape)))
        tx, tgamma, tbeta = t64(x, True), t64(gamma, True), t64(beta, True)
        torch_mean, torch_var = t64(running_mean), t64(running_var)  # updated in place by torch
        y = F.batch_norm(tx, torch_mean, torch_var, tgamma, tbeta, training, momentum, eps)
        if training:
            mean = as_array(tx.mean(dim=axes))
            var = as_array(tx.var(dim=axes, unbiased=False))
        else:
            mean, var = running_mean, running_var
        native_mean, native_var = tier.from_numpy(running_mean), tier.from_numpy(running_var)
        got, saved = tier.batchnorm_forward(tier.from_numpy(x), tier.from_numpy(gamma),
                                            tier.from_numpy(beta), native_mean, native_var,
                                            training, momentum, eps)
        case = f"{shape}, training={training}"
        assert_close(tier, got, as_array(y), f"batchnorm_forward y {case}")
        assert_close(tier, native_mean, as_array(torch_mean), f"running_mean {case}")
        assert_close(tier, native_var, as_array(torch_var), f"running_var {case}")
        assert_close(tier, saved[0], mean, f"saved mean {case}")
        assert_close(tier, saved[1], 1 / np.sqrt(np.asarray(var, np.float64) + eps),
                     f"saved invstd {case}")
        if training:  # the backward is the training-mode gradient
            dy = inputs.normal(rng, shape)
            grads = tier.batchnorm_backward(tier.from_numpy(dy), tier.from_numpy(x),
                                            tier.from_numpy(gamma), saved)
            for name, received, expected in zip("dx dgamma dbeta".split(), grads,
                                                vjp(y, dy, tx, tgamma, tbeta), strict=True):
                assert_close(tier, received, expected, f"batchnorm_backward {name} {case}")


# --- regularization ---------------------------------------------------------------------------


@on_every_tier("regularization")
@pytest.mark.parametrize("p", [0.0, 0.3, 0.8])
def test_dropout_forward_and_backward(tier, rng, p):
    # The mask itself is the shared random stream (tests/test_random_stream.py); here the scaling
    # and the gradient are checked against torch given that mask.
    shape = small(tier, (3, 4, 5), (16, 3, 11, 7))
    x, dy = inputs.normal(rng, shape), inputs.normal(rng, shape)
    y, mask = tier.dropout_forward(tier.from_numpy(x), p, inputs.seed(rng))
    kept = np.asarray(tier.to_numpy(mask), dtype=np.float64)
    assert set(np.unique(kept)) <= {0.0, 1.0}
    assert abs(kept.mean() - (1 - p)) < 5 * math.sqrt(p * (1 - p) / kept.size) + 1e-12
    tx = t64(x, True)
    expected = tx * t64(kept) / (1 - p)
    assert_close(tier, y, as_array(expected), f"dropout_forward p={p}")
    got = tier.dropout_backward(tier.from_numpy(dy), mask, p)
    assert_close(tier, got, vjp(expected, dy, tx)[0], f"dropout_backward p={p}")


# --- optimizers -------------------------------------------------------------------------------

OPTIMIZERS = {  # id: (tier op, its keyword arguments, torch.optim class, its keyword arguments)
    "sgd": ("sgd_step", {"lr": 0.1}, torch.optim.SGD, {"lr": 0.1}),
    "sgd-decay": ("sgd_step", {"lr": 0.1, "weight_decay": 0.05}, torch.optim.SGD,
                  {"lr": 0.1, "weight_decay": 0.05}),
    "momentum": ("momentum_step", {"lr": 0.05, "momentum": 0.9}, torch.optim.SGD,
                 {"lr": 0.05, "momentum": 0.9}),
    "nesterov-decay": ("momentum_step",
                       {"lr": 0.05, "momentum": 0.8, "nesterov": True, "weight_decay": 0.01},
                       torch.optim.SGD,
                       {"lr": 0.05, "momentum": 0.8, "nesterov": True, "weight_decay": 0.01}),
    "rmsprop": ("rmsprop_step", {"lr": 0.01, "alpha": 0.9, "eps": 1e-8, "weight_decay": 0.02},
                torch.optim.RMSprop, {"lr": 0.01, "alpha": 0.9, "eps": 1e-8, "weight_decay": 0.02}),
    "adam": ("adam_step", {"lr": 0.01, "beta1": 0.8, "beta2": 0.95, "eps": 1e-8},
             torch.optim.Adam, {"lr": 0.01, "betas": (0.8, 0.95), "eps": 1e-8}),
    "adam-decay": ("adam_step", {"lr": 0.01, "weight_decay": 0.1}, torch.optim.Adam,
                   {"lr": 0.01, "weight_decay": 0.1}),
}
STATE_NAMES = {"sgd_step": (), "momentum_step": ("v",), "rmsprop_step": ("s",),
               "adam_step": ("m", "v")}


@on_every_tier("optimizers")
@pytest.mark.parametrize("case", list(OPTIMIZERS))
def test_optimizer_three_steps_match_torch_optim(tier, rng, case):
    op, kwargs, optimizer_class, torch_kwargs = OPTIMIZERS[case]
    shape = small(tier, (3, 4), (7, 13))
    start = inputs.normal(rng, shape)
    param = torch.nn.Parameter(t64(start))
    optimizer = optimizer_class([param], **torch_kwargs)
    p = tier.from_numpy(start)
    states = [tier.from_numpy(np.zeros(shape, np.float32)) for _ in STATE_NAMES[op]]
    for step in range(1, 4):
        g = inputs.normal(rng, shape)
        param.grad = t64(g)
        optimizer.step()
        step_number = (step,) if op == "adam_step" else ()
        assert getattr(tier, op)(p, tier.from_numpy(g), *states, *step_number, **kwargs) is None
        assert_close(tier, p, as_array(param), f"{case}: p after step {step}")


# --- initialization ---------------------------------------------------------------------------


@on_every_tier("init")
@pytest.mark.parametrize("shape", [(300, 200), (64, 32, 3, 3)])
def test_init_spread_matches_torch_init(tier, shape):
    # The values themselves are the shared stream (tests/test_random_stream.py); here the fans
    # are PyTorch's: the spread must match torch.nn.init's on the same shape.
    seed = secrets.randbits(31)
    empty = torch.empty(shape, dtype=torch.float64)
    xavier = np.asarray(tier.to_numpy(tier.xavier_uniform(shape, seed)), np.float64)
    bound = math.sqrt(3) * torch.nn.init.xavier_uniform_(empty).std().item()
    assert np.abs(xavier).max() <= bound * 1.02
    assert xavier.std() == pytest.approx(bound / math.sqrt(3), rel=0.05)
    he = np.asarray(tier.to_numpy(tier.he_normal(shape, seed)), np.float64)
    torch_std = torch.nn.init.kaiming_normal_(empty, nonlinearity="relu").std().item()
    assert he.std() == pytest.approx(torch_std, rel=0.05)
    assert abs(he.mean()) < 5 * torch_std / math.sqrt(he.size)


# --- attention --------------------------------------------------------------------------------


@on_every_tier("attention")
@pytest.mark.parametrize("eps", [1e-5, 0.5])
def test_layernorm_forward_saved_statistics_and_backward(tier, rng, eps):
    for shape in small(tier, [(1, 7), (2, 3, 5)], [(1, 7), (5, 33), (2, 9, 65), (3, 1)]):
        d = shape[-1]
        x = inputs.normal(rng, shape, 2.0, 0.5)
        gamma, beta = inputs.normal(rng, d), inputs.normal(rng, d)
        tx, tgamma, tbeta = t64(x, True), t64(gamma, True), t64(beta, True)
        y = F.layer_norm(tx, (d,), tgamma, tbeta, eps)
        got, saved = tier.layernorm(tier.from_numpy(x), tier.from_numpy(gamma),
                                    tier.from_numpy(beta), eps)  # fmt: skip
        case = f"{shape}, eps={eps}"
        assert_close(tier, got, as_array(y), f"layernorm y {case}")
        assert_close(tier, saved[0], as_array(tx.mean(-1)), f"layernorm saved mean {case}")
        invstd = 1 / torch.sqrt(tx.var(-1, unbiased=False) + eps)
        assert_close(tier, saved[1], as_array(invstd), f"layernorm saved invstd {case}")
        dy = inputs.normal(rng, shape)
        grads = tier.layernorm_backward(tier.from_numpy(dy), tier.from_numpy(x),
                                        tier.from_numpy(gamma), saved)  # fmt: skip
        for name, received, expected in zip("dx dgamma dbeta".split(), grads,
                                            vjp(y, dy, tx, tgamma, tbeta), strict=True):
            assert_close(tier, received, expected, f"layernorm_backward {name} {case}")


@on_every_tier("attention")
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("scale", [1.0, 30.0], ids=["scale1", "scale30"])
def test_gelu_both_forms_and_backward(tier, rng, approximate, scale):
    shape = small(tier, (3, 7), (5, 11, 13))
    x, dy = inputs.normal(rng, shape, scale), inputs.normal(rng, shape)
    tx = t64(x, True)
    y = F.gelu(tx, approximate=approximate)
    case = f"{shape}, approximate={approximate}, scale {scale}"
    assert_close(tier, tier.gelu(tier.from_numpy(x), approximate), as_array(y), f"gelu {case}")
    got = tier.gelu_backward(tier.from_numpy(x), tier.from_numpy(dy), approximate)
    assert_close(tier, got, vjp(y, dy, tx)[0], f"gelu_backward {case}")


def torch_lse(q, k, causal, scale):
    """log(sum_j exp(S_ij)) of the scores scaled_dot_product_attention softmaxes (it returns no
    lse): scale * q @ k^T, keys j > i at -inf with causal."""
    s = scale * q @ k.transpose(-1, -2)
    if causal:
        s = s.masked_fill(~torch.ones(s.shape[-2:], dtype=torch.bool).tril(), -torch.inf)
    return torch.logsumexp(s, -1)


@on_every_tier("attention")
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("scale", [None, 0.35], ids=["default-scale", "scale0.35"])
def test_attention_forward_lse_and_backward(tier, rng, causal, scale):
    """y against F.scaled_dot_product_attention, lse against torch.logsumexp of its scores, and
    dq, dk, dv against autograd through it; N != M both ways, D off every power of two."""
    sizes = small(tier, [(1, 2, 3, 5, 4), (2, 1, 6, 2, 3)],
                  [(2, 3, 17, 33, 24), (1, 2, 70, 9, 5), (1, 1, 130, 129, 64)])  # fmt: skip
    for b, h, n, m, d in sizes:
        q, k, v = (inputs.normal(rng, (b, h, length, d)) for length in (n, m, m))
        dy = inputs.normal(rng, (b, h, n, d))
        tq, tk, tv = t64(q, True), t64(k, True), t64(v, True)
        y = F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal, scale=scale)
        got, (lse,) = tier.attention(*map(tier.from_numpy, (q, k, v)), causal, scale)
        case = f"[{b}, {h}, {n}, {m}, {d}], causal={causal}, scale={scale}"
        assert_close(tier, got, as_array(y), f"attention y {case}")
        lse_scale = 1 / d**0.5 if scale is None else scale
        assert_close(tier, lse, as_array(torch_lse(tq, tk, causal, lse_scale)),
                     f"attention lse {case}")  # fmt: skip
        grads = tier.attention_backward(*map(tier.from_numpy, (dy, q, k, v)), got, (lse,),
                                        causal, scale)  # fmt: skip
        for name, received, expected in zip(("dq", "dk", "dv"), grads, vjp(y, dy, tq, tk, tv),
                                            strict=True):  # fmt: skip
            assert_close(tier, received, expected, f"attention_backward {name} {case}", sums=True)

"""Stage 1 (pure Python, nested lists): what is specific to nested lists, then every op against
PyTorch in float64 (skipped without torch), on fresh random inputs and small awkward shapes:
batch 1, odd sizes, strided and padded convolutions, overlapping pooling windows, every backward
against autograd.
"""

import copy
import inspect
import math
import re

import numpy as np
import pytest

import stage1_python as s1
from contract import week_of
from grader.ops import OPS

# Which week teaches which op in stage 1: the contract's table (contract/CONTRACT.md).
WEEK_OF_OP = {name: week_of(1, name) for name in OPS}
week01, week02, week03 = pytest.mark.week01, pytest.mark.week02, pytest.mark.week03
week04, week05, week06 = pytest.mark.week04, pytest.mark.week05, pytest.mark.week06
oracle = pytest.mark.oracle



@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def nested(array):
    """A float64 NumPy array as the tier's nested lists."""
    return s1.from_numpy(np.asarray(array, dtype=np.float64))


def assert_matches(actual, expected):
    """A stage-1 result (nested lists or a float) equals `expected` to float64 rounding.

    The shape must match and the result must hold floats; NaN and Inf never pass.
    """
    actual = s1.to_numpy(actual)
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.dtype == np.float64, f"expected floats, got {actual.dtype}"
    assert actual.shape == expected.shape
    assert np.all(np.isfinite(actual)), "non-finite values in the result"
    np.testing.assert_allclose(actual, expected, rtol=1e-10, atol=1e-12, equal_nan=False)


def autograd(torch, fn, arrays, dy=None):
    """fn's output on float64 tensors and the gradients of sum(output * dy) w.r.t. each array
    (of the output itself when it is a scalar loss and dy is None)."""
    inputs = [torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in arrays]
    out = fn(*inputs)
    out.backward(None if dy is None else torch.tensor(dy))
    return out.detach().numpy(), [tensor.grad.numpy() for tensor in inputs]


# ------------------------------------------------------------------------------------------------
# Nested lists: the tier interface, argument checks, in-place semantics, solution regions
# ------------------------------------------------------------------------------------------------


@week01
def test_the_tier_interface():
    assert s1.NAME == "python"
    assert s1.available() == (True, "")
    assert s1.synchronize() is None
    missing = [op for op in WEEK_OF_OP if not callable(getattr(s1, op, None))]
    assert missing == []


@week01
def test_from_numpy_and_to_numpy_round_trip(rng):
    floats = rng.standard_normal((2, 3, 4)).astype(np.float32)
    as_lists = s1.from_numpy(floats)
    assert isinstance(as_lists, list) and type(as_lists[1][2][3]) is float
    back = s1.to_numpy(as_lists)
    assert back.dtype == np.float64
    np.testing.assert_array_equal(back, floats.astype(np.float64))  # float32 -> float64 is exact

    labels = rng.integers(0, 10, size=7)
    as_ints = s1.from_numpy(labels)
    assert [type(label) for label in as_ints] == [int] * 7
    assert s1.to_numpy(as_ints).dtype == np.int64
    np.testing.assert_array_equal(s1.to_numpy(as_ints), labels)

    scalar = s1.from_numpy(np.float32(0.5) * np.ones(()))
    assert type(scalar) is float and scalar == 0.5
    assert s1.to_numpy(2.5).dtype == np.float64


@week01
def test_from_numpy_and_to_numpy_refuse_what_is_not_a_tensor():
    with pytest.raises(ValueError, match="from_numpy: a must be a float or integer array"):
        s1.from_numpy(np.array([True, False]))
    with pytest.raises(ValueError, match=r"to_numpy: x must be a rectangular nested list"):
        s1.to_numpy([[1.0, 2.0], [3.0]])


RAGGED_CALLS = [
    pytest.param(
        lambda: s1.matmul([[1.0, 2.0], [3.0]], [[1.0], [2.0]]),
        "matmul",
        "a",
        marks=week01,
        id="matmul",
    ),
    pytest.param(
        lambda: s1.add([[1.0, 2.0]], [[1.0, 2.0], [3.0, 4.0, 5.0]]),
        "add",
        "b",
        marks=week01,
        id="add",
    ),
    pytest.param(lambda: s1.relu([[[1.0], [2.0]], [[3.0]]]), "relu", "x", marks=week02, id="relu"),
    pytest.param(
        lambda: s1.softmax([[1.0, 2.0, 3.0], [1.0, 2.0]]),
        "softmax",
        "x",
        marks=week03,
        id="softmax",
    ),
    pytest.param(
        lambda: s1.conv2d_forward([[[[1.0, 2.0], [3.0]]]], [[[[1.0]]]], [0.0]),
        "conv2d_forward",
        "x",
        marks=week05,
        id="conv2d_forward",
    ),
    pytest.param(
        lambda: s1.sgd_step([[1.0], [2.0, 3.0]], [[1.0], [2.0]], 0.1),
        "sgd_step",
        "p",
        marks=week04,
        id="sgd_step",
    ),
]


@pytest.mark.parametrize(("call", "op", "argument"), RAGGED_CALLS)
def test_ragged_lists_are_refused(call, op, argument):
    with pytest.raises(ValueError, match=rf"^{op}: {argument} must be a rectangular nested list"):
        call()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        pytest.param(
            lambda: s1.relu([1.0, "2"]),
            r"relu: x must hold numbers, but x\[1\] is str",
            marks=week02,
            id="string",
        ),
        pytest.param(
            lambda: s1.relu([1.0, None]),
            r"relu: x must hold numbers, but x\[1\] is NoneType",
            marks=week02,
            id="none",
        ),
        pytest.param(
            lambda: s1.relu([True, 1.0]),
            r"relu: x must hold numbers, got bools mixed with numbers",
            marks=week02,
            id="bool",
        ),
        pytest.param(
            lambda: s1.relu((1.0, 2.0)),
            "relu: x must be an array, got tuple",
            marks=week02,
            id="tuple",
        ),
        pytest.param(
            lambda: s1.relu(1.0),
            "relu: x must be an array, got float",
            marks=week02,
            id="scalar",
        ),
        pytest.param(
            lambda: s1.relu([]),
            "relu: x must not have a zero-size dimension",
            marks=week02,
            id="empty",
        ),
        pytest.param(
            lambda: s1.transpose([[], []]),
            "transpose: a must not have a zero-size",
            marks=week01,
            id="empty-rows",
        ),
        pytest.param(
            lambda: s1.relu([[1.0], 2.0]),
            r"relu: x must .*x\[1\] is a float, not",
            marks=week02,
            id="mixed-depth",
        ),
    ],
)
def test_elements_must_be_numbers_and_dimensions_non_empty(call, message):
    # a wrong kind of element or object is a TypeError, a wrong layout a ValueError
    wrong_kind = "must be an array" in message or "numbers" in message
    with pytest.raises(TypeError if wrong_kind else ValueError, match=message):
        call()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        pytest.param(
            lambda: s1.conv2d_forward(
                s1.from_numpy(np.ones((1, 3, 5, 5))),
                s1.from_numpy(np.ones((8, 2, 3, 3))),
                [0.0] * 8,
            ),
            r"conv2d_forward: w must have shape [K, C=3, R, S] (C: x's channels), got [8, 2, 3, 3]",
            marks=week05,
            id="conv-channels",
        ),
        pytest.param(
            lambda: s1.matmul([[1.0, 2.0, 3.0]], [[1.0]] * 4),
            "matmul: b must have shape [K=3, M] (K: a's columns), got [4, 1]",
            marks=week01,
            id="matmul-inner",
        ),
        pytest.param(
            lambda: s1.linear_forward([[1.0, 2.0]], [[1.0, 2.0]], [0.0, 0.0]),
            "linear_forward: b must have shape [O=1] (O: w's rows), got [2]",
            marks=week02,
            id="bias",
        ),
        pytest.param(
            lambda: s1.add([[1.0, 2.0]], [1.0, 2.0, 3.0]),
            "add: b must have a's shape [1, 2] or be one row of length 2 (a's last dimension), "
            "got [3]",
            marks=week01,
            id="add-row",
        ),
        pytest.param(
            lambda: s1.maxpool2d_forward([[[1.0, 2.0]]], 1, 1),
            "maxpool2d_forward: x must have shape [N, C, H, W], got [1, 1, 2]",
            marks=week06,
            id="pool-rank",
        ),
        pytest.param(
            lambda: s1.batchnorm_forward([[[1.0, 2.0]]], [1.0], [0.0], [0.0], [1.0], True),
            r"batchnorm_forward: x must have shape [N, C] or [N, C, H, W], got [1, 1, 2]",
            marks=week06,
            id="batchnorm-rank",
        ),
    ],
)
def test_shape_errors_name_the_op_the_argument_and_the_expected_shape(call, message):
    with pytest.raises(ValueError) as raised:
        call()
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("call", "message"),
    [
        pytest.param(
            lambda: s1.cross_entropy_loss([[1.0, 2.0]], [2]),
            r"cross_entropy_loss: labels must hold class indices in \[0, C=2\), got 2",
            marks=week03,
            id="too-big",
        ),
        pytest.param(
            lambda: s1.hinge_loss([[1.0, 2.0]], [-1]),
            r"hinge_loss: labels must hold class indices in \[0, C=2\), got -1",
            marks=week03,
            id="negative",
        ),
        pytest.param(
            lambda: s1.cross_entropy_loss([[1.0, 2.0]], [1.0]),
            "labels must be an integer array, got float64",
            marks=week03,
            id="float",
        ),
        pytest.param(
            lambda: s1.cross_entropy_loss([[1.0, 2.0]], [True]),
            "labels must be an integer array, got bool",
            marks=week03,
            id="bool",
        ),
        pytest.param(
            lambda: s1.cross_entropy_loss([[1.0, 2.0]], [0, 1]),
            r"labels must have shape \[N=1\], got \[2\]",
            marks=week03,
            id="count",
        ),
        pytest.param(
            lambda: s1.maxpool2d_backward([[[[1.0]]]], [[[[4]]]], (1, 1, 2, 2), 2, 2),
            r"argmax must hold flat indices h\*W \+ w in \[0, H\*W=4\), got 4",
            marks=week06,
            id="argmax",
        ),
    ],
)
def test_labels_and_indices_must_be_ints_in_range(call, message):
    with pytest.raises(TypeError if "integer array" in message else ValueError, match=message):
        call()


@week03
def test_integer_labels_of_any_int_type_are_accepted():
    logits = [[1.0, 2.0, 0.5]]
    assert s1.cross_entropy_loss(logits, [np.int64(1)]) == s1.cross_entropy_loss(logits, [1])


X4 = [[[[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [3.0, -2.0, 1.0]]]]  # [1, 1, 3, 3]
SCALAR_ERRORS = [
    (
        lambda: s1.dropout_forward([1.0], 1.0, 0),
        r"p must be a finite number with 0 <= p < 1",
        week06,
    ),
    (lambda: s1.dropout_forward([1.0], -0.1, 0), r"0 <= p < 1, got -0.1", week06),
    (lambda: s1.dropout_backward([1.0], [1.0], math.nan), r"p must be a finite number", week06),
    (lambda: s1.dropout_forward([1.0], 0.5, -1), r"seed must be an int in \[0, ", week06),
    (lambda: s1.dropout_forward([1.0], 0.5, 1.0), r"seed must be an int", week06),
    (lambda: s1.maxpool2d_forward(X4, 0, 1), r"k must be an int in \[1, \d+\], got 0", week06),
    (lambda: s1.maxpool2d_forward(X4, 2.0, 1), r"k must be an int, got 2.0", week06),
    (lambda: s1.avgpool2d_forward(X4, 2, 0), r"stride must be an int in \[1, \d+\]", week06),
    (lambda: s1.avgpool2d_forward(X4, 4, 1), r"output height must be >= 1, got \(H - k\)", week06),
    (lambda: s1.im2col(X4, 2, 2, 1, -1), r"padding must be an int in \[0, \d+\], got -1", week05),
    (
        lambda: s1.conv2d_forward(X4, [[[[1.0] * 4] * 4]], [0.0]),
        r"output height must be >= 1, got \(H \+ 2\*padding - R\) // stride \+ 1",
        week05,
    ),
    (lambda: s1.conv2d_forward(X4, [[[[1.0] * 2] * 2]], [0.0], stride=0), "stride must be", week05),
    (
        lambda: s1.col2im([[[1.0]]], (1, 1, 2, 0), 1, 1, 1, 0),
        r"x_shape must be a tuple \[N, C, H, W\] of ints in \[1, 2147483647\]",
        week05,
    ),
    (
        lambda: s1.sgd_step([1.0], [1.0], math.inf),
        r"lr must be a finite number with 0 <= lr",
        week04,
    ),
    (lambda: s1.sgd_step([1.0], [1.0], 0.1, weight_decay=-1.0), r"weight_decay must be", week04),
    (lambda: s1.momentum_step([1.0], [1.0], [0.0], 0.1, math.nan), "momentum must be", week04),
    (
        lambda: s1.momentum_step([1.0], [1.0], [0.0], 0.1, 0.9, nesterov=1),
        "nesterov must be",
        week04,
    ),
    (
        lambda: s1.adam_step([1.0], [1.0], [0.0], [0.0], 0, 0.1),
        r"t must be an int in \[1, 9223372036854775807\], got 0",
        week04,
    ),
    (
        lambda: s1.adam_step([1.0], [1.0], [0.0], [0.0], 1, 0.1, beta1=1.0),
        r"0 <= beta1 < 1",
        week04,
    ),
    (lambda: s1.rmsprop_step([1.0], [1.0], [0.0], 0.1, eps=0.0), r"0 < eps", week04),
    (lambda: s1.xavier_uniform((3, 0), 1), r"shape must be a tuple of ints in \[1, ", week04),
    (lambda: s1.he_normal([], 1), r"shape must be a tuple of ints in \[1, ", week04),
    (lambda: s1.scale([1.0], math.nan), r"s must be a finite number, got nan", week01),
    (lambda: s1.leaky_relu([1.0], "0.1"), r"alpha must be a number, got '0.1'", week02),
    (lambda: s1.hinge_loss([[1.0, 2.0]], [0], margin=math.inf), "margin must be", week03),
    (
        lambda: s1.batchnorm_forward([[1.0]], [1.0], [0.0], [0.0], [1.0], True),
        r"more than one value per channel",
        week06,
    ),
    (
        lambda: s1.batchnorm_forward([[1.0], [2.0]], [1.0], [0.0], [0.0], [1.0], 1),
        "training must be True or False",
        week06,
    ),
    (
        lambda: s1.batchnorm_forward([[1.0], [2.0]], [1.0], [0.0], [0.0], [1.0], True, eps=0.0),
        r"0 < eps",
        week06,
    ),
    (
        lambda: s1.batchnorm_backward([[1.0], [2.0]], [[1.0], [2.0]], [1.0], ([0.0],)),
        r"saved must be the forward's pair \(mean, invstd\), got 1 items",
        week06,
    ),
]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        pytest.param(call, message, marks=mark, id=f"{i}")
        for i, (call, message, mark) in enumerate(SCALAR_ERRORS)
    ],
)
def test_scalar_arguments_out_of_range_are_refused(call, message):
    with pytest.raises((TypeError, ValueError), match=message) as raised:
        call()
    # CONTRACT.md, "Bad input": a wrong kind of argument is a TypeError, a wrong value ValueError
    wrong_kind = re.search(r"an int, got|must be a number|True or False", str(raised.value))
    assert isinstance(raised.value, TypeError if wrong_kind else ValueError), raised.value


@week01
def test_a_list_of_ints_is_an_int64_array_refused_as_data_as_in_every_tier():
    """A nested list's dtype is numpy.array's: all ints make int64 (refused where floats are
    expected, as an int64 array is in stages 2-4); one float makes the whole list float64."""
    with pytest.raises(TypeError, match="matmul: a must be a float array, got int64"):
        s1.matmul([[1, 2], [3, 4]], [[5.0], [6.0]])
    with pytest.raises(TypeError, match="relu: x must be a float array, got int64"):
        s1.relu([-2, 3])
    assert s1.matmul([[1, 2.0], [3, 4]], [[5, 6.0]][0:1] * 2) == [[15.0, 18.0], [35.0, 42.0]]
    assert s1.scale([2, 3.0], 0.5) == [1.0, 1.5]


# Every op on small inputs: used to prove that ops never modify (nor alias) their inputs.
def _small_calls():
    x2 = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]
    w2 = [[0.1, 0.2, -0.3], [0.4, -0.5, 0.6]]
    x4 = [[[[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [3.0, -2.0, 1.0]]]] * 2
    w4 = [[[[0.5, -0.25], [1.0, 0.75]]]]
    y, argmax = s1.maxpool2d_forward(x4, 2, 1)
    _, saved = s1.batchnorm_forward(x4, [1.5], [0.5], [0.0], [1.0], True)
    return [
        ("matmul", (x2, s1.transpose(w2))),
        ("transpose", (x2,)),
        ("add", (x2, [1.0, 2.0, 3.0])),
        ("mul", (x2, w2)),
        ("scale", (x2, 2.0)),
        ("sum_rows", (x2,)),
        ("linear_forward", (x2, w2, [0.5, -0.5])),
        ("linear_backward", (x2, w2, [[1.0, 2.0], [3.0, 4.0]])),
        ("relu", (x2,)),
        ("relu_backward", (x2, w2)),
        ("leaky_relu", (x2, 0.1)),
        ("leaky_relu_backward", (x2, w2, 0.1)),
        ("sigmoid", (x2,)),
        ("sigmoid_backward", (x2, w2)),
        ("tanh", (x2,)),
        ("tanh_backward", (x2, w2)),
        ("softmax", (x2,)),
        ("softmax_backward", (x2, w2)),
        ("log_softmax", (x2,)),
        ("log_softmax_backward", (x2, w2)),
        ("mse_loss", (x2, w2)),
        ("mse_loss_backward", (x2, w2)),
        ("cross_entropy_loss", (x2, [2, 0])),
        ("cross_entropy_loss_backward", (x2, [2, 0])),
        ("bce_with_logits_loss", (x2, [[0.0, 1.0, 0.5], [1.0, 0.0, 0.25]])),
        ("bce_with_logits_loss_backward", (x2, [[0.0, 1.0, 0.5], [1.0, 0.0, 0.25]])),
        ("hinge_loss", (x2, [1, 2])),
        ("hinge_loss_backward", (x2, [1, 2])),
        ("im2col", (x4, 2, 2, 1, 1)),
        ("col2im", (s1.im2col(x4, 2, 2, 1, 1), (2, 1, 3, 3), 2, 2, 1, 1)),
        ("conv2d_forward", (x4, w4, [0.5], 1, 1)),
        ("conv2d_backward", (x4, w4, s1.conv2d_forward(x4, w4, [0.5], 1, 1), 1, 1)),
        ("maxpool2d_forward", (x4, 2, 1)),
        ("maxpool2d_backward", (y, argmax, (2, 1, 3, 3), 2, 1)),
        ("avgpool2d_forward", (x4, 2, 1)),
        ("avgpool2d_backward", (y, (2, 1, 3, 3), 2, 1)),
        ("batchnorm_forward", (x4, [1.5], [0.5], [0.0], [1.0], False)),
        ("batchnorm_backward", (x4, x4, [1.5], saved)),
        ("dropout_forward", (x2, 0.5, 7)),
        ("dropout_backward", (x2, w2, 0.5)),
    ]


def _poison(result):
    """Overwrite every number reachable in `result`, in place, with NaN."""
    items = result if isinstance(result, (list, tuple)) else []
    for index, item in enumerate(items):
        if isinstance(item, (list, tuple)):
            _poison(item)
        elif isinstance(items, list):
            items[index] = math.nan


@pytest.mark.parametrize(
    ("op", "args"),
    [
        pytest.param(op, args, marks=getattr(pytest.mark, f"week{WEEK_OF_OP[op]:02d}"), id=op)
        for op, args in _small_calls()
    ],
)
def test_ops_never_modify_or_share_their_inputs(op, args):
    before = copy.deepcopy(args)
    result = getattr(s1, op)(*args)
    assert args == before, f"{op} modified its inputs"
    _poison(result)  # an output sharing a list with an input would now poison that input
    assert args == before, f"{op} returned a list that belongs to one of its inputs"


@week04
@pytest.mark.parametrize("op", ["sgd_step", "momentum_step", "rmsprop_step", "adam_step"])
def test_optimizers_update_the_callers_lists_in_place(rng, op):
    p = nested(rng.standard_normal((2, 3, 2)))
    g = nested(rng.standard_normal((2, 3, 2)))
    rows_before = [row for matrix in p for row in matrix]
    original = copy.deepcopy(p)
    state = {
        "sgd_step": [],
        "momentum_step": [[2, 3, 2]],
        "rmsprop_step": [[2, 3, 2]],
        "adam_step": [[2, 3, 2], [2, 3, 2]],
    }[op]
    states = [s1.from_numpy(np.zeros(shape)) for shape in state]
    extra = {
        "sgd_step": (0.1,),
        "momentum_step": (0.1, 0.9),
        "rmsprop_step": (0.1,),
        "adam_step": (1, 0.1),
    }[op]
    assert getattr(s1, op)(p, g, *states, *extra) is None
    assert [row for matrix in p for row in matrix] == rows_before  # the same list objects...
    assert all(a is b for a, b in zip([r for m in p for r in m], rows_before, strict=True))
    assert p != original  # ...now holding new values
    for tensor in states:
        assert np.count_nonzero(s1.to_numpy(tensor)) == 12


@week06
def test_batchnorm_running_statistics_change_in_place_only_when_training(rng):
    x = nested(rng.standard_normal((4, 3, 2, 2)))
    gamma, beta = nested(rng.standard_normal(3)), nested(rng.standard_normal(3))
    running_mean, running_var = nested(rng.standard_normal(3)), nested(rng.uniform(0.5, 2, 3))
    frozen = (list(running_mean), list(running_var))
    s1.batchnorm_forward(x, gamma, beta, running_mean, running_var, False)
    assert (running_mean, running_var) == frozen
    mean_list, var_list = running_mean, running_var
    s1.batchnorm_forward(x, gamma, beta, running_mean, running_var, True)
    assert running_mean is mean_list and running_var is var_list
    assert running_mean != frozen[0] and running_var != frozen[1]


@week06
def test_maxpool_argmax_holds_python_ints_and_ties_pick_the_first_in_the_window():
    plane = [[1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 1.0]]  # ties everywhere
    y, argmax = s1.maxpool2d_forward([[plane]], 2, 1)
    assert y == [[[[1.0, 1.0], [1.0, 1.0]]]]
    assert argmax == [[[[0, 1], [3, 4]]]]  # each window's top-left element: h*W + w
    assert all(type(index) is int for row in argmax[0][0] for index in row)


@week03
def test_losses_are_python_floats_and_stable_at_extreme_logits():
    logits = [[1000.0, -1000.0, 0.0], [-800.0, 800.0, 0.0]]
    loss = s1.cross_entropy_loss(logits, [1, 0])
    assert type(loss) is float and loss == pytest.approx((2000.0 + 1600.0) / 2)
    assert s1.cross_entropy_loss_backward(logits, [0, 1]) == [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    assert type(s1.bce_with_logits_loss([[800.0, -800.0]], [[0.0, 1.0]])) is float
    assert s1.bce_with_logits_loss([[800.0, -800.0]], [[0.0, 1.0]]) == pytest.approx(800.0)
    assert s1.sigmoid([-800.0, 800.0]) == [0.0, 1.0]
    assert s1.log_softmax([[1000.0, 0.0]])[0][1] == pytest.approx(-1000.0)


@week04
@pytest.mark.parametrize(
    ("seed", "i", "expected"), [(0, 0, 0.6524484753608704), (123456789, 1000, 0.6647701263427734)]
)
def test_the_stream_functions_give_the_contract_vectors(seed, i, expected):
    from stage1_python import random_stream

    assert random_stream.uniform(seed, i) == expected
    first, second = random_stream.uniform(seed, 2 * i), random_stream.uniform(seed, 2 * i + 1)
    box_muller = math.sqrt(-2 * math.log(1 - first)) * math.cos(2 * math.pi * second)
    assert random_stream.normal(seed, i) == box_muller


def test_every_op_is_one_solution_region_of_its_week():
    """Each op is an exercise of its week: one region of its own task ending its body, or in a
    helper of its module that it calls (the int8 ops share their rounding); or, with none of its
    own, it is made of such exercises (int8_conv2d_to_int8: int8_conv2d, then requantized)."""
    begin = re.compile(r"^ *# BEGIN SOLUTION week (\d+), task (\w+)$", re.MULTILINE)
    for op, week in WEEK_OF_OP.items():
        function = getattr(s1, op)
        module = inspect.getmodule(function)
        regions = [m for m in begin.finditer(inspect.getsource(module)) if m[2] == op]
        assert len(regions) <= 1, f"{op} must hold at most one solution region"
        lines = [line for line in inspect.getsource(function).splitlines() if line.strip()]
        body = "\n".join(lines[1:])
        with_regions = {name: [m for m in begin.finditer(inspect.getsource(value))]
                        for name, value in vars(module).items()
                        if inspect.isfunction(value) and value.__module__ == module.__name__
                        and begin.search(inspect.getsource(value))}  # fmt: skip
        called = {name for name in with_regions if name != op and f"{name}(" in body}
        if regions:
            assert int(regions[0][1]) == week, f"{op}: its region is week {regions[0][1]}'s"
            if op in with_regions:
                assert lines[-1].strip() == "# END SOLUTION", f"{op}: the region must end the body"
            else:
                assert any(m[2] == op for name in called for m in with_regions[name]), (
                    f"{op}: its region is in a helper it does not call")
        else:
            assert called, f"{op} holds no solution region and calls no function that does"
            assert all(int(m[1]) == week for name in called for m in with_regions[name])



# ------------------------------------------------------------------------------------------------
# Every op against PyTorch (float64)
# ------------------------------------------------------------------------------------------------


@oracle
@week01
@pytest.mark.parametrize(("n", "k", "m"), [(1, 1, 1), (1, 4, 3), (5, 3, 7), (6, 1, 2), (3, 9, 1)])
def test_matmul_and_transpose(torch, rng, n, k, m):
    a, b = rng.standard_normal((n, k)), rng.standard_normal((k, m))
    assert_matches(s1.matmul(nested(a), nested(b)), torch.tensor(a) @ torch.tensor(b))
    assert_matches(s1.transpose(nested(a)), torch.tensor(a).T)


@oracle
@week01
@pytest.mark.parametrize("shape", [(5,), (1, 3), (4, 7), (2, 3, 5), (1, 2, 1, 3)])
def test_add_mul_scale_same_shape_and_row_broadcast(torch, rng, shape):
    a, b, row = (
        rng.standard_normal(shape),
        rng.standard_normal(shape),
        rng.standard_normal(shape[-1]),
    )
    ta, tb, trow = torch.tensor(a), torch.tensor(b), torch.tensor(row)
    assert_matches(s1.add(nested(a), nested(b)), ta + tb)
    assert_matches(s1.mul(nested(a), nested(b)), ta * tb)
    assert_matches(s1.add(nested(a), nested(row)), ta + trow)
    assert_matches(s1.mul(nested(a), nested(row)), ta * trow)
    s = float(rng.standard_normal())
    assert_matches(s1.scale(nested(a), s), s * ta)


@oracle
@week01
@pytest.mark.parametrize("shape", [(1, 1), (1, 5), (6, 1), (4, 3)])
def test_sum_rows(torch, rng, shape):
    x = rng.standard_normal(shape)
    assert_matches(s1.sum_rows(nested(x)), torch.tensor(x).sum(dim=0))


@oracle
@week02
@pytest.mark.parametrize(("n", "i", "o"), [(1, 1, 1), (1, 5, 3), (4, 3, 7), (7, 6, 1)])
def test_linear_forward_and_backward(torch, rng, n, i, o):
    x, w, b = rng.standard_normal((n, i)), rng.standard_normal((o, i)), rng.standard_normal(o)
    dy = rng.standard_normal((n, o))
    y, grads = autograd(torch, torch.nn.functional.linear, [x, w, b], dy)
    assert_matches(s1.linear_forward(nested(x), nested(w), nested(b)), y)
    for ours, theirs in zip(
        s1.linear_backward(nested(x), nested(w), nested(dy)), grads, strict=True
    ):
        assert_matches(ours, theirs)


ELEMENTWISE_SHAPES = [(1,), (7,), (1, 5), (3, 4), (2, 3, 5), (1, 2, 3, 3)]


@oracle
@week02
@pytest.mark.parametrize("shape", ELEMENTWISE_SHAPES)
@pytest.mark.parametrize("name", ["relu", "leaky_relu", "sigmoid", "tanh"])
def test_elementwise_activations_and_their_backwards(torch, rng, name, shape):
    x = rng.standard_normal(shape) * 3
    dy = rng.standard_normal(shape)
    alpha = float(rng.uniform(0.01, 0.5))
    functional = torch.nn.functional
    torch_fn = {
        "relu": functional.relu,
        "leaky_relu": lambda t: functional.leaky_relu(t, alpha),
        "sigmoid": torch.sigmoid,
        "tanh": torch.tanh,
    }[name]
    y, (dx,) = autograd(torch, torch_fn, [x], dy)
    extra = (alpha,) if name == "leaky_relu" else ()
    assert_matches(getattr(s1, name)(nested(x), *extra), y)
    # relu and leaky_relu's backwards take the input, sigmoid and tanh's the output
    first = nested(y) if name in ("sigmoid", "tanh") else nested(x)
    assert_matches(getattr(s1, f"{name}_backward")(first, nested(dy), *extra), dx)


@oracle
@week03
@pytest.mark.parametrize("shape", [(1, 1), (1, 5), (4, 3), (7, 10)])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_and_log_softmax_and_their_backwards(torch, rng, name, shape):
    x = rng.standard_normal(shape) * 4 + 50  # large offsets: only the stable form stays exact
    dy = rng.standard_normal(shape)
    torch_fn = getattr(torch.nn.functional, name)
    y, (dx,) = autograd(torch, lambda t: torch_fn(t, dim=1), [x], dy)
    assert_matches(getattr(s1, name)(nested(x)), y)
    assert_matches(getattr(s1, f"{name}_backward")(nested(y), nested(dy)), dx)


@oracle
@week03
@pytest.mark.parametrize("shape", [(1,), (1, 1), (5, 3), (2, 3, 4)])
def test_mse_loss_and_backward(torch, rng, shape):
    pred, target = rng.standard_normal(shape), rng.standard_normal(shape)
    loss, (dpred,) = autograd(
        torch, lambda p: torch.nn.functional.mse_loss(p, torch.tensor(target)), [pred]
    )
    assert_matches(s1.mse_loss(nested(pred), nested(target)), loss)
    assert_matches(s1.mse_loss_backward(nested(pred), nested(target)), dpred)


@oracle
@week03
@pytest.mark.parametrize("shape", [(1, 1), (1, 4), (6, 3), (5, 10)])
def test_cross_entropy_loss_and_backward(torch, rng, shape):
    logits = rng.standard_normal(shape) * 3
    labels = rng.integers(0, shape[1], size=shape[0])
    loss, (dlogits,) = autograd(
        torch, lambda z: torch.nn.functional.cross_entropy(z, torch.tensor(labels)), [logits]
    )
    as_labels = s1.from_numpy(labels)
    assert_matches(s1.cross_entropy_loss(nested(logits), as_labels), loss)
    assert_matches(s1.cross_entropy_loss_backward(nested(logits), as_labels), dlogits)


@oracle
@week03
@pytest.mark.parametrize("shape", [(1,), (1, 1), (4, 3), (2, 3, 2)])
def test_bce_with_logits_loss_and_backward(torch, rng, shape):
    logits, targets = rng.standard_normal(shape) * 5, rng.uniform(0, 1, shape)
    loss, (dlogits,) = autograd(
        torch,
        lambda z: torch.nn.functional.binary_cross_entropy_with_logits(z, torch.tensor(targets)),
        [logits],
    )
    assert_matches(s1.bce_with_logits_loss(nested(logits), nested(targets)), loss)
    assert_matches(s1.bce_with_logits_loss_backward(nested(logits), nested(targets)), dlogits)


@oracle
@week03
@pytest.mark.parametrize("shape", [(1, 2), (1, 5), (6, 3), (5, 10)])
def test_hinge_loss_and_backward(torch, rng, shape):
    scores = rng.standard_normal(shape)
    labels = rng.integers(0, shape[1], size=shape[0])
    margin = float(rng.uniform(0.5, 2.0))
    classes = shape[1]

    def multiclass_svm(s):  # PyTorch's multi_margin_loss averages over the classes too
        return classes * torch.nn.functional.multi_margin_loss(
            s, torch.tensor(labels), margin=margin
        )

    loss, (dscores,) = autograd(torch, multiclass_svm, [scores])
    as_labels = s1.from_numpy(labels)
    assert_matches(s1.hinge_loss(nested(scores), as_labels, margin), loss)
    assert_matches(s1.hinge_loss_backward(nested(scores), as_labels, margin), dscores)
    assert_matches(
        s1.hinge_loss(nested(scores), as_labels),
        classes * torch.nn.functional.multi_margin_loss(torch.tensor(scores), torch.tensor(labels)),
    )


OPTIMIZERS = {
    "sgd": (
        lambda torch, p, wd: torch.optim.SGD(p, lr=0.1, weight_decay=wd),
        lambda p, g, state, t, wd: s1.sgd_step(p, g, 0.1, weight_decay=wd),
        0,
    ),
    "momentum": (
        lambda torch, p, wd: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=wd),
        lambda p, g, state, t, wd: s1.momentum_step(p, g, *state, 0.05, 0.9, weight_decay=wd),
        1,
    ),
    "nesterov": (
        lambda torch, p, wd: torch.optim.SGD(
            p, lr=0.05, momentum=0.8, nesterov=True, weight_decay=wd
        ),
        lambda p, g, state, t, wd: s1.momentum_step(
            p, g, *state, 0.05, 0.8, nesterov=True, weight_decay=wd
        ),
        1,
    ),
    "rmsprop": (
        lambda torch, p, wd: torch.optim.RMSprop(p, lr=0.01, alpha=0.95, eps=1e-6, weight_decay=wd),
        lambda p, g, state, t, wd: s1.rmsprop_step(
            p, g, *state, 0.01, alpha=0.95, eps=1e-6, weight_decay=wd
        ),
        1,
    ),
    "adam": (
        lambda torch, p, wd: torch.optim.Adam(
            p, lr=0.01, betas=(0.8, 0.99), eps=1e-7, weight_decay=wd
        ),
        lambda p, g, state, t, wd: s1.adam_step(
            p, g, *state, t, 0.01, beta1=0.8, beta2=0.99, eps=1e-7, weight_decay=wd
        ),
        2,
    ),
}


@oracle
@week04
@pytest.mark.parametrize("shape", [(1,), (5,), (3, 4), (2, 3, 2, 2)])
@pytest.mark.parametrize("weight_decay", [0.0, 0.05])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizers_follow_torch_optim_for_three_steps(torch, rng, name, weight_decay, shape):
    make_torch_optimizer, our_step, state_count = OPTIMIZERS[name]
    start = rng.standard_normal(shape)
    theirs = torch.tensor(start, requires_grad=True)
    optimizer = make_torch_optimizer(torch, [theirs], weight_decay)
    ours = nested(start)
    state = [nested(np.zeros(shape)) for _ in range(state_count)]
    for t in (1, 2, 3):
        g = rng.standard_normal(shape)
        theirs.grad = torch.tensor(g)
        optimizer.step()
        our_step(ours, nested(g), state, t, weight_decay)
        assert_matches(ours, theirs.detach())


@oracle
@week04
@pytest.mark.parametrize("shape", [(300,), (60, 40), (16, 8, 3, 3)])
def test_init_fans_and_scales_are_torchs(torch, shape):
    if len(shape) == 1:  # PyTorch refuses 1-D; the contract uses fan_in = fan_out = shape[0]
        fan_in = fan_out = shape[0]
    else:
        fan_in, fan_out = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
    bound = math.sqrt(6 / (fan_in + fan_out))
    uniform = s1.to_numpy(s1.xavier_uniform(shape, 11))
    assert uniform.shape == shape
    assert np.abs(uniform).max() <= bound and np.abs(uniform).max() > 0.95 * bound
    normal = s1.to_numpy(s1.he_normal(shape, 11))
    assert normal.shape == shape
    assert normal.std() == pytest.approx(math.sqrt(2 / fan_in), rel=0.12)


def _random_geometry(rng):
    """A random small convolution: (N, C, H, W, K, R, S, stride, padding) with output >= 1."""
    while True:
        n, c, k = rng.integers(1, 4, size=3)
        h, w = rng.integers(3, 9, size=2)
        r, s = rng.integers(1, 4, size=2)
        stride, padding = int(rng.integers(1, 3)), int(rng.integers(0, 2))
        if h + 2 * padding >= r and w + 2 * padding >= s:
            return tuple(int(v) for v in (n, c, h, w, k, r, s)) + (stride, padding)


CONV_GEOMETRIES = [
    # N, C, H, W, K, R, S, stride, padding
    (1, 1, 5, 5, 1, 3, 3, 1, 0),
    (2, 3, 7, 6, 4, 3, 3, 2, 1),
    (3, 2, 6, 7, 5, 2, 3, 1, 1),
    (1, 3, 5, 5, 2, 5, 5, 1, 2),
    (2, 1, 9, 4, 3, 1, 1, 2, 0),
    (1, 2, 4, 4, 3, 4, 4, 1, 0),
    "random",
    "random",
]


@pytest.fixture(params=CONV_GEOMETRIES)
def geometry(request, rng):
    return _random_geometry(rng) if request.param == "random" else request.param


@oracle
@week05
def test_im2col_is_unfold_and_col2im_is_fold(torch, rng, geometry):
    n, c, h, w, _, kh, kw, stride, padding = geometry
    x = rng.standard_normal((n, c, h, w))
    oh, ow = (h + 2 * padding - kh) // stride + 1, (w + 2 * padding - kw) // stride + 1
    cols = rng.standard_normal((n, c * kh * kw, oh * ow))
    functional = torch.nn.functional
    unfolded = functional.unfold(torch.tensor(x), (kh, kw), padding=padding, stride=stride)
    folded = functional.fold(torch.tensor(cols), (h, w), (kh, kw), padding=padding, stride=stride)
    assert_matches(s1.im2col(nested(x), kh, kw, stride, padding), unfolded)
    assert_matches(s1.col2im(nested(cols), (n, c, h, w), kh, kw, stride, padding), folded)


@oracle
@week05
def test_conv2d_forward_and_backward(torch, rng, geometry):
    n, c, h, w, k, r, s, stride, padding = geometry
    x, weight, b = (rng.standard_normal(shape) for shape in ((n, c, h, w), (k, c, r, s), (k,)))
    oh, ow = (h + 2 * padding - r) // stride + 1, (w + 2 * padding - s) // stride + 1
    dy = rng.standard_normal((n, k, oh, ow))
    y, grads = autograd(
        torch,
        lambda *t: torch.nn.functional.conv2d(*t, stride=stride, padding=padding),
        [x, weight, b],
        dy,
    )
    assert_matches(s1.conv2d_forward(nested(x), nested(weight), nested(b), stride, padding), y)
    ours = s1.conv2d_backward(nested(x), nested(weight), nested(dy), stride, padding)
    for our_grad, their_grad in zip(ours, grads, strict=True):
        assert_matches(our_grad, their_grad)


POOL_CASES = [
    # N, C, H, W, k, stride
    (1, 1, 4, 4, 2, 2),
    (2, 3, 7, 5, 3, 2),  # overlapping windows, odd sizes, a leftover row and column
    (1, 2, 5, 6, 3, 1),
    (3, 1, 6, 6, 2, 1),
    (1, 1, 3, 3, 3, 3),
]


@oracle
@week06
@pytest.mark.parametrize(("n", "c", "h", "w", "k", "stride"), POOL_CASES)
def test_maxpool2d_forward_and_backward(torch, rng, n, c, h, w, k, stride):
    x = rng.standard_normal((n, c, h, w))
    oh, ow = (h - k) // stride + 1, (w - k) // stride + 1
    dy = rng.standard_normal((n, c, oh, ow))
    their_y, their_argmax = torch.nn.functional.max_pool2d(
        torch.tensor(x), k, stride, return_indices=True
    )
    _, (dx,) = autograd(torch, lambda t: torch.nn.functional.max_pool2d(t, k, stride), [x], dy)
    y, argmax = s1.maxpool2d_forward(nested(x), k, stride)
    assert_matches(y, their_y)
    np.testing.assert_array_equal(s1.to_numpy(argmax), their_argmax.numpy())
    assert_matches(s1.maxpool2d_backward(nested(dy), argmax, (n, c, h, w), k, stride), dx)


@oracle
@week06
@pytest.mark.parametrize(("n", "c", "h", "w", "k", "stride"), POOL_CASES)
def test_avgpool2d_forward_and_backward(torch, rng, n, c, h, w, k, stride):
    x = rng.standard_normal((n, c, h, w))
    oh, ow = (h - k) // stride + 1, (w - k) // stride + 1
    dy = rng.standard_normal((n, c, oh, ow))
    y, (dx,) = autograd(torch, lambda t: torch.nn.functional.avg_pool2d(t, k, stride), [x], dy)
    assert_matches(s1.avgpool2d_forward(nested(x), k, stride), y)
    assert_matches(s1.avgpool2d_backward(nested(dy), (n, c, h, w), k, stride), dx)


@oracle
@week06
@pytest.mark.parametrize("shape", [(2, 1), (5, 3), (1, 2, 3, 3), (4, 3, 2, 5)])
@pytest.mark.parametrize("training", [True, False])
def test_batchnorm_forward_and_backward(torch, rng, shape, training):
    channels = shape[1]
    x = rng.standard_normal(shape) * 2 + 1
    gamma, beta = rng.standard_normal(channels), rng.standard_normal(channels)
    running_mean, running_var = rng.standard_normal(channels), rng.uniform(0.5, 2, channels)
    momentum, eps = float(rng.uniform(0.05, 0.5)), 1e-3
    their_mean, their_var = torch.tensor(running_mean), torch.tensor(running_var)
    dy = rng.standard_normal(shape)
    y, grads = autograd(
        torch,
        lambda t, g, b: torch.nn.functional.batch_norm(
            t, their_mean, their_var, g, b, training=training, momentum=momentum, eps=eps
        ),
        [x, gamma, beta],
        dy,
    )
    our_mean, our_var = nested(running_mean), nested(running_var)
    our_y, (saved_mean, saved_invstd) = s1.batchnorm_forward(
        nested(x), nested(gamma), nested(beta), our_mean, our_var, training, momentum, eps
    )
    assert_matches(our_y, y)
    assert_matches(our_mean, their_mean)  # updated in place when training, as PyTorch does
    assert_matches(our_var, their_var)
    axes = (0,) + tuple(range(2, len(shape)))
    used_mean = x.mean(axis=axes) if training else running_mean
    used_var = x.var(axis=axes) if training else running_var
    assert_matches(saved_mean, used_mean)
    assert_matches(saved_invstd, 1 / np.sqrt(used_var + eps))
    if training:  # the backward is the training-mode gradient
        dx, dgamma, dbeta = s1.batchnorm_backward(
            nested(dy), nested(x), nested(gamma), (saved_mean, saved_invstd)
        )
        for ours, theirs in zip((dx, dgamma, dbeta), grads, strict=True):
            assert_matches(ours, theirs)


@week06
@pytest.mark.parametrize("shape", [(1,), (3, 4), (2, 3, 4, 5)])
def test_dropout_backward_routes_through_the_forwards_mask(rng, shape):
    x, dy = rng.standard_normal(shape), rng.standard_normal(shape)
    p = float(rng.uniform(0.1, 0.7))
    y, mask = s1.dropout_forward(nested(x), p, int(rng.integers(0, 2**32)))
    kept = s1.to_numpy(mask)
    assert set(np.unique(kept)) <= {0.0, 1.0}
    assert_matches(y, x * kept / (1 - p))
    assert_matches(s1.dropout_backward(nested(dy), mask, p), dy * kept / (1 - p))

"""Malformed calls at every op of the C tier: the process survives and each call raises ValueError
or TypeError (never a crash, a MemoryError or an OverflowError).

C trusts its arguments, so everything rests on the wrappers' checks. For every op, a valid call
is built from fresh random inputs; then each argument in turn is replaced by each of its
mutations, and finally random pairs of mutations are combined. A mutation is either
  - invalid (wrong dtype, rank, zero-size dimension, out-of-range scalar, wrong type, huge
    padding or shape, a view where an in-place array is needed, a label or argmax out of range):
    the call must raise ValueError or TypeError, or
  - harmless (a non-contiguous view, negative strides, an unaligned copy, another integer dtype
    for labels): the call must succeed and give exactly the unmutated call's result.
Everything runs in this process: a crash fails the run.
"""

import secrets
import sys
import threading

import numpy as np
import pytest

import stage3_c as s3
from tests.array_views import negative_strides, non_contiguous, read_only, unaligned, with_first

pytestmark = pytest.mark.skipif(not s3.available()[0], reason=s3.available()[1])

BIG = 2**31  # one past the largest int argument the tier accepts
RAISES, SUCCEEDS = "raises", "succeeds"
PAIRS = 200  # random pairs of mutations per op
SHAPE_CHANGES = ("an extra axis", "one axis less", "one element more")


def floats(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# ---- argument kinds and their mutations -------------------------------------------------------
# A kind says what an argument is: ("array", fixed_rank) for float32 data read by C,
# ("state",) for a float32 array updated in place, ("labels", classes), ("argmax", plane_size),
# ("int", minimum[, maximum]), ("real", low, high, low_open, high_open), ("seed",), ("flag",),
# ("shape", rank or None), ("saved",) for a forward's saved tuple (batchnorm's and layernorm's
# (mean, invstd), attention's (lse,)), ("choice",) for a name, ("optional", low, high, low_open,
# high_open) for a number that may be None.

WRONG_TYPES = [None, "1", [1.0, 2.0], {"a": 1}, object()]


def array_mutations(value, fixed_rank, in_place=False):
    """(outcome, description, new value) for a float32 array argument."""
    out = [(RAISES, f"dtype {dtype}", value.astype(dtype))
           for dtype in (np.float64, np.float16, np.int32, np.bool_, np.complex64)]  # fmt: skip
    out += [
        (RAISES, "object dtype", value.astype(object)),
        (RAISES, "big-endian float32", value.astype(">f4")),
        (RAISES, "zero-size dimension", np.zeros((0,) + value.shape[1:], np.float32)),
        (RAISES, "a Python list", value.tolist()),
        (RAISES, "a Python float", 1.0),
    ]
    out += [(RAISES, f"type {type(v).__name__}", v) for v in WRONG_TYPES]
    if fixed_rank:
        fewer = value.reshape(-1) if value.ndim > 1 else np.array(value.ravel()[0])
        out += [(RAISES, "an extra axis", value[None]), (RAISES, "one axis less", fewer)]
    else:
        out += [(None, "an extra axis", value[None])]
    out += [(None, "a grown dimension", np.concatenate([value, value[:1]]))]
    # views C cannot update in place: fine to copy when C only reads them
    views = [
        ("unaligned", unaligned(value)),
        ("negative strides", negative_strides(value)),
        ("non-contiguous", non_contiguous(value)),
        ("read-only", read_only(value)),
    ]
    return out + [(RAISES if in_place else SUCCEEDS, what, view) for what, view in views]


def codes_mutations(value):
    """(outcome, description, new value) for an int8 array of codes (the int8 ops' x and w)."""
    out = [(RAISES, f"dtype {dtype.__name__}", value.astype(dtype))
           for dtype in (np.uint8, np.int16, np.int32, np.float32, np.bool_)]  # fmt: skip
    out += [
        (RAISES, "zero-size dimension", np.zeros((0,) + value.shape[1:], np.int8)),
        (RAISES, "a Python list", value.tolist()),
        (RAISES, "an extra axis", value[None]),
        (RAISES, "one axis less", value.reshape(-1)),
    ]
    out += [(RAISES, f"type {type(v).__name__}", v) for v in WRONG_TYPES]
    views = [("non-contiguous", non_contiguous(value)),
             ("negative strides", negative_strides(value)), ("read-only", read_only(value))]
    return out + [(None, what, view) for what, view in views]


def integer_array_mutations(value, limit, name):
    """Mutations of labels (limit = classes) or argmax (limit = plane size)."""
    out = [
        (RAISES, f"{name} = -1", with_first(value, -1)),
        (RAISES, f"{name} = {limit}", with_first(value, limit)),
        (RAISES, f"{name} = 2**62", np.full_like(value, 2**62)),
        (RAISES, "uint64 beyond int64", np.full(value.shape, 2**63 + 5, np.uint64)),
        (RAISES, "float dtype", value.astype(np.float32)),
        (RAISES, "bool dtype", value.astype(np.bool_)),
        (RAISES, "an extra axis", value[None]),
        (RAISES, "zero-size", value[:0]),
        (RAISES, "one element more", np.concatenate([value, value[:1]])),
        (RAISES, "a Python list", value.tolist()),
        (SUCCEEDS, "int32", value.astype(np.int32)),
        (SUCCEEDS, "uint8", value.astype(np.uint8)),
        (SUCCEEDS, "non-contiguous", non_contiguous(value)),
        (SUCCEEDS, "negative strides", negative_strides(value)),
    ]
    return out + [(RAISES, f"type {type(v).__name__}", v) for v in WRONG_TYPES]


def int_mutations(value, minimum, maximum=BIG - 1):
    out = [(RAISES, f"{v!r}", v) for v in (minimum - 1, -(2**63), maximum + 1, 2**64, 10**30)]
    out += [(RAISES, f"{v!r}", v) for v in (1.5, float(value), np.nan, True, "2", None)]
    return out + [(SUCCEEDS, "a NumPy int", np.int64(value))]


def real_mutations(value, low, high, low_open, high_open):
    out = [(RAISES, f"{v!r}", v) for v in (np.nan, np.inf, -np.inf, 10**400, True, "0.5", None)]
    out += [(RAISES, "complex", complex(value, 1))]
    if low is not None:
        out.append((RAISES, f"{low} - 1", low - 1))
        if low_open:
            out.append((RAISES, f"{low}", low))
    if high is not None:
        out.append((RAISES, f"{high} + 1", high + 1))
        if high_open:
            out.append((RAISES, f"{high}", high))
    return out + [(SUCCEEDS, "a NumPy float", np.float64(value))]


def shape_mutations(value, rank):
    out = [
        (RAISES, "empty tuple", ()),
        (RAISES, "a zero", (0,) + tuple(value[1:])),
        (RAISES, "a negative size", (-1,) + tuple(value[1:])),
        (RAISES, "a float size", (1.5,) + tuple(value[1:])),
        (RAISES, "a bool size", (True,) + tuple(value[1:])),
        (RAISES, "huge sizes", (10**6,) * len(value)),
        (RAISES, "a size of 2**64", (2**64,) + tuple(value[1:])),
        (RAISES, "a string", "2, 3"),
        (RAISES, "None", None),
    ]
    if rank is not None:
        out += [(RAISES, "one size more", tuple(value) + (1,))]
    return out + [(SUCCEEDS, "a list", list(value))]


def mutations(kind, value):
    """Every mutation of an argument of `kind` whose valid value is `value`."""
    tag = kind[0]
    if tag == "array":
        return array_mutations(value, fixed_rank=kind[1])
    if tag == "state":
        return array_mutations(value, fixed_rank=True, in_place=True)
    if tag == "codes":
        return codes_mutations(value)
    if tag in ("labels", "argmax"):
        return integer_array_mutations(value, kind[1], tag)
    if tag == "int":
        return int_mutations(value, *kind[1:])
    if tag == "real":
        return real_mutations(value, *kind[1:])
    if tag == "seed":
        return int_mutations(value, 0, 2**64 - 1)
    if tag == "flag":
        return [(RAISES, repr(v), v) for v in (1, 0, "True", None, 0.0)]
    if tag == "shape":
        return shape_mutations(value, kind[1])
    if tag == "saved":
        first, last = value[0], value[-1]
        return [
            (RAISES, "a single array", first),
            (RAISES, "one array more", (*value, last)),
            (RAISES, "None", None),
            (RAISES, "a short first array", (first[:-1], *value[1:])),
            (RAISES, "a float64 last array", (*value[:-1], last.astype(np.float64))),
            (SUCCEEDS, "a list", list(value)),
        ]
    if tag == "optional":  # a number or None (its default): a number's mutations but None
        real = [change for change in real_mutations(value, *kind[1:]) if change[2] is not None]
        return real + [(None, "None (the default)", None)]
    if tag == "choice":
        return [(RAISES, repr(v), v) for v in ("fastest", 0, 6, 3.0, None, "")]
    raise AssertionError(f"unknown kind {kind}")


# ---- the ops: a valid call and the kind of each argument ---------------------------------------

ANY = ("array", False)
FIXED = ("array", True)
STATE = ("state",)
INT1, INT0 = ("int", 1), ("int", 0)
STEP = ("int", 1, 2**63 - 1)  # adam's t
FINITE = ("real", None, None, False, False)
NON_NEGATIVE = ("real", 0, None, False, False)
PROBABILITY = ("real", 0, 1, False, True)
UNIT = ("real", 0, 1, False, False)
POSITIVE = ("real", 0, None, True, False)
OPTIONAL_POSITIVE = ("optional", 0, None, True, False)  # attention's scale


CODES, ZERO = ("codes",), ("int", -128, 127)


def codes(rng, *shape):
    return rng.integers(-128, 128, shape).astype(np.int8)


def int8_call(rng, conv, requantized):
    """An int8 layer's call: x codes, x_zero, w codes, scale, b (then y_zero; stride, padding;
    relu), as int8_linear, int8_conv2d and their _to_int8 forms take them."""
    x, w = (codes(rng, 2, 3, 7, 6), codes(rng, 4, 3, 3, 2)) if conv else (codes(rng, 3, 5),
                                                                          codes(rng, 4, 5))
    scale = (np.abs(floats(rng, 4)) + 0.01) / 64
    args, kinds = [x, -5, w, scale, floats(rng, 4)], [CODES, ZERO, CODES, FIXED, FIXED]
    if requantized:
        args, kinds = args + [3], kinds + [ZERO]
    if conv:
        args, kinds = args + [2, 1], kinds + [INT1, INT0]
    if requantized:
        args, kinds = args + [True], kinds + [("flag",)]
    return args, kinds


def conv_call(rng, backward):
    x, w = floats(rng, 2, 3, 7, 6), floats(rng, 4, 3, 3, 2)
    third = floats(rng, 2, 4, 4, 4) if backward else floats(rng, 4)
    return [x, w, third, 2, 1], [FIXED, FIXED, FIXED, INT1, INT0]


def pool_backward_call(rng, with_argmax):
    dy = floats(rng, 2, 3, 3, 3)
    args = [dy, rng.integers(0, 49, dy.shape), (2, 3, 7, 7), 3, 2]
    kinds = [FIXED, ("argmax", 49), ("shape", 4), INT1, INT1]
    if not with_argmax:
        del args[1], kinds[1]
    return args, kinds


def optimizer_call(rng, states, scalars):
    p = floats(rng, 3, 5)
    arrays = [p, floats(rng, 3, 5)] + [np.abs(floats(rng, 3, 5)) for _ in range(states)]
    return arrays + [v for v, _ in scalars], [STATE, ANY] + [STATE] * states + [
        k for _, k in scalars
    ]


def batchnorm_call(rng):
    x = floats(rng, 4, 3, 2, 5)
    vectors = [floats(rng, 3), floats(rng, 3), floats(rng, 3), np.abs(floats(rng, 3)) + 0.5]
    args = [x, *vectors, True, 0.1, 1e-5]
    return args, [FIXED, FIXED, FIXED, STATE, STATE, ("flag",), UNIT, POSITIVE]


CALLS = {
    "matmul": lambda r: ([floats(r, 3, 4), floats(r, 4, 5), "blocked"],
                         [FIXED, FIXED, ("choice",)]),
    "transpose": lambda r: ([floats(r, 3, 4)], [FIXED]),
    "swap_middle_axes": lambda r: ([floats(r, 2, 3, 4, 5)], [FIXED]),
    "add": lambda r: ([floats(r, 3, 4), floats(r, 4)], [ANY, FIXED]),
    "mul": lambda r: ([floats(r, 3, 4), floats(r, 3, 4)], [ANY, FIXED]),
    "scale": lambda r: ([floats(r, 2, 3), 0.5], [ANY, FINITE]),
    "sum_rows": lambda r: ([floats(r, 3, 4)], [FIXED]),
    "linear_forward": lambda r: ([floats(r, 3, 4), floats(r, 5, 4), floats(r, 5)], [FIXED] * 3),
    "linear_backward": lambda r: ([floats(r, 3, 4), floats(r, 5, 4), floats(r, 3, 5)],
                                  [FIXED] * 3),
    "relu": lambda r: ([floats(r, 2, 3)], [ANY]),
    "relu_backward": lambda r: ([floats(r, 2, 3), floats(r, 2, 3)], [ANY, FIXED]),
    "leaky_relu": lambda r: ([floats(r, 2, 3), 0.1], [ANY, FINITE]),
    "leaky_relu_backward": lambda r: ([floats(r, 2, 3), floats(r, 2, 3), 0.1],
                                      [ANY, FIXED, FINITE]),
    "sigmoid": lambda r: ([floats(r, 2, 3)], [ANY]),
    "sigmoid_backward": lambda r: ([floats(r, 2, 3), floats(r, 2, 3)], [ANY, FIXED]),
    "tanh": lambda r: ([floats(r, 2, 3)], [ANY]),
    "tanh_backward": lambda r: ([floats(r, 2, 3), floats(r, 2, 3)], [ANY, FIXED]),
    "softmax": lambda r: ([floats(r, 2, 3)], [FIXED]),
    "softmax_backward": lambda r: ([floats(r, 2, 3), floats(r, 2, 3)], [FIXED, FIXED]),
    "log_softmax": lambda r: ([floats(r, 2, 3)], [FIXED]),
    "log_softmax_backward": lambda r: ([floats(r, 2, 3), floats(r, 2, 3)], [FIXED, FIXED]),
    "mse_loss": lambda r: ([floats(r, 2, 3), floats(r, 2, 3)], [ANY, FIXED]),
    "mse_loss_backward": lambda r: ([floats(r, 2, 3), floats(r, 2, 3)], [ANY, FIXED]),
    "cross_entropy_loss": lambda r: ([floats(r, 4, 3), r.integers(0, 3, 4)],
                                     [FIXED, ("labels", 3)]),
    "cross_entropy_loss_backward": lambda r: ([floats(r, 4, 3), r.integers(0, 3, 4)],
                                              [FIXED, ("labels", 3)]),
    "bce_with_logits_loss": lambda r: ([floats(r, 2, 3), r.random((2, 3)).astype(np.float32)],
                                       [ANY, FIXED]),
    "bce_with_logits_loss_backward": lambda r: (
        [floats(r, 2, 3), r.random((2, 3)).astype(np.float32)], [ANY, FIXED]),
    "hinge_loss": lambda r: ([floats(r, 4, 3), r.integers(0, 3, 4), 1.0],
                             [FIXED, ("labels", 3), FINITE]),
    "hinge_loss_backward": lambda r: ([floats(r, 4, 3), r.integers(0, 3, 4), 1.0],
                                      [FIXED, ("labels", 3), FINITE]),
    "im2col": lambda r: ([floats(r, 2, 3, 7, 6), 3, 2, 2, 1], [FIXED, INT1, INT1, INT1, INT0]),
    "col2im": lambda r: ([floats(r, 2, 18, 16), (2, 3, 7, 6), 3, 2, 2, 1],
                         [FIXED, ("shape", 4), INT1, INT1, INT1, INT0]),
    "conv2d_forward": lambda r: conv_call(r, backward=False),
    "conv2d_backward": lambda r: conv_call(r, backward=True),
    "maxpool2d_forward": lambda r: ([floats(r, 2, 3, 7, 7), 3, 2], [FIXED, INT1, INT1]),
    "maxpool2d_backward": lambda r: pool_backward_call(r, with_argmax=True),
    "avgpool2d_forward": lambda r: ([floats(r, 2, 3, 7, 7), 3, 2], [FIXED, INT1, INT1]),
    "avgpool2d_backward": lambda r: pool_backward_call(r, with_argmax=False),
    "batchnorm_forward": batchnorm_call,
    "batchnorm_backward": lambda r: (
        [floats(r, 4, 3), floats(r, 4, 3), floats(r, 3), (floats(r, 3), floats(r, 3))],
        [FIXED, FIXED, FIXED, ("saved",)]),
    "dropout_forward": lambda r: ([floats(r, 3, 4), 0.5, 7], [ANY, PROBABILITY, ("seed",)]),
    "dropout_backward": lambda r: ([floats(r, 3, 4), np.ones((3, 4), np.float32), 0.5],
                                   [ANY, FIXED, PROBABILITY]),
    "sgd_step": lambda r: optimizer_call(r, 0, [(0.1, NON_NEGATIVE), (0.01, NON_NEGATIVE)]),
    "momentum_step": lambda r: optimizer_call(
        r, 1, [(0.1, NON_NEGATIVE), (0.9, NON_NEGATIVE), (True, ("flag",)), (0.0, NON_NEGATIVE)]),
    "rmsprop_step": lambda r: optimizer_call(
        r, 1, [(0.1, NON_NEGATIVE), (0.99, UNIT), (1e-8, POSITIVE), (0.0, NON_NEGATIVE)]),
    "adam_step": lambda r: optimizer_call(
        r, 2, [(3, STEP), (0.1, NON_NEGATIVE), (0.9, PROBABILITY), (0.999, PROBABILITY),
               (1e-8, POSITIVE), (0.0, NON_NEGATIVE)]),
    "xavier_uniform": lambda r: ([(3, 4, 2), 5], [("shape", None), ("seed",)]),
    "he_normal": lambda r: ([(3, 4, 2), 5], [("shape", None), ("seed",)]),
    "conv2d_bias_relu_pool": lambda r: (
        [floats(r, 2, 3, 7, 6), floats(r, 4, 3, 3, 2), floats(r, 4), 1, 1, 2],
        [FIXED, FIXED, FIXED, INT1, INT0, INT1]),
    "quantize_int8": lambda r: ([floats(r, 3, 4), 0.05, 3], [ANY, POSITIVE, ZERO]),
    "int8_linear": lambda r: int8_call(r, conv=False, requantized=False),
    "int8_conv2d": lambda r: int8_call(r, conv=True, requantized=False),
    "int8_linear_to_int8": lambda r: int8_call(r, conv=False, requantized=True),
    "int8_conv2d_to_int8": lambda r: int8_call(r, conv=True, requantized=True),
    "maxpool2d_int8": lambda r: ([codes(r, 2, 3, 7, 7), 3, 2], [CODES, INT1, INT1]),
    "layernorm": lambda r: ([floats(r, 2, 3, 5), floats(r, 5), floats(r, 5), 1e-5],
                            [FIXED, FIXED, FIXED, POSITIVE]),
    "layernorm_backward": lambda r: (
        [floats(r, 2, 3, 5), floats(r, 2, 3, 5), floats(r, 5),
         (floats(r, 2, 3), np.abs(floats(r, 2, 3)))], [FIXED, FIXED, FIXED, ("saved",)]),
    "gelu": lambda r: ([floats(r, 2, 3), "tanh"], [ANY, ("choice",)]),
    "gelu_backward": lambda r: ([floats(r, 2, 3), floats(r, 2, 3), "tanh"],
                                [ANY, FIXED, ("choice",)]),
    "attention": lambda r: ([floats(r, 2, 3, 5, 4), floats(r, 2, 3, 6, 4), floats(r, 2, 3, 6, 4),
                             True, 0.5], [FIXED, FIXED, FIXED, ("flag",), OPTIONAL_POSITIVE]),
    "attention_backward": lambda r: (
        [floats(r, 2, 3, 5, 4), floats(r, 2, 3, 5, 4), floats(r, 2, 3, 6, 4),
         floats(r, 2, 3, 6, 4), floats(r, 2, 3, 5, 4), (floats(r, 2, 3, 5),), True, 0.5],
        [FIXED] * 5 + [("saved",), ("flag",), OPTIONAL_POSITIVE]),
}  # fmt: skip


def test_every_op_is_fuzzed():
    assert set(CALLS) == {name for name in s3.__all__ if callable(getattr(s3, name))} - {
        "available", "empty", "from_numpy", "to_numpy", "synchronize", "set_num_threads",
        "get_num_threads", "best_kernel", "build_info",
    }  # fmt: skip


def copies(args):
    """Fresh copies of the plain arrays (in-place ops modify them); the special views a mutation
    made (unaligned, strided, read-only) stay as they are, since they are what is being tested."""
    plain = ("C_CONTIGUOUS", "ALIGNED", "WRITEABLE")
    return [
        a.copy() if isinstance(a, np.ndarray) and all(a.flags[f] for f in plain) else a
        for a in args
    ]


def outcome_of(op, args):
    """("ok", (result, [array arguments after the call])) or ("error", the exception)."""
    try:
        result = getattr(s3, op)(*args)
    except (ValueError, TypeError) as error:
        return "error", error
    return "ok", (result, [a for a in args if isinstance(a, np.ndarray)])


def same(a, b):
    """Exactly equal results: arrays, floats, None, or tuples and lists of them."""
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
    return a == b or (a != a and b != b)


def check(op, args, expected, outcome, description):
    """Run a mutated call: RAISES must raise ValueError or TypeError (a ValueError names the op);
    SUCCEEDS must give `expected` (result and array arguments after the call); None: either."""
    status, value = outcome_of(op, copies(args))
    if outcome == RAISES:
        assert status == "error", f"{op} with {description}: no error"
        assert isinstance(value, TypeError) or str(value).startswith(f"{op}:"), (
            f"{op} with {description}: the message does not name the op: {value}"
        )
    elif outcome == SUCCEEDS:
        assert status == "ok", f"{op} with {description}: raised {value!r}"
        assert same(value, expected), f"{op} with {description}: a different result"


@pytest.mark.parametrize("op", sorted(CALLS))
def test_single_mutations(op):
    """Every argument of `op`, with every mutation of its kind."""
    rng = np.random.default_rng(secrets.randbits(32))
    args, kinds = CALLS[op](rng)
    status, expected = outcome_of(op, copies(args))
    assert status == "ok", f"{op}: the valid call failed: {expected}"
    tried = 0
    for position, kind in enumerate(kinds):
        for outcome, description, value in mutations(kind, args[position]):
            mutated = list(args)
            mutated[position] = value
            check(op, mutated, expected, outcome, f"argument {position}: {description}")
            tried += 1
    assert tried >= 10


MULTI_ARGUMENT_OPS = sorted(
    op for op, make in CALLS.items() if len(make(np.random.default_rng())[0]) > 1
)


@pytest.mark.parametrize("op", MULTI_ARGUMENT_OPS)
def test_random_pairs_of_mutations(op):
    """Two arguments mutated at once, at random: one invalid mutation is enough to raise."""
    seed = secrets.randbits(32)
    print(f"rng seed {seed}")
    rng = np.random.default_rng(seed)
    args, kinds = CALLS[op](rng)
    for _ in range(PAIRS):
        first, second = rng.choice(len(args), 2, replace=False)
        mutated, outcomes, what = list(args), [], []
        for position in (first, second):
            options = mutations(kinds[position], args[position])
            outcome, description, value = options[rng.integers(len(options))]
            mutated[position] = value
            outcomes.append(outcome)
            what.append(f"argument {position}: {description}")
        # One invalid mutation makes the call invalid, except a change of shape: two arguments
        # that must agree may both gain an axis (or an element) and agree again.
        pairs = zip(outcomes, what, strict=True)
        invalid = [o == RAISES and not d.endswith(SHAPE_CHANGES) for o, d in pairs]
        combined = RAISES if any(invalid) else None
        check(op, mutated, None, combined, " and ".join(what))


HUGE_WINDOWS = [
    ("im2col", lambda x: (x, 3, 3, 1, 10**6)),
    ("im2col", lambda x: (x, 3, 3, 1, BIG - 1)),
    ("im2col", lambda x: (x, BIG - 1, 3, 1, 0)),
    ("conv2d_forward", lambda x: (x, np.ones((2, 3, 3, 3), np.float32), np.ones(2, np.float32),
                                  1, 10**5)),
    ("maxpool2d_forward", lambda x: (x, 10**9, 1)),
    ("col2im", lambda x: (np.ones((1, 27, 1), np.float32), (1, 3, 10**5, 10**5), 3, 3, 1, 0)),
    ("xavier_uniform", lambda x: ((10**5, 10**5), 1)),
    ("he_normal", lambda x: ((2**31 - 1, 2**31 - 1, 4), 1)),
]  # fmt: skip


@pytest.mark.parametrize("op, make_args", HUGE_WINDOWS)
def test_huge_padding_windows_and_shapes_are_refused_before_allocating(op, make_args):
    x = np.ones((1, 3, 5, 5), np.float32)
    with pytest.raises(ValueError, match=op):
        getattr(s3, op)(*make_args(x))


def test_huge_padding_with_a_huge_stride_is_valid_and_reads_only_zeros():
    x = np.ones((1, 1, 5, 5), np.float32)
    cols = s3.im2col(x, 3, 3, BIG - 1, BIG - 1)  # (5 + 2p - 3) // p + 1 = 3 positions per axis
    assert cols.shape == (1, 9, 9)
    assert not np.isnan(cols).any()
    np.testing.assert_array_equal(cols[0, :, 0], 0.0)  # the first window lies in the padding


# ---- index arrays C trusts: validated on a private copy ------------------------------------------
# cffi releases the GIL during a C call, so another Python thread can run while C reads its
# arguments: a label or argmax changed after the check would make C write out of bounds.


def index_calls(rng):
    """(op, arguments, position of the index array) for every op whose C code trusts indices."""
    dy = floats(rng, 2, 3, 3, 3)
    scores, labels = floats(rng, 4, 3), rng.integers(0, 3, 4)
    pool = [dy, rng.integers(0, 49, dy.shape), (2, 3, 7, 7), 3, 2]
    return [
        ("maxpool2d_backward", pool, 1),
        ("cross_entropy_loss", [scores, labels], 1),
        ("cross_entropy_loss_backward", [scores, labels], 1),
        ("hinge_loss", [scores, labels, 1.0], 1),
        ("hinge_loss_backward", [scores, labels, 1.0], 1),
    ]


@pytest.mark.parametrize("case", range(5))
def test_index_arrays_reach_c_as_a_private_copy(monkeypatch, case):
    op, args, position = index_calls(np.random.default_rng(case))[case]
    module = sys.modules[getattr(s3, op).__module__]
    passed, original = [], module.pointer
    monkeypatch.setattr(module, "pointer", lambda a: (passed.append(a), original(a))[1])
    getattr(s3, op)(*args)
    indices = [a for a in passed if a is not None and a.dtype.kind == "i"]
    assert len(indices) == 1, f"{op}: expected one index array passed to C, got {len(indices)}"
    assert not np.shares_memory(indices[0], args[position]), f"{op} hands C the caller's array"


def test_changing_argmax_from_another_thread_never_reaches_c():
    """A thread flips argmax between valid and far out-of-range values during the calls: each
    call either succeeds or refuses (a ValueError), and never writes out of bounds."""
    rng = np.random.default_rng(3)
    dy = floats(rng, 2, 3, 3, 3)
    valid = rng.integers(0, 49, dy.shape)
    argmax, stop = valid.copy(), threading.Event()

    def flip():
        while not stop.is_set():
            argmax[...] = 2**40
            argmax[...] = valid

    flipper = threading.Thread(target=flip)
    flipper.start()
    try:
        outcomes = {"ok": 0, "refused": 0}
        for _ in range(300):
            try:
                s3.maxpool2d_backward(dy, argmax, (2, 3, 7, 7), 3, 2)
                outcomes["ok"] += 1
            except ValueError:
                outcomes["refused"] += 1
    finally:
        stop.set()
        flipper.join()
    assert sum(outcomes.values()) == 300


def test_set_num_threads_is_bounded_before_openmp_sees_it():
    """Thousands of OpenMP threads make libgomp end the process on the next large op."""
    before = s3.get_num_threads()
    limit = rf"^set_num_threads: n must be an int in \[0, {s3.MAX_THREADS}\]"
    with pytest.raises(ValueError, match=limit):
        s3.set_num_threads(100000)
    for wrong in (2.5, True, "2", None):
        with pytest.raises(TypeError, match="^set_num_threads: n must be an int"):
            s3.set_num_threads(wrong)
    assert s3.get_num_threads() == before

"""The same bad call gets the same error in every tier, over the whole malformed-call corpus.

CONTRACT.md, "Bad input". The corpus is built from the contract itself (grader/ops.py's OPS):
for every op, a valid call from the op's own builder (a backward's arguments from its forward,
run on stage 2), then every argument in turn replaced by every mutation of its kind:
  - arrays: not an array, a zero-size dimension, an axis more or less, an element more, ints
    where floats are expected, and, in tiers whose arrays are NumPy arrays, other dtypes, 0-d
    arrays, big-endian bytes and views (strided, unaligned, read-only);
  - index arrays (labels, argmax): out of range, floats, bools, other integer dtypes;
  - int8 codes (the int8 ops' x and w): floats, other integer dtypes; zero points (x_zero,
    zero_point, y_zero) out of range;
  - ints and numbers: out of range, NaN, infinities, bools, strings, None, huge values, and
    NumPy scalars (np.int16(200) must be converted before use and give the right result);
  - flags, names (gelu's approximate), shapes (x_shape, an init's shape), a number that may be
    None (attention's scale) and the saved tuples of batchnorm, layernorm and attention.
Each mutated call runs on every tier; the tiers must all succeed or all raise the same exception
type with the same message. A mutation marked RAISES must raise (TypeError or ValueError only),
one marked SUCCEEDS must succeed and give the tier's result for the valid call; the others
(AGREE: an axis more for an op of any rank, a zero where a range may allow it) must only agree.
A mutation a tier cannot receive (a float64 array in stage 1, whose floats are Python's) is not
run there.
"""

import importlib
import signal
import time

import numpy as np
import pytest

import argcheck
from contract import output_names
from grader import ops as contract_ops
from tests.array_views import negative_strides, non_contiguous, read_only, unaligned, with_first

RAISES, SUCCEEDS, AGREE = "raises", "succeeds", "agree"
TIER_MODULES = ("stage1_python", "stage2_numpy", "stage3_c", "stage4_cuda.numba_impl")


def available_tiers():
    """The tiers that run here, by module name."""
    tiers = {}
    for name in TIER_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError:
            continue
        if module.available()[0]:
            tiers[name] = module
    return tiers


def uses_argcheck(tier):
    """Whether the checks the tier's ops call are argcheck's (bound to the tier's adapter)."""
    checks = getattr(importlib.import_module(tier.matmul.__module__), "checks", None)
    return callable(getattr(checks, "matmul", None))


RUNNING = available_tiers()
TIERS = RUNNING


@pytest.mark.parametrize("name", list(RUNNING))
def test_every_tier_checks_its_arguments_with_argcheck(name):
    assert uses_argcheck(RUNNING[name]), f"{name} has checks of its own"


class Unrealizable(Exception):
    """A mutation this tier cannot receive (e.g. a float64 array where floats are Python's)."""


def has_numpy_arrays(tier):
    return isinstance(tier.from_numpy(np.zeros(1, np.float32)), np.ndarray)


def native(tier, value):
    """A NumPy value as the contract hands it to a tier: arrays through from_numpy."""
    if isinstance(value, np.ndarray):
        return tier.from_numpy(value)
    if isinstance(value, tuple) and value and isinstance(value[0], np.ndarray):
        return tuple(tier.from_numpy(item) for item in value)
    return value


def through(make):
    """A mutation every tier receives through from_numpy: `make(value)` is a NumPy value."""
    return lambda tier, value: native(tier, make(value))


def as_is(obj):
    """A mutation that hands every tier the same Python object."""
    return lambda tier, value: obj


def numpy_only(make):
    """A mutation only tiers whose arrays are NumPy arrays can receive (other dtypes, views)."""

    def realize(tier, value):
        if not has_numpy_arrays(tier):
            raise Unrealizable
        return make(value)

    return realize


def has_device_arrays(tier):
    return hasattr(tier.from_numpy(np.zeros(1, np.float32)), "copy_to_host")  # numba's


def kept_dtype(tier, value, otherwise):
    """`value` with its dtype: itself where arrays are NumPy's, copied as it is to the device where
    they are device arrays (from_numpy would make floats float32), else `otherwise(value)`."""
    if has_numpy_arrays(tier):
        return value
    if has_device_arrays(tier):
        from numba import cuda

        return cuda.to_device(value)
    return otherwise(value)


def float64_array(tier, value):
    """`value` as float64: Python floats in stage 1, a float64 array elsewhere."""
    return kept_dtype(tier, value.astype(np.float64), tier.from_numpy)


def bool_array(tier, value):
    return kept_dtype(tier, value.astype(bool), np.ndarray.tolist)


def one_axis_less(array):
    return array.reshape(-1) if array.ndim > 1 else array[0]  # a 1-D array's becomes a scalar


NOT_ARRAYS = [None, "x", 1.5, {"a": 1}, object()]

# ---- mutations of each kind of argument: (description, outcome, realize(tier, value)) ------------


def array_mutations(in_place):
    views = (RAISES if in_place else SUCCEEDS)
    out = [(f"a {type(v).__name__}", RAISES, as_is(v)) for v in NOT_ARRAYS]
    out += [
        ("a zero-size dimension", RAISES, through(lambda v: np.zeros((0, *v.shape[1:]), v.dtype))),
        ("an extra axis", AGREE, through(lambda v: v[None])),
        ("one axis less", AGREE, through(one_axis_less)),
        ("one element more", AGREE, through(lambda v: np.concatenate([v, v[:1]]))),
        ("int64 values", RAISES, through(lambda v: np.round(v).astype(np.int64))),
    ]
    out += [(f"dtype {d}", RAISES, numpy_only(lambda v, d=d: v.astype(d)))
            for d in ("float64", "float16", "bool", "complex64", "object", ">f4")]  # fmt: skip
    out += [
        ("a 0-d array", RAISES, numpy_only(lambda v: np.array(v.flat[0]))),
        ("a strided view", views, numpy_only(non_contiguous)),
        ("negative strides", views, numpy_only(negative_strides)),
        ("an unaligned copy", views, numpy_only(unaligned)),
        ("a read-only copy", views, numpy_only(read_only)),
    ]
    return out


def index_mutations(limit):
    out = [(f"a {type(v).__name__}", RAISES, as_is(v)) for v in NOT_ARRAYS]
    return out + [
        ("-1", RAISES, through(lambda v: with_first(v, -1))),
        (f"{limit} (one past the last index)", RAISES, through(lambda v: with_first(v, limit))),
        ("2**62", RAISES, through(lambda v: np.full_like(v, 2**62))),
        ("floats", RAISES, float64_array),
        ("bools", RAISES, bool_array),
        ("a zero-size dimension", RAISES, through(lambda v: v[:0])),
        ("an extra axis", RAISES, through(lambda v: v[None])),
        ("one element more", RAISES, through(lambda v: np.concatenate([v, v[:1]]))),
        ("uint64 beyond int64", RAISES,
         numpy_only(lambda v: np.full(v.shape, 2**63 + 5, np.uint64))),
        ("int16", SUCCEEDS, numpy_only(lambda v: v.astype(np.int16))),
        ("uint8", SUCCEEDS, numpy_only(lambda v: v.astype(np.uint8))),
        ("a strided view", SUCCEEDS, numpy_only(non_contiguous)),
    ]  # fmt: skip


def int8_mutations():
    """int8 codes (the int8 ops' x and w): other dtypes refused; stage 1's ints have no dtype."""
    out = [(f"a {type(v).__name__}", RAISES, as_is(v)) for v in NOT_ARRAYS]
    out += [
        ("a zero-size dimension", RAISES, through(lambda v: np.zeros((0, *v.shape[1:]), v.dtype))),
        ("one axis less", AGREE, through(one_axis_less)),
        ("floats", RAISES, float64_array),
        ("a strided view", SUCCEEDS, numpy_only(non_contiguous)),
    ]
    return out + [(f"dtype {d}", RAISES, numpy_only(lambda v, d=d: v.astype(d)))
                  for d in ("int64", "uint8", "int16")]  # fmt: skip


def zero_point_mutations():
    """A zero point: an int in [-128, 127]."""
    out = [(repr(v), RAISES, as_is(v)) for v in (128, -129, 2**63, 1.5, np.nan, True, "2", None)]
    return out + [("-1", AGREE, as_is(-1)), ("np.int16", SUCCEEDS, numpy_int(np.int16))]


def int_mutations():
    out = [(repr(v), RAISES, as_is(v)) for v in (-1, 1.5, np.nan, True, np.True_, "2", None)]
    out += [("the value as a float", RAISES, lambda tier, v: float(v))]
    out += [(repr(v), AGREE, as_is(v))
            for v in (0, argcheck.MAX_INT, argcheck.MAX_INT + 1, 2**63, 10**30)]  # fmt: skip
    numpy_ints = (np.int16, np.uint8, np.int64)
    return out + [(f"np.{d.__name__}", SUCCEEDS, numpy_int(d)) for d in numpy_ints]


def numpy_int(dtype):
    """The int as a NumPy scalar of `dtype`, where it fits."""

    def realize(tier, value):
        if not np.iinfo(dtype).min <= value <= np.iinfo(dtype).max:
            raise Unrealizable
        return dtype(value)

    return realize


def real_mutations():
    bad = (np.nan, np.inf, -np.inf, 10**400, True, np.True_, "0.5", None, 1 + 1j)
    out = [(repr(v), RAISES, as_is(v)) for v in bad]
    out += [(repr(v), AGREE, as_is(v)) for v in (-1.0, 0.0, 1.0, 1.5, 1e300, -(2**70))]
    return out + [("np.float64", SUCCEEDS, lambda tier, v: np.float64(v))]


def optional_real_mutations():
    """A number whose default is None (attention's scale), left at None by the valid call: a
    number's mutations but None itself and np.float64(None) (a NaN, already among them)."""
    return [mutation for mutation in real_mutations() if mutation[0] not in ("None", "np.float64")]


def flag_mutations():
    out = [(repr(v), RAISES, as_is(v)) for v in (1, 0, "True", None, 0.0)]
    return out + [("np.bool_", SUCCEEDS, lambda tier, v: np.bool_(v))]


def shape_mutations(rank):
    def edit(first):
        return lambda tier, v: (first, *v[1:])

    return [
        ("()", RAISES, as_is(())),
        ("a zero", RAISES, edit(0)),
        ("a negative size", RAISES, edit(-1)),
        ("a float size", RAISES, edit(1.5)),
        ("a bool size", RAISES, edit(True)),
        ("a size of 2**64", RAISES, edit(2**64)),
        ("huge sizes", RAISES, lambda tier, v: (10**6,) * len(v)),
        ("a string", RAISES, as_is("2, 3")),
        ("None", RAISES, as_is(None)),
        ("one size more", AGREE if rank is None else RAISES, lambda tier, v: (*v, 1)),
        ("a list", SUCCEEDS, lambda tier, v: list(v)),
        ("np.int16 sizes", SUCCEEDS, lambda tier, v: tuple(np.int16(s) for s in v)),
    ]


def choice_mutations():
    """A name among a few (gelu's approximate): other strings, other case, not a string."""
    out = [(repr(v), RAISES, as_is(v)) for v in ("fastest", "", "TANH", 0, 1.0, None, True)]
    return out + [("np.str_", SUCCEEDS, lambda tier, v: np.str_(v))]


def saved_mutations():
    """A forward's saved tuple ((mean, invstd), attention's (lse,)): its first array alone, one
    array more, None, the first array short, a list."""
    return [
        ("a single array", RAISES, lambda tier, v: tier.from_numpy(v[0])),
        ("one array more", RAISES, lambda tier, v: native(tier, (*v, v[-1]))),
        ("None", RAISES, as_is(None)),
        ("a short first array", RAISES, lambda tier, v: native(tier, (v[0][:-1], *v[1:]))),
        ("a list", SUCCEEDS, lambda tier, v: list(native(tier, v))),
    ]


def mutations(op, name, args):
    """Every mutation of argument `name` of `op`, whose valid call is `args`."""
    value = args[name]
    if isinstance(value, np.ndarray) and value.dtype == np.int8:
        return int8_mutations()
    if name in ("x_zero", "zero_point", "y_zero"):
        return zero_point_mutations()
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return array_mutations(in_place=name in op.inplace)
    if isinstance(value, np.ndarray):  # labels [N] in [0, C), or argmax in [0, H*W)
        limit = next(iter(args.values())).shape[1] if name == "labels" else np.prod(
            args["x_shape"][2:]
        )
        return index_mutations(int(limit))
    if isinstance(value, tuple) and isinstance(value[0], np.ndarray):
        return saved_mutations()
    if isinstance(value, tuple):
        return shape_mutations(None if name == "shape" else len(value))
    if isinstance(value, bool):
        return flag_mutations()
    if isinstance(value, str):
        return choice_mutations()
    if isinstance(value, int):
        return int_mutations()
    if value is None:
        return optional_real_mutations()
    return real_mutations()


# ---- valid calls from the contract -------------------------------------------------------------


def valid_call(op, rng):
    """{argument: NumPy value} for a valid call of `op`, from its builder (or its forward's)."""
    if op.forward is None:
        args = op.build(rng, op.cases[0])
        return {name: args[name] for name in op.params}
    forward = contract_ops.OPS[op.forward]
    sources = forward.build(rng, op.cases[0])
    reference = TIERS["stage2_numpy"]
    forward_args = (np.copy(v) if isinstance(v, np.ndarray) else v for v in
                    (sources[n] for n in forward.params))  # the forward may update its arguments
    result = getattr(reference, forward.name)(*forward_args)
    names = output_names(forward)
    sources.update(zip(names, result if len(names) > 1 else (result,), strict=True))
    first = sources[names[0]]
    sources["dy"] = rng.standard_normal(np.shape(first)).astype(np.float32)
    if "x" in sources:
        sources["x_shape"] = tuple(int(size) for size in sources["x"].shape)
    return {name: sources[name] for name in op.params}


def to_plain(tier, value):
    """A tier's result as NumPy values, to compare a tier's result with its own."""
    if isinstance(value, tuple):  # several outputs; a list is one of stage 1's arrays
        return tuple(to_plain(tier, item) for item in value)
    if value is None or isinstance(value, float | int):
        return value
    return np.asarray(tier.to_numpy(value))


class Stalled(Exception):
    """A call that ran past CALL_SECONDS: it should have been refused at once."""


CALL_SECONDS = 10


def _stall(signum, frame):
    raise Stalled(f"still running after {CALL_SECONDS} s")


def run(tier, op, natives):
    """("ok", (result, in-place arguments after the call)) or ("error", type name, message)."""
    previous = signal.signal(signal.SIGALRM, _stall)
    signal.alarm(CALL_SECONDS)  # a stall is a failure, not a hung test run
    try:
        result = getattr(tier, op.name)(*natives.values())
    except Exception as error:  # the test reports any exception; only two kinds are allowed
        return ("error", type(error).__name__, str(error))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    updated = [to_plain(tier, natives[name]) for name in op.inplace]
    return ("ok", (to_plain(tier, result), updated))


def same(a, b):
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return a.shape == np.shape(b) and np.array_equal(a, b, equal_nan=True)
    return a == b or (a != a and b != b)


def describe(outcomes):
    return "\n".join(
        f"  {tier}: {o[1]}: {o[2]}" if o[0] == "error" else f"  {tier}: succeeded"
        for tier, o in outcomes.items()
    )


@pytest.mark.skipif(len(TIERS) < 2, reason="fewer than two tiers run here")
@pytest.mark.parametrize("op_name", list(contract_ops.OPS))
def test_every_tier_gives_the_same_error_for_every_bad_call(op_name):
    op = contract_ops.OPS[op_name]
    rng = np.random.default_rng(7)
    args = valid_call(op, rng)
    valid = {}
    for tier_name, tier in TIERS.items():
        valid[tier_name] = run(tier, op, {n: native(tier, v) for n, v in args.items()})
        assert valid[tier_name][0] == "ok", f"{op_name}: the valid call failed: {valid[tier_name]}"
    problems, tried = [], 0
    for name in op.params:
        for description, expected, realize in mutations(op, name, args):
            outcomes = {}
            for tier_name, tier in TIERS.items():
                try:
                    mutated = {n: native(tier, v) for n, v in args.items()}
                    mutated[name] = realize(tier, args[name])
                except Unrealizable:
                    continue
                outcomes[tier_name] = run(tier, op, mutated)
            tried += 1
            what = f"{op_name}({name} = {description})"
            errors = {o[1:] for o in outcomes.values() if o[0] == "error"}
            succeeded = [t for t, o in outcomes.items() if o[0] == "ok"]
            if len(errors) > 1 or (errors and succeeded):
                problems.append(f"{what}: the tiers disagree\n{describe(outcomes)}")
            elif errors and next(iter(errors))[0] not in ("TypeError", "ValueError"):
                problems.append(f"{what}: not a TypeError or ValueError\n{describe(outcomes)}")
            elif errors and not next(iter(errors))[1].startswith(f"{op_name}: "):
                problems.append(f"{what}: the message does not name the op\n{describe(outcomes)}")
            elif expected == RAISES and succeeded:
                problems.append(f"{what}: accepted\n{describe(outcomes)}")
            elif expected == SUCCEEDS and errors:
                problems.append(f"{what}: refused\n{describe(outcomes)}")
            elif expected == SUCCEEDS:
                for tier_name in succeeded:
                    if not same(outcomes[tier_name][1], valid[tier_name][1]):
                        problems.append(f"{what}: {tier_name} gives another result than the "
                                        "valid call")  # fmt: skip
    assert tried >= 10
    assert not problems, f"{len(problems)} of {tried} bad calls:\n" + "\n".join(problems)


HUGE_CALLS = [  # each would allocate far more than argcheck.MAX_ELEMENTS elements, or loop as long
    ("im2col", lambda x: (x, 3, 3, 1, 2**31 - 1)),
    ("im2col", lambda x: (x, 3, 3, 1, 10**6)),
    ("conv2d_forward", lambda x: (x, np.ones((2, 3, 3, 3), np.float32), np.ones(2, np.float32),
                                  1, 10**5)),
    ("col2im", lambda x: (np.ones((1, 27, 1), np.float32), (1, 3, 10**5, 10**5), 3, 3, 1, 0)),
    ("avgpool2d_backward", lambda x: (np.ones((1, 1, 1, 1), np.float32), (1, 1, 10**5, 10**5),
                                      10**5, 1)),
    ("xavier_uniform", lambda x: ((10**5, 10**5), 1)),
    ("he_normal", lambda x: ((2**31 - 1, 2**31 - 1, 4), 1)),
]  # fmt: skip


@pytest.mark.parametrize(("op_name", "make_args"), HUGE_CALLS)
def test_every_tier_refuses_huge_outputs_at_once_with_the_same_message(op_name, make_args):
    x = np.ones((1, 3, 5, 5), np.float32)
    messages = set()
    for tier in TIERS.values():
        start = time.perf_counter()
        with pytest.raises(ValueError, match=f"^{op_name}: ") as raised:
            getattr(tier, op_name)(*(native(tier, a) for a in make_args(x)))
        assert time.perf_counter() - start < 1.0, f"{tier.NAME} took long to refuse {op_name}"
        messages.add(str(raised.value))
    assert len(messages) == 1, messages


def test_numpy_integer_scalars_are_converted_before_use():
    """np.int16(200) * np.int16(200) wraps around in int16: each tier must use Python ints."""
    x = np.random.default_rng(1).standard_normal((1, 1, 200, 200)).astype(np.float32)
    for tier in TIERS.values():
        plain = to_plain(tier, tier.avgpool2d_forward(tier.from_numpy(x), 200, 200))
        numpy_ints = to_plain(tier, tier.avgpool2d_forward(tier.from_numpy(x), np.int16(200),
                                                           np.int16(200)))  # fmt: skip
        np.testing.assert_array_equal(numpy_ints, plain)
        np.testing.assert_allclose(plain.ravel(), [x.mean()], rtol=1e-5, atol=1e-7)


def test_a_negative_running_variance_gives_nan_in_its_channel_as_in_pytorch():
    """Running statistics are data (not range-checked): eval batchnorm normalizes with them, and
    the square root of a negative variance is NaN, in that channel only (torch.batch_norm)."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    for tier in TIERS.values():
        if getattr(tier, "SIMULATOR", False):  # its math.sqrt raises where a GPU's gives NaN
            continue
        running_var = tier.from_numpy(np.array([1.0, -2.0, 1.0], np.float32))
        y, _ = tier.batchnorm_forward(
            tier.from_numpy(x), *(tier.from_numpy(np.full(3, v, np.float32)) for v in (1, 0, 0)),
            running_var, False,
        )  # fmt: skip
        y = np.asarray(tier.to_numpy(y))
        assert np.isnan(y[:, 1]).all() and np.isfinite(y[:, [0, 2]]).all(), (tier.NAME, y)

"""NaN and Inf propagation: a NaN in, the NaN out where PyTorch has it.

For every case of an op, each float input in turn gets one random element replaced by NaN, +Inf
and -Inf, and the graded tier must answer with the same pattern as the reference tier: NaN where
the reference has NaN (when a NaN went in), a non-finite value wherever the reference has one, a
finite value wherever the reference has one (a NaN must not spread further than in PyTorch), and
the same integer outputs (max pooling's argmax picks the NaN, as PyTorch's does). Finite values
themselves are the correctness check's business.

The reference tiers' patterns are PyTorch's: tests/test_nan_oracle.py checks every op of stages
1, 2 and 3 against torch with the same poisoned inputs, so the grader itself needs no torch.
"""

import time
import warnings
from contextlib import contextmanager

import numpy as np

from . import crossing
from .builders import OPTIMIZER_STATE
from .compare import describe_args, format_index, format_value
from .ops import OPS
from .records import FAILED, PASSED, SKIPPED, Result, TierError

POISONS = (("a NaN", np.nan), ("an +Inf", np.inf), ("a -Inf", -np.inf))
FLOATING_POINT_WARNINGS = r"(invalid value|overflow|divide by zero|underflow) encountered"


@contextmanager
def poison_expected():
    """NumPy's floating-point warnings silenced while the tiers compute on poisoned inputs: NaN and
    Inf are the point here, and the learner must not see warnings the grader caused. np.errstate
    covers this thread; the warnings filter covers threads a tier starts (numba's CUDA simulator
    runs every GPU thread as a Python thread, with NumPy's default error state). Other warnings
    still show."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.filterwarnings("ignore", FLOATING_POINT_WARNINGS, RuntimeWarning)
        yield


def poisons(op, name):
    """The values injected into input `name`: a variance or an average of squares (batchnorm's
    running_var, RMSprop's s, Adam's v) is never negative, so it gets no -Inf."""
    squares = {state for state, kind in OPTIMIZER_STATE.get(op.name, ()) if kind == "square"}
    if name in squares or name == "running_var":
        return POISONS[:2]
    return POISONS


def float_inputs(op, args):
    """The poisonable inputs of a call: [(label, argument name, position in a tuple or None)]."""
    sites = []
    for name in op.params:
        value = args[name]
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            sites.append((name, name, None))
        elif isinstance(value, tuple) and value and isinstance(value[0], np.ndarray):
            sites += [(f"{name}[{i}]", name, i) for i, item in enumerate(value)]
    return sites


def has_float_inputs(op):
    """Whether `op` takes a float array to poison (a backward always does: dy or y)."""
    if op.forward is not None:
        return True
    return bool(float_inputs(op, op.build(np.random.default_rng(0), op.cases[0])))


def poison(args, site, value, rng):
    """A copy of `args` with one random element of the input `site` set to `value`; also returns
    that element's description, e.g. 'x[3, 1]'."""
    label, name, position = site
    target = args[name] if position is None else args[name][position]
    index = tuple(int(rng.integers(0, n)) for n in target.shape)
    changed = target.copy()
    changed[index] = value
    if position is None:
        replaced = changed
    else:
        replaced = tuple(changed if i == position else item for i, item in enumerate(args[name]))
    return {**args, name: replaced}, format_index(label, index)


def refused_or_answer(session, tier, op, args, site, role):
    """The outputs of `op` on poisoned `args`, or None when the tier refuses them with a ValueError
    naming the poisoned argument: the contract refuses some values (a negative running variance),
    which makes them bad input, not a propagation case."""
    try:
        with poison_expected():
            return session.call(tier, op, args, role)
    except TierError as error:
        if isinstance(error.error, ValueError) and site[1] in str(error.error):
            return None
        raise


def propagation_problem(op, received, expected, poisoned, what):
    """None when `received` has `expected`'s pattern of NaN, Inf and finite values (see above).

    `poisoned` names the input element set to `what` (e.g. 'a NaN'), for the message.
    """
    structure = op.outputs + op.inplace
    flat_received = crossing.flatten(received, structure)
    for name, want in crossing.flatten(expected, structure).items():
        if want is None and flat_received[name] is None:  # skipped on request (need_dx=False)
            continue
        got, want = np.asarray(flat_received[name]), np.asarray(want)
        if got.shape != want.shape:
            return f"{op.name}: {name} has shape {list(got.shape)}, expected {list(want.shape)}"
        bad = _wrong_elements(got, want, what)
        count = int(np.count_nonzero(bad))
        if count == 0:
            continue
        index = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
        out, got_value, want_value = format_index(name, index), got[index], want[index]
        if want.dtype.kind in "iu":
            message = f"with {what} in {poisoned}, {out} is {got_value}; PyTorch gives {want_value}"
        elif np.isfinite(want_value):
            message = (
                f"{what} in {poisoned} spread to {out} ({format_value(got_value)}); "
                f"PyTorch keeps it finite ({format_value(want_value)})"
            )
        else:
            keeps = "keeps the NaN" if np.isnan(want_value) else f"gives {want_value}"
            message = (
                f"{what} in {poisoned} came out as {format_value(got_value)} in {out}; "
                f"PyTorch {keeps}"
            )
        if count > 1:
            message += f" ({count} of {got.size} elements of {name} are wrong)"
        return f"{op.name}: {message}"
    return None


def _wrong_elements(got, want, what):
    """Where `got` breaks `want`'s pattern: integers must be equal; floats must be NaN where `want`
    is NaN (when a NaN went in), non-finite where it is non-finite, finite where it is finite."""
    if want.dtype.kind in "iu":
        return got != want
    lost_nan = np.isnan(want) & ~np.isnan(got) if what == "a NaN" else False
    hidden = ~np.isfinite(want) & np.isfinite(got)
    spread = np.isfinite(want) & ~np.isfinite(got)
    return lost_nan | hidden | spread


def check_nan(session, task):
    """Every case of `task.op` with NaN, +Inf and -Inf injected into each float input in turn."""
    op = OPS[task.op]
    if session.reference is None:
        return Result(op.name, "nan", SKIPPED, f"no reference tier: {session._reference_reason}")
    started, calls = time.perf_counter(), 0
    for case, size in enumerate(op.cases):
        rng = session.rng(task, case)
        args, _ = session.arguments(op, size, rng, session.reference, "reference")
        sites = float_inputs(op, args)
        if not sites:
            return Result(op.name, "nan", SKIPPED, "no float input to poison")
        for site in sites:
            for what, value in poisons(op, site[1]):
                poisoned_args, poisoned = poison(args, site, value, rng)
                expected = refused_or_answer(
                    session, session.reference, op, poisoned_args, site, "reference"
                )
                if expected is None:
                    continue
                with poison_expected():
                    received = session.call(session.graded, op, poisoned_args, "graded")
                calls += 1
                problem = propagation_problem(op, received, expected, poisoned, what)
                if problem:
                    case_text = f"case {case + 1} of {len(op.cases)}: {describe_args(args)}"
                    return Result(
                        op.name,
                        "nan",
                        FAILED,
                        f"{problem} [{case_text}]",
                        seconds=time.perf_counter() - started,
                    )
    return Result(
        op.name, "nan", PASSED, f"{calls} poisoned calls", seconds=time.perf_counter() - started
    )

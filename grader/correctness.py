"""Correctness: the graded tier against the reference tier, and distribution checks.

Every case of an op gets fresh random inputs (grader/builders.py); both tiers receive the same
values, the graded tier's allocations are NaN-poisoned, and every output (and every argument
updated in place) must match within the tolerance of the tier pair. Dropout masks come from the
shared random stream, so they must match exactly; initializers are compared by value here and by
distribution in `check_distribution`.
"""

import math
import time

import numpy as np

from . import crossing
from .compare import describe_args, dtype_problem, mismatch
from .ops import OPS, correctness_cases
from .poison import holds_poison
from .records import FAILED, PASSED, SKIPPED, Result, TierError
from .refusals import refusal_problem
from .tolerance import Tolerance, tolerance


def check_correct(session, task):
    """Every correctness case of `task.op` (of its rung `task.kernel`): graded against reference."""
    op = OPS[task.op]
    rung = f"kernel {task.kernel}" if task.kernel else ""
    if session.reference is None:
        return Result(
            op.name, "correct", SKIPPED, f"no reference tier: {session._reference_reason}"
        )
    started = time.perf_counter()
    reference_bits = session.reference.tier.bits
    cases = correctness_cases(op, session.case_kind)
    for index, size in enumerate(cases):
        rng = session.rng(task, index)
        args, _ = session.arguments(op, size, rng, session.reference, "reference")
        expected = session.call(session.reference, op, args, "reference")
        tol = tolerance(op, session.graded_bits, reference_bits, args, session.gpu)
        case = f"case {index + 1} of {len(cases)}: {describe_args(args)}"
        note = op.note(size) if op.note else None
        case += f"; {note}" if note else ""
        message = None
        try:
            # Twice: a result must not share memory with the first call's (grader/ownership.py),
            # and must not depend on what an earlier call left behind.
            for call in ("", "on a second call with the same arguments: "):
                received = session.call(session.graded, op, args, "graded", task.kernel)
                message = compare_outputs(session, op, received, expected, tol, args=args)
                if message:
                    message = call + message
                    break
        except TierError as error:
            error.case = case  # an exception at |x| = 1000 says so
            raise
        if message:
            return Result(
                op.name,
                "correct",
                FAILED,
                f"{message} [{case}]",
                size=rung,
                seconds=time.perf_counter() - started,
            )
        if index == 0:
            first_case, first_args = case, args
    # Arguments the contract refuses, made from the first case: refused, with a ValueError.
    problem = refusal_problem(session, op, first_args)
    seconds = time.perf_counter() - started
    if problem:
        return Result(op.name, "correct", FAILED, f"{problem} [{first_case}]", rung, seconds)
    return Result(op.name, "correct", PASSED, f"{len(cases)} cases", rung, seconds)


def compare_outputs(session, op, received, expected, tol, args=None, bits=None):
    """Every problem among an op's outputs (dtype or values), joined by ' | ', or None.

    With the call's `args`, an output holding the grader's NaN poison is called again to tell
    elements never written from NaNs the op computed (Session.unwritten). `bits` is the float
    precision `received` must have: the graded tier's unless said.
    """
    structure = op.outputs + op.inplace
    flat_received = crossing.flatten(received, structure)
    flat_expected = crossing.flatten(expected, structure)
    problems, unwritten = [], None
    for name, want in flat_expected.items():
        got = flat_received[name]
        if want is None or got is None:  # skipped on request (need_dx=False): skipped by both
            if (want is None) != (got is None):
                found, wanted = ("an array", "None") if want is None else ("None", "an array")
                problems.append(f"{op.name}: {name} is {found}, expected {wanted}")
            continue
        if name != "loss":
            problem = dtype_problem(op.name, name, got, bits or session.graded_bits)
            if problem:
                problems.append(problem)
                continue
        exact = want.dtype.kind in "iu" or name == "mask"
        never_written = None
        if args is not None and name not in op.inplace and np.any(holds_poison(got)):
            unwritten = unwritten or session.unwritten(op, args)
            never_written = unwritten[name] & holds_poison(got)
        problem = mismatch(
            op.name, name, got, want, None if exact else tol, never_written=never_written
        )
        if problem:
            problems.append(problem)
    return " | ".join(problems) or None


def check_distribution(session, task):
    """Statistics the op must show on its own: initializers' spread, dropout's keep rate."""
    op = OPS[task.op]
    if session.graded.tier.simulated:
        return Result(op.name, "dist", SKIPPED, "the CUDA simulator cannot draw enough samples in "
                      "time; the correctness check compares every value with the reference")
    started = time.perf_counter()
    checker = _dropout_problems if op.name == "dropout_forward" else _init_problems
    for index, size in enumerate(op.dist):
        rng = session.rng(task, index)
        args, _ = session.arguments(op, size, rng, session.graded, "graded")
        problem = checker(session, op, args)
        if problem:
            return Result(op.name, "dist", FAILED, f"{op.name}: {problem} [{describe_args(args)}]")
    return Result(
        op.name, "dist", PASSED, f"{len(op.dist)} shapes", seconds=time.perf_counter() - started
    )


def fans(shape):
    """(fan_in, fan_out) as PyTorch computes them (CONTRACT.md, Initialization)."""
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def _init_problems(session, op, args):
    weights = session.call(session.graded, op, args, "graded")["w"].astype(np.float64)
    if weights.shape != args["shape"]:
        return f"w has shape {list(weights.shape)}, expected {list(args['shape'])}"
    if not np.all(np.isfinite(weights)):
        return "w holds NaN or Inf"
    fan_in, fan_out = fans(args["shape"])
    if op.name == "xavier_uniform":
        bound = math.sqrt(6 / (fan_in + fan_out))
        std, spread_error = bound / math.sqrt(3), 0.45  # sd of a uniform's sample std: 0.45/sqrt(n)
        if np.abs(weights).max() > bound * (1 + 1e-6):
            return f"max |w| = {np.abs(weights).max():.6g} exceeds the bound {bound:.6g}"
    else:
        std, spread_error = math.sqrt(2 / fan_in), 0.71  # a normal's: 0.71/sqrt(n)
        if np.abs(weights).max() > 7 * std:
            return (
                f"max |w| = {np.abs(weights).max():.6g} is over 7 standard deviations ({std:.4g})"
            )
    n = weights.size
    if abs(weights.mean()) > 5 * std / math.sqrt(n):
        return f"mean {weights.mean():.4g} is not 0 (standard deviation {std:.4g}, n = {n})"
    if abs(weights.std() / std - 1) > 5 * spread_error / math.sqrt(n):
        return f"standard deviation {weights.std():.6g}, expected {std:.6g} (n = {n})"
    again = session.call(session.graded, op, args, "graded")["w"]
    other = session.call(session.graded, op, {**args, "seed": args["seed"] + 1}, "graded")["w"]
    if not np.array_equal(again, weights.astype(again.dtype)):
        return "the same seed gave different weights"
    if np.array_equal(other, again):
        return "seeds seed and seed + 1 gave the same weights"
    return None


def _dropout_problems(session, op, args):
    out = session.call(session.graded, op, args, "graded")
    x, p, mask, y = args["x"], args["p"], out["mask"], out["y"]
    if mask.shape != x.shape or y.shape != x.shape:
        return f"y and mask must have x's shape {list(x.shape)}"
    if not np.all((mask == 0) | (mask == 1)):
        return "mask holds values other than 0.0 and 1.0"
    kept, n = mask.mean(), mask.size
    if abs(kept - (1 - p)) > 5 * math.sqrt(p * (1 - p) / n) + 1e-12:
        return f"keeps {kept:.4f} of the elements, expected {1 - p:.4f} (p = {p}, n = {n})"
    scaled = x.astype(np.float64) * mask / (1 - p)
    problem = mismatch(op.name, "y", y, scaled, Tolerance(rtol=1e-6, atol=0.0))
    if problem:
        return f"y is not x * mask / (1 - p): {problem.split(': ', 1)[1]}"
    if 0 < p:
        other = session.call(session.graded, op, {**args, "seed": args["seed"] + 1}, "graded")
        if np.array_equal(other["mask"], mask):
            return "seeds seed and seed + 1 gave the same mask"
    return None

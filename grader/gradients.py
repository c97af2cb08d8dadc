"""Gradient checks: every backward op against central differences of the float64 oracle.

For a backward op with forward f, inputs x_1..x_k and a random upstream gradient dy, the
objective is L = sum(f(x_1..x_k) * dy) (for a loss, L is the loss itself). Its derivative with
respect to element i of an input is (L(x + h e_i) - L(x - h e_i)) / 2h, computed with the
repository's stage 1 forward in float64. The graded backward's gradient must match it within the
tier's tolerance plus the finite-difference error.
"""

import time

import numpy as np

from contract import output_names

from .compare import describe_args, mismatch
from .ops import OPS
from .records import FAILED, PASSED, SKIPPED, Result
from .tolerance import FINITE_DIFFERENCE_STEP, FINITE_DIFFERENCE_TOLERANCE, tolerance

MAX_POINTS = {False: 4000, True: 300}  # quick -> elements checked per gradient (sampled above)


def central_differences(objective, arrays, name, indices, h=FINITE_DIFFERENCE_STEP):
    """dL/d arrays[name] at the flat `indices`, by central differences; arrays are float64."""
    flat = arrays[name].reshape(-1)  # a view: perturbing it perturbs the argument
    gradient = np.empty(len(indices))
    for position, index in enumerate(indices):
        original = flat[index]
        flat[index] = original + h
        up = objective(arrays)
        flat[index] = original - h
        down = objective(arrays)
        flat[index] = original
        gradient[position] = (up - down) / (2 * h)
    return gradient


def sample_indices(size, limit, rng):
    """All flat indices up to `limit` elements, else a sorted random sample with both ends."""
    if size <= limit:
        return np.arange(size)
    chosen = rng.choice(size, limit - 2, replace=False)
    return np.unique(np.concatenate([[0, size - 1], chosen]))


def check_gradients(session, task):
    """Every gradient `task.op` returns, on its finite-difference cases; a failing case names
    each wrong gradient (dx, dgamma and dbeta), not only the first."""
    op = OPS[task.op]
    if not session.oracle.ok:
        return Result(op.name, "grad", SKIPPED, f"no oracle: stage 1 {session.oracle.reason}")
    forward = OPS[op.forward]
    started = time.perf_counter()
    cases = op.grad_cases or op.cases[:2]
    for index, size in enumerate(cases):
        rng = session.rng(task, index)
        args, forward_args = session.arguments(
            op, size, rng, session.oracle, "oracle", keep_float64=session.graded_bits == 64
        )
        received = session.call(session.graded, op, args, "graded")
        objective = _objective(session, forward, args.get("dy"))
        arrays = {
            name: value.astype(np.float64) if _is_float(value) else value
            for name, value in forward_args.items()
        }
        messages = [  # every gradient of the case, so that all wrong ones are named
            _compare_gradient(
                session, op, args, received[output], objective, arrays, output, input_name, rng
            )
            for output, input_name in op.grads
        ]
        message = " | ".join(message for message in messages if message)
        if message:
            case = f"case {index + 1} of {len(cases)}: {describe_args(args)}"
            return Result(
                op.name,
                "grad",
                FAILED,
                f"{message} [{case}]",
                seconds=time.perf_counter() - started,
            )
    return Result(
        op.name,
        "grad",
        PASSED,
        f"{len(cases)} cases, {len(op.grads)} gradients",
        seconds=time.perf_counter() - started,
    )


def _is_float(value):
    return isinstance(value, np.ndarray) and value.dtype.kind == "f"


def _objective(session, forward, dy):
    """L(arrays): the oracle's loss, or sum(forward output * dy)."""
    first = output_names(forward)[0]

    def objective(arrays):
        value = session.call(session.oracle, forward, arrays, "oracle")[first]
        return float(value) if dy is None else float(np.sum(value * dy))

    return objective


def _compare_gradient(session, op, args, received, objective, arrays, output, input_name, rng):
    expected_shape = arrays[input_name].shape
    if received.shape != expected_shape:
        return (
            f"{op.name}: {output} has shape {list(received.shape)}, expected {list(expected_shape)}"
        )
    indices = sample_indices(received.size, MAX_POINTS[session.setup.quick], rng)
    estimate = central_differences(objective, arrays, input_name, indices)
    if len(indices) < received.size:  # unchecked elements compare equal, but must be finite
        bad = np.flatnonzero(~np.isfinite(received))
        if bad.size:
            return f"{op.name}: {output} holds NaN or Inf at flat index {bad[0]}"
        expected = received.astype(np.float64).copy()
    else:
        expected = np.empty(received.shape)
    expected.reshape(-1)[indices] = estimate
    tol = tolerance(op, session.graded_bits, 64, args, session.gpu)
    how = f"(central difference, h={FINITE_DIFFERENCE_STEP:.0e})".replace("e-0", "e-")
    return mismatch(op.name, output, received, expected, tol + FINITE_DIFFERENCE_TOLERANCE, how)

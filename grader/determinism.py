"""Determinism: the same op on the same inputs, run again, must give the same bits.

On a GPU a missing `syncthreads`, a read of memory another block is still writing, or two
threads writing one element make a result that moves from run to run, often by a little and not
every time. Exact reproducibility is the cheapest detector: three runs on identical inputs must
agree bit for bit, unless the op's contract entry says why it may not (float atomics sum in the
order threads arrive) and by how much.
"""

import time

import numpy as np

from .correctness import compare_outputs
from .crossing import flatten
from .ladders import Named, size_label
from .ops import OPS
from .records import FAILED, PASSED, Result
from .tolerance import tolerance

RUNS = 3


def check_determinism(session, task):
    """Run `task.op` RUNS times on one set of inputs; any difference between runs fails."""
    op = OPS[task.op]
    started = time.perf_counter()
    named = task.size or Named(None, op.cases[-1])
    args, _ = session.arguments(op, named.size, session.rng(task), session.graded, "graded")
    first = session.call(session.graded, op, args, "graded")
    label = size_label(op, named, args)
    for run in range(2, RUNS + 1):
        again = session.call(session.graded, op, args, "graded")
        problem = _difference(session, op, args, first, again)
        if problem:
            message = f"{op.name}: run {run} differs from run 1 on the same inputs: {problem}"
            if not op.nondeterministic:
                message += " (a result that moves between runs is a likely race)"
            return Result(op.name, "determinism", FAILED, message, size=label,
                          seconds=time.perf_counter() - started)
    return Result(op.name, "determinism", PASSED, size=label,
                  seconds=time.perf_counter() - started)


def _difference(session, op, args, first, again):
    """None when the runs agree as the contract requires, else what differs."""
    if op.nondeterministic:  # atomics: agree within the op's tolerance, not bit for bit
        tol = tolerance(op, session.graded_bits, session.graded_bits, args, session.gpu)
        return compare_outputs(session, op, again, first, tol)
    expected, received = _flat(op, first), _flat(op, again)
    for name, want in expected.items():
        got = received[name]
        if want is None or got is None:  # an output skipped on request (need_dx=False)
            if (want is None) != (got is None):
                return f"{name} was {'None' if want is None else 'an array'}, then the other"
            continue
        same = (want == got) | (np.isnan(want) & np.isnan(got)) if want.dtype.kind == "f" else (
            want == got
        )
        if not np.all(same):
            index = np.unravel_index(np.flatnonzero(~same)[0], want.shape)
            return f"{name}{list(index)} was {want[index]!r}, then {got[index]!r}"
    return None


def _flat(op, outputs):
    """{name: array} of everything a call produced, its in-place arguments included."""
    return flatten(outputs, op.outputs) | {name: outputs[name] for name in op.inplace}

"""Refusals: arguments the contract refuses (CONTRACT.md) must be refused, with a ValueError.

A loss given a label outside [0, C) would read outside its row of scores (or, from Python,
index from the row's end) and return a number that looks like a loss; the contract refuses it
in every tier. Each bad call below changes one argument of a correct case.
"""

import tiers

from .builders import keep_defaulted
from .records import TierError


def bad_calls(op, args):
    """[(what is wrong, arguments)]: one argument of `args` moved out of its contract's domain."""
    if "labels" not in op.params:
        return []
    classes = args[next(name for name in op.params if name != "labels")].shape[1]
    calls = []
    for value in (classes, -1):
        labels = args["labels"].copy()
        labels[-1] = value
        what = f"labels[{len(labels) - 1}] = {value}, outside [0, C={classes})"
        calls.append((what, keep_defaulted(args, {**args, "labels": labels})))
    return calls


def refusal_problem(session, op, args):
    """Why the graded op did not refuse a bad call made from `args` (a correct case), or None."""
    for what, bad in bad_calls(op, args):
        try:
            session.call(session.graded, op, bad, "graded")
        except TierError as error:
            if isinstance(error.error, ValueError):
                continue
            raised = tiers.describe_exception(error.error)
            return f"{op.name}: given {what}, raised {raised}; expected a ValueError"
        return f"{op.name}: accepted {what}; the contract refuses it with a ValueError"
    return None

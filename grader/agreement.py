"""Agreement: the graded tier against the learner's own earlier tier (`--against-impl DIR`).

`make grade STAGE=3 AGAINST=workspace` adds one `agree` row per op: the learner's stage 3 and
the learner's stage 2 (from DIR) get the same inputs and must give the same outputs. Every other
check stays as it is; correctness (`correct`) is still judged by the repository's reference.

The learner's earlier tier is a reference only where it is right: each case's answer is first
compared with the repository's reference tier (the same stage). Where it is wrong, unwritten or
raises, the op cannot be judged by it: the row is skipped with the reason, never failed, since the
graded tier may be right (its `correct` row says). Two tiers wrong the same way never pass: the
row is skipped and says so, and the `correct` row fails.
"""

import time
from pathlib import Path

import tiers
from contract import week_of

from .compare import describe_args
from .correctness import compare_outputs
from .ops import OPS
from .records import FAILED, PASSED, SKIPPED, Result, TierError
from .tolerance import tolerance


def check_agree(session, task):
    """Every correctness case of `task.op`: the graded tier against the learner's own tier,
    whose answer the repository's reference vouches for first."""
    op, own, reference = OPS[task.op], session.own, session.reference
    yours = f"your {own.label}"
    if reference is None:
        reason = f"no repository tier to check {yours} with: {session._reference_reason}"
        return Result(op.name, "agree", SKIPPED, reason)
    # "Wrong" as the grading of the learner's tier would say: with the tolerance against its own
    # reference (stage 1, float64, is graded against float32 stage 2, not to 1e-9).
    own_grading_bits = tiers.find(own.tier.reference_stages[0]).bits
    started = time.perf_counter()
    for index, size in enumerate(op.cases):
        rng = session.rng(task, index)
        args, _ = session.arguments(op, size, rng, reference, "reference")
        case = f"case {index + 1} of {len(op.cases)}: {describe_args(args)}"
        expected = session.call(reference, op, args, "reference")
        try:
            theirs = session.call(own, op, args, "own")
        except TierError as error:
            message = f"cannot compare with {yours}: {session.explain(error)}"
            return Result(op.name, "agree", SKIPPED, message)
        own_tol = tolerance(op, own.tier.bits, own_grading_bits, args)
        wrong = compare_outputs(session, op, theirs, expected, own_tol, bits=own.tier.bits)
        try:
            received = session.call(session.graded, op, args, "graded")
        except TierError as error:
            error.case = case
            raise
        tol = tolerance(op, session.graded_bits, own.tier.bits, args, session.gpu)
        differs = compare_outputs(session, op, received, theirs, tol, args=args)
        if wrong:
            same = "" if differs else f"; {session.graded.label} gives the same wrong answer"
            fix = (
                f"make grade STAGE={own.stage} WEEK={week_of(own.stage, op.name)} "
                f"IMPL={_folder(own)}"
            )
            message = (
                f"{yours} is wrong here, so it cannot judge: against the repository's "
                f"{reference.label}, {wrong}{same} [{case}]; fix it first ({fix})"
            )
            return Result(op.name, "agree", SKIPPED, message)
        if differs:
            message = (
                f"differs from {yours}, which is right here (as the repository's "
                f"{reference.label} says): {differs} [{case}]"
            )
            return Result(op.name, "agree", FAILED, message)
    seconds = time.perf_counter() - started
    return Result(op.name, "agree", PASSED, f"{len(op.cases)} cases, as {yours}", seconds=seconds)


def _folder(own):
    """The learner's folder holding `own` (a LoadedTier), relative to here when it can be."""
    folder = Path(own.origin).parent
    return folder.relative_to(Path.cwd()) if folder.is_relative_to(Path.cwd()) else folder

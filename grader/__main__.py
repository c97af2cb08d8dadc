"""The command line: `python -m grader --stage N ...` and `python -m grader bench --stage N ...`.

    python -m grader --stage 2                    grade stage 2 against stage 1
    python -m grader --stage 2 --week 7 --quick   only week 7's ops, fewer sizes and repeats
    python -m grader --stage 2 --through 8        every op of weeks 1-8: the tier before week 19
    python -m grader --stage 2 --impl workspace   grade a learner's workspace/stage2_numpy
    python -m grader --stage 3 --impl workspace --against-impl workspace
                                                  and compare it with the learner's stage 2 too
    python -m grader bench --stage 3              the speed ladders at larger sizes, matmul kernels
    python -m grader --stage 2 --results          write the record to the committed results

The last line printed is `N passed, N failed` (`, N skipped` may follow); the exit status is 1
when a check failed, 2 for a usage error.
"""

import argparse
import shlex
import sys

import tiers
from contract import WEEKS, ops_for_week

from .isolation import MOST_LIMITS, YARDSTICK_MULTIPLE
from .ops import OPS
from .run import CHECKS, SIMULATOR_TIME_FACTOR, SPEED_TIME_FACTOR, Options, grade


def parse(argv):
    bench = bool(argv) and argv[0] == "bench"
    parser = argparse.ArgumentParser(
        prog="python -m grader" + (" bench" if bench else ""),
        description="Benchmark a tier."
        if bench
        else "Grade a tier of scratch2cuda: correctness "
        "against an earlier tier, gradients by finite differences, speed.",
    )
    parser.add_argument("--stage", type=int, required=True, choices=tiers.STAGES)
    parser.add_argument(
        "--variant", choices=tiers.VARIANTS, help="for a stage of several tiers (default: each)"
    )
    parser.add_argument(
        "--impl",
        metavar="DIR",
        help="grade the tier found in DIR (a workspace "
        "holding stage2_numpy/, or the package folder itself)",
    )
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    parser.add_argument(
        "--checks",
        default=",".join(CHECKS),
        metavar="KINDS",
        help=f"only these kinds of check, comma-separated (default: all, {','.join(CHECKS)})",
    )
    parser.add_argument(
        "--isolate",
        action="store_true",
        help="run checks in a child process (always for stages 3 and 4)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=20.0,
        metavar="S",
        help=f"the base time limit of a check in seconds (default 20; {SIMULATOR_TIME_FACTOR}x "
        f"on numba's CUDA simulator, {SPEED_TIME_FACTOR}x for a speed check). A check of your "
        "tier still running then is timed on the repository's tier, and fails as a hang only "
        f"past the base plus {YARDSTICK_MULTIPLE}x that time; the repository's own tier gets "
        f"{MOST_LIMITS} base limits",
    )
    parser.add_argument(
        "--json",
        metavar="PATH",
        help="where the JSON record goes (default: runs/grader/grade-stageN[...].json)",
    )
    parser.add_argument(
        "--results",
        action="store_true",
        help="write the record to curriculum/results/, the committed results (make results)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    if not bench:
        weeks = parser.add_mutually_exclusive_group()
        weeks.add_argument("--week", type=int, metavar="K", help="only the ops week K teaches")
        weeks.add_argument(
            "--through",
            type=int,
            metavar="K",
            help="the ops of weeks 1 to K: the whole tier as far as week K (week 19's int8 ops "
            "come after the tier's own weeks)",
        )
        parser.add_argument("--ops", metavar="NAMES", help="only these ops, comma-separated")
        parser.add_argument(
            "--against",
            type=int,
            choices=tiers.STAGES,
            metavar="M",
            help="reference stage (default N-1; stage 1: stage 2)",
        )
        parser.add_argument(
            "--against-impl",
            metavar="DIR",
            help="also compare with the learner's own copy of the reference stage in DIR (a "
            "workspace): the agree rows; the repository's tier still judges correctness",
        )
    args = parser.parse_args(argv[1:] if bench else argv)
    options = Options(
        stage=args.stage,
        variant=args.variant,
        impl=args.impl,
        quick=args.quick,
        checks=tuple(args.checks.split(",")),
        isolate=args.isolate,
        timeout=args.timeout,
        json=args.json,
        results=args.results,
        seed=args.seed,
        command=shlex.join(["python", "-m", "grader", *argv]),
    )
    if args.variant and args.variant not in tiers.variants(args.stage):
        parser.error(f"stage {args.stage} has no variant {args.variant!r}")
    unknown_checks = sorted(set(options.checks) - set(CHECKS))
    if unknown_checks:
        parser.error(f"unknown check(s) {', '.join(unknown_checks)}; kinds: {', '.join(CHECKS)}")
    against_impl = getattr(args, "against_impl", None)  # grading only, not bench
    if args.results and (args.impl or against_impl or args.quick or args.json):
        parser.error(
            "--results records the repository's tier in full: "
            "no --impl, --against-impl, --quick, --json"
        )
    if not bench:
        options.week, options.through, options.against = args.week, args.through, args.against
        options.against_impl = against_impl
        if against_impl:
            _check_against_impl(parser, args)
        options.ops = tuple(args.ops.split(",")) if args.ops else ()
        unknown = sorted(set(options.ops) - set(OPS))
        if unknown:
            parser.error(
                f"unknown op(s) {', '.join(unknown)}; the contract's ops: {', '.join(OPS)}"
            )
        if args.against == args.stage:
            parser.error(
                "a tier checked against itself proves nothing: choose another --against "
                "(stage 1 defaults to the repository's stage 2, plus gradients)"
            )
        if args.week is not None and not ops_for_week(args.stage, args.week):
            parser.error(
                f"week {args.week} has no ops of stage {args.stage} to grade "
                f"(stage {args.stage} weeks: {_weeks(args.stage)}); weeks 9-10 teach nn/: "
                f"run `pytest -m week{args.week:02d}`"
            )
        if args.through is not None and args.through < min(WEEKS[args.stage].values()):
            parser.error(
                f"--through {args.through}: stage {args.stage} begins in week "
                f"{min(WEEKS[args.stage].values())} (its weeks: {_weeks(args.stage)})"
            )
    return bench, options


def _check_against_impl(parser, args):
    """Exit with one line when the folder of --against-impl holds no copy of the reference stage."""
    stage = args.against or tiers.find(args.stage, args.variant).reference_stages[0]
    problem = tiers.missing_package(tiers.find(stage), args.against_impl)
    if problem:
        parser.exit(
            2,
            f"{parser.prog}: error: --against-impl {args.against_impl}: {problem} (your stage "
            f"{stage}, which stage {args.stage} is compared with)\n",
        )


def _weeks(stage):
    return ", ".join(map(str, sorted(set(WEEKS[stage].values()))))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    bench, options = parse(argv)
    if bench:
        from .bench import bench as run_bench

        status, _ = run_bench(options)
    else:
        status, _ = grade(options)
    return status


if __name__ == "__main__":
    sys.exit(main())

"""A grading run: choose the tiers, plan the checks, run them (isolated or not), report.

`grade(options)` is what `python -m grader` does; `grader/bench.py` reuses `execute` with its own
plan. Both return (exit status, the JSON record).
"""

import re
import sys
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import tiers
from contract import ops_for_week, week_of
from tiers.machine import machine_info

from . import propagation, report
from .isolation import InProcessRunner, IsolatedRunner, WorkerGone
from .ladders import ladder, timed_class
from .ops import OPS
from .records import FAILED, SKIPPED, Result, Setup, Task

RESULTS = tiers.REPOSITORY / "curriculum" / "results"  # committed: written only with --results
RUNS = tiers.REPOSITORY / "runs" / "grader"  # ignored by git: where ordinary runs write
SPEED_TIME_FACTOR = 6  # a speed task times many calls: its time limit is this many check limits
# numba's CUDA simulator runs each GPU thread as a Python thread: a correct check of a convolution
# takes it a minute or more on two cores, where a GPU takes milliseconds.
SIMULATOR_TIME_FACTOR = 4


# --checks chooses among them; `agree` runs only with --against-impl (grader/agreement.py)
CHECKS = ("correct", "agree", "nan", "grad", "dist", "determinism", "speed")


@dataclass
class Options:
    """The command line's options (see grader/__main__.py)."""

    stage: int
    variant: str | None = None
    week: int | None = None
    through: int | None = None
    ops: tuple = ()
    impl: str | None = None
    against: int | None = None
    against_impl: str | None = None
    quick: bool = False
    isolate: bool = False
    timeout: float = 20.0
    seed: int = 0
    json: str | None = None
    results: bool = False
    checks: tuple = CHECKS
    command: str = ""


def selected_ops(options):
    """The ops to grade: those of --week, or of the weeks up to --through (all without either),
    narrowed by --ops."""
    names = list(OPS) if options.week is None else ops_for_week(options.stage, options.week)
    if options.through is not None:
        names = [name for name in names if week_of(options.stage, name) <= options.through]
    if options.ops:
        unknown = sorted(set(options.ops) - set(OPS))
        if unknown:
            raise ValueError(
                f"unknown op(s) {', '.join(unknown)}; the contract has: {', '.join(OPS)}"
            )
        names = [name for name in names if name in options.ops]
    return names


# The ops whose tiers may have a ladder of kernels (`op(..., kernel=NAME)`), and the session info
# that lists the rungs (the tier's MATMUL_KERNELS, SOFTMAX_KERNELS, CONV_KERNELS).
LADDERS = {"matmul": "matmul_kernels", "softmax": "softmax_kernels",
           "log_softmax": "softmax_kernels", "conv2d_forward": "conv_kernels"}  # fmt: skip


def rungs(info, tier, name):
    """The rungs of op `name`'s ladder that are graded each on its own (a stub hides no other);
    softmax's and log_softmax's not on the CUDA simulator (the numba variant's `shuffle` rung
    needs warp shuffles, which the simulator lacks)."""
    if name not in LADDERS or (name in ("softmax", "log_softmax") and tier.simulated):
        return ()
    return info.get(LADDERS[name], ())


def plan_grade(options, info, results):
    """Correctness (and agreement with the learner's earlier tier, --against-impl), NaN,
    gradient and distribution checks per op (and determinism on a GPU), then the speed ladder
    (not on the CUDA simulator, whose speed means nothing)."""
    tier = tiers.find(options.stage, options.variant)
    timed_on = timed_class(tier)
    names = selected_ops(options)
    tasks = []
    for name in names:
        op = OPS[name]
        tasks.append(Task("correct", name))
        tasks += [Task("correct", name, kernel=kernel) for kernel in rungs(info, tier, name)]
        if info["own"] and info["own"]["ok"]:
            tasks.append(Task("agree", name))
        if propagation.has_float_inputs(op):
            tasks.append(Task("nan", name))
        if op.grads:
            tasks.append(Task("grad", name))
        if op.dist:
            tasks.append(Task("dist", name))
        if tier.gpu:  # races show at sizes that fill the device: the largest ladder size
            sizes = ladder(op, timed_on) if not tier.simulated else ()
            tasks.append(Task("determinism", name, sizes[-1] if sizes else None))
    for name in names if not tier.simulated else ():
        sizes = ladder(OPS[name], timed_on)
        if options.quick:  # the first size (timed next to the earlier tier) and the largest
            sizes = list(dict.fromkeys([sizes[0], sizes[-1]])) if sizes else []
        tasks += [Task("speed", name, named) for named in sizes]
    return [task for task in tasks if task.kind in options.checks]


def variants(options):
    """The variant asked for, else every variant of the stage ([None] for a stage of one tier)."""
    return [options.variant] if options.variant else list(tiers.variants(options.stage)) or [None]


def default_json_path(options, kind="grade"):
    """runs/grader/grade-stage2[-numba][-week7][-quick].json (ignored by git); with `--results`,
    the committed curriculum/results/ (`make results`); a learner's code (`--impl DIR`) gets
    DIR/results/, so it never overwrites the committed results. A run against a learner's own
    tier (`--against-impl`) is no record of the tier against the repository: it goes to
    runs/grader/, its name ending in -against."""
    parts = [f"{kind}-stage{options.stage}"]
    parts += [options.variant] if options.variant else []
    parts += [f"week{options.week}"] if options.week else []
    parts += [f"through{options.through}"] if options.through else []
    parts += ["quick"] if options.quick else []
    parts += ["against"] if options.against_impl else []
    folder = RESULTS if options.results else RUNS
    if options.impl and not options.against_impl:
        folder = Path(options.impl) / "results"
    return folder / ("-".join(parts) + ".json")


def grade(options, out=sys.stdout):
    """Grade a tier as the options say; returns (exit status, JSON record)."""
    return execute(options, plan_grade, "grade", out)


def execute(options, plan, kind, out, also_write=None):
    """Run the tasks `plan(options, info, results so far)` gives, for each variant; print the
    table, write the JSON record (and whatever `also_write(record)` writes, e.g. the bench's
    Markdown table; it returns the path); returns (exit status, record)."""
    started = time.perf_counter()
    runs, everything = [], []
    for variant in variants(options):
        results, run_record = _run_variant(options, variant, plan, kind, out)
        runs.append(run_record)
        everything += results
    record = {
        "kind": kind,
        "command": options.command,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine_info(),
        "options": {k: v for k, v in vars(options).items() if k != "command"},
        "runs": runs,
        "summary": report.counts(everything) | {"seconds": round(time.perf_counter() - started, 1)},
    }
    path = report.write_json(options.json or default_json_path(options, kind), record)
    print(f"\nresults written to {_display(path)} ({record['summary']['seconds']} s)", file=out)
    if also_write:
        print(f"table written to {_display(also_write(record))}", file=out)
    report.print_recap(everything, out)
    print(report.summary_line(everything), file=out, flush=True)
    return (1 if report.counts(everything)[FAILED] else 0), record


def _display(path):
    try:
        return Path(path).resolve().relative_to(Path.cwd())
    except ValueError:
        return path


def _run_variant(options, variant, plan, kind, out):
    """Grade one tier (stage 4 has two variants); returns (results, the run's JSON record)."""
    tier = tiers.find(options.stage, variant)
    # By default the registry's references (stage 1 has no earlier tier: it is checked against 2).
    against = (options.against,) if options.against else tier.reference_stages
    impl = str(Path(options.impl).resolve()) if options.impl else None
    own = str(Path(options.against_impl).resolve()) if options.against_impl else None
    setup = Setup(
        options.stage, variant, impl, against, options.seed, options.quick, kind == "bench", own
    )
    isolate = options.isolate or tier.native  # native code may crash or hang
    runner = IsolatedRunner(setup) if isolate else InProcessRunner(setup)
    label = tier.label
    record = {"tier": label, "impl": impl, "isolated": isolate}
    results = []
    try:
        info = runner.describe()
        graded = info["graded"]
        record.update(graded=graded, reference=info["reference"], own_reference=info["own"])
        if not graded["ok"]:
            state = "broken" if graded["broken"] else "unavailable"
            print(f"{label} is {state}: {graded['reason']}", file=out)
            status = FAILED if graded["broken"] else SKIPPED
            results.append(Result("import", "import", status, f"{label}: {graded['reason']}"))
        else:
            reference, own = info["reference"], info["own"]
            against_text = f"against {reference['label']}" if reference else "with no reference"
            if not reference:
                against_text += f" tier ({info['reference_reason']})"
            if own:
                against_text = f"against your {own['label']} from {_display(own['origin'])}"
            where = _display(graded["origin"])
            isolated = ", isolated" if isolate else ""
            simulated = (
                " (CUDA simulator, no GPU: correctness at tiny sizes, no speed verdicts, "
                f"{SIMULATOR_TIME_FACTOR}x the time per check)"
                if tier.simulated
                else ""
            )
            print(
                f"grading {graded['label']} from {where} {against_text}{isolated}; "
                f"seed {options.seed}{simulated}",
                file=out,
            )
            if own:
                results += _own_reference_lines(own, reference, out)
            report.print_header(out)
            limit = options.timeout * (SIMULATOR_TIME_FACTOR if tier.simulated else 1)
            tasks = plan(options, info, results)
            last_week = options.week or options.through
            _run_tasks(limit, runner, tasks, results, out, last_week, bench=kind == "bench")
    except WorkerGone as gone:  # the worker died before it could describe the tiers
        results.append(Result("import", "import", FAILED, f"{label}: {gone}"))
        report.print_row(results[-1], out)
    finally:
        runner.close()
    record["results"] = results
    return results, record


def _own_reference_lines(own, reference, out):
    """Say who judges what when the learner's own earlier tier is a reference (--against-impl);
    returns the skipped import of that tier when it did not load: like every problem of a
    reference, it leaves the graded tier unjudged by it, never failed."""
    if reference:
        print(
            f"  your {own['label']} judges the agree rows wherever the repository's "
            f"{reference['label']} ({_display(reference['origin'])}) shows it right; the "
            "repository's tiers judge every other check",
            file=out,
        )
    if own["ok"]:
        return []
    state = "broken" if own["broken"] else "unavailable"
    message = f"your {own['label']} from {_display(own['origin'])} is {state}: {own['reason']}"
    print(message, file=out)
    return [Result("import", "agree", SKIPPED, message)]


def _run_tasks(limit, runner, tasks, results, out, week=None, bench=False):
    """Run tasks in order, appending to `results`, each with `limit` seconds as its base time
    limit (grader/isolation.py says how a check gets longer). An op with a failed check is not
    timed (at its next sizes either, once a speed check failed); an op not implemented is reported
    once, its other checks skipped. A ladder's rung (`kernel`) counts as an op of its own. With
    `week` (--week or --through), a check that stops at the stub of a later week is skipped:
    that week has not come. The bench (`bench`) times what is written: an op that stops at any
    stub is skipped, and one line at the end names them all."""
    failed_ops, missing_ops, unwritten = set(), set(), {}
    for task in tasks:
        key = (task.op, task.kernel)
        if key in missing_ops or (task.kind == "speed" and key in failed_ops):
            if bench and key in missing_ops:
                continue  # named once, in the last line
            why = "not implemented" if key in missing_ops else "an earlier check of it failed"
            size = (task.size.label or "") if task.size else ""
            result = Result(task.op, task.kind, SKIPPED, f"skipped: {why}", size=size)
        else:
            timed = task.kind in ("speed", "kernel", "blas")
            result = runner.run(task, limit * (SPEED_TIME_FACTOR if timed else 1))
            result = skipped_if_later_week(result, week)
            stub = STUB.search(result.message)
            if result.status == FAILED:
                failed_ops.add(key)
                if ": not implemented (" in result.message:
                    missing_ops.add(key)
                if bench and stub:
                    unwritten.setdefault(int(stub.group(1)), []).append(task.kernel or task.op)
                    results.append(replace(result, status=SKIPPED,
                                           message=f"skipped: {result.message}"))  # fmt: skip
                    continue
        report.print_row(result, out)
        results.append(result)
    if unwritten:
        print(unwritten_line(unwritten), file=out)


STUB = re.compile(r": not implemented \(week (\d+),")


def unwritten_line(unwritten):
    """One line naming the ops {week: [op, ...]} the bench skipped because a stub stopped them."""
    weeks = "; ".join(
        f"week {week}: {', '.join(dict.fromkeys(ops))}" for week, ops in sorted(unwritten.items())
    )
    count = len({op for ops in unwritten.values() for op in ops})
    return f"not benched, {count} not written yet (the stubs of {weeks})"


def skipped_if_later_week(result, week):
    """`result`, skipped instead of failed when it stopped at a stub of a week after `week`."""
    stub = STUB.search(result.message)
    if week is None or result.status != FAILED or not stub or int(stub.group(1)) <= week:
        return result
    return replace(result, status=SKIPPED,
                   message=f"skipped: {result.message}, after week {week}")  # fmt: skip

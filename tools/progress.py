"""`make progress`: which exercises of a workspace pass, per week and tier.

    python -m tools.progress --impl workspace     a learner's workspace (make progress)
    python -m tools.progress                      the reference, every exercise written (or the
                                                  folder S2C_IMPL names, as `make test` does)
    python -m tools.progress --stages 1,4         only these stages (4 even on the CUDA simulator)

The exercises are EXERCISES.md's rows (tools/exercise_index.py). Each gets one status:

    not implemented   its stub (written by tools/exercises.py) is still in its file, or its check
                      met the stub of another task (the note names it)
    failed            a check of its op (or matmul rung) failed: the note is the grader's message
    passed            every check of its op (or matmul rung) passed
    unchecked         written, but nothing here checks it alone: a helper (the week's ops that call
                      it check it), or a tier not graded here

Only the ops whose exercises are written are graded, by the grader itself (grader/run.py: its quick
run, without the speed ladder), so a fresh workspace needs no grading at all. The GPU tier is not
graded on numba's CUDA simulator (no GPU): its checks take minutes there. The network's exercises
(nn/, weeks 9-10) are graded by the week's own checks (tests/nn_exercise_checks.py), each alone, in
a child process; training end to end is left to `make test ARGS='-m weekNN'` (minutes).
"""

import argparse
import importlib.util
import io
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import tiers
from grader.records import FAILED, PASSED, SKIPPED
from grader.run import Options, grade

from .exercise_index import collect
from .exercises import DEFAULT_OUT, LANGUAGE_OF_SUFFIX, REPO_ROOT, stub_line

NOT_IMPLEMENTED, UNCHECKED = "not implemented", "unchecked"
STATUSES = (PASSED, FAILED, NOT_IMPLEMENTED, UNCHECKED)
CHECKS = ("correct", "nan", "grad", "dist")  # the grader's checks but speed and determinism
STUB_HIT = re.compile(r"not implemented \(week (?P<week>\d+), task (?P<task>[\w\-]+)\)")
ABSENT = "its file is not in the workspace"
UNCHECKED_MEANS = (
    "written, but nothing here checks it alone (a helper: the week's ops that call it check it; "
    "or a tier not graded here)"
)
# The network's week checks: `python NN_CHECKS CHECK SEED` with S2C_NN naming the workspace, whose
# exit status says passed, failed, not implemented or skipped (its docstring).
NN_CHECKS = REPO_ROOT / "tests" / "nn_exercise_checks.py"
NN_CHECK_SECONDS = 120  # one exercise's check; generous, the machine may be shared
NN_STATUS = {0: PASSED, 1: FAILED, 3: NOT_IMPLEMENTED, 4: SKIPPED}
SIMULATOR_REASON = (
    "not graded here: no GPU, and numba's CUDA simulator takes minutes for its checks "
    "(`make grade STAGE=4 WEEK=k VARIANT=numba` grades one week; "
    "`make progress ARGS='--stages 4'` all of it)"
)
GPU_REASON = (
    "not graded here: it runs only on an NVIDIA GPU (numba's CUDA simulator runs the numba variant "
    "alone); `make build IMPL=workspace` compiles your .cu files here, showing nvcc's errors"
)


def stub_remains(exercise, folder):
    """True when a stub of `exercise` is still in its file under `folder`."""
    source = Path(folder) / exercise.path
    language = LANGUAGE_OF_SUFFIX[source.suffix]
    stubs = {  # a CUDA region in a function returning void has a stub of its own
        stub_line(language, "", exercise.week, exercise.task, exercise.path, "", void)
        for void in (False, True)
    }
    return any(line.strip() in stubs for line in source.read_text(encoding="utf-8").splitlines())


def grade_tier(tier, impl, ops):
    """The grader's results for `ops` of `tier` (from `impl`, or the reference when None)."""
    with tempfile.TemporaryDirectory() as scratch:
        options = Options(
            stage=tier.stage,
            variant=tier.variant,
            ops=tuple(ops),
            impl=impl,
            quick=True,
            checks=CHECKS,
            json=str(Path(scratch) / "progress.json"),  # the learner's own records stay as they are
            command="python -m tools.progress",
        )
        _status, record = grade(options, out=io.StringIO())
    return [result for run in record["runs"] for result in run["results"]]


def network_checks():
    """{check: the tasks it grades} of the network's unit checks (the training ones have none)."""
    spec = importlib.util.spec_from_file_location("nn_exercise_checks", NN_CHECKS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {name: tasks for name, (_week, tasks, *_rest) in module.CHECKS.items() if tasks}


def run_network_check(name, folder):
    """(status, last line) of the network's check `name` on the nn/ of `folder`."""
    environment = os.environ | {"PYTHONPATH": str(REPO_ROOT), "S2C_NN": str(Path(folder).resolve())}
    try:
        done = subprocess.run(
            [sys.executable, str(NN_CHECKS), name, str(secrets.randbits(31))],
            cwd=REPO_ROOT, env=environment, capture_output=True, text=True,
            timeout=NN_CHECK_SECONDS,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return FAILED, f"{name}: no answer after {NN_CHECK_SECONDS} s (an endless loop?)"
    lines = (done.stdout + done.stderr).strip().splitlines()
    return NN_STATUS.get(done.returncode, FAILED), lines[-1] if lines else "(no output)"


def grade_network(folder, written):
    """{exercise: (status, note)} of the network's `written` exercises in `folder`: each check
    whose tasks include a written one runs (in parallel, one per core), and its verdict goes to
    the task it names, or to all of its tasks."""
    checks = {name: tasks for name, tasks in network_checks().items()
              if any(exercise.task in tasks for exercise in written)}  # fmt: skip
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        found = pool.map(run_network_check, checks, [folder] * len(checks))
        verdicts = dict(zip(checks, found, strict=True))
    statuses = {}
    for exercise in written:
        name = next((name for name, tasks in checks.items() if exercise.task in tasks), None)
        if name is None:
            statuses[exercise] = (UNCHECKED, "")
            continue
        status, message = verdicts[name]
        named = message.split(":")[0]
        if status == PASSED:
            statuses[exercise] = (PASSED, "")
        elif status == SKIPPED:
            statuses[exercise] = (UNCHECKED, message)
        elif status == NOT_IMPLEMENTED and f"task {exercise.task}:" not in message:
            statuses[exercise] = (NOT_IMPLEMENTED, f"its check met another stub: {message}")
        elif status == FAILED and named in checks[name] and named != exercise.task:
            statuses[exercise] = (UNCHECKED, f"checked with {named}, which failed")
        else:
            statuses[exercise] = (status, message)
    return statuses


def checks_of(exercise, results):
    """The results that grade `exercise` alone: its op's, or its ladder rung's."""
    if exercise.op:
        return [r for r in results if r.op == exercise.op and not r.size.startswith("kernel ")]
    if exercise.rung:
        rung = f"kernel {exercise.rung}"
        return [r for r in results if r.op == exercise.ladder and r.size == rung]
    return []


def judge(exercise, results, stubs_hit):
    """(status, note) of a written exercise from its tier's results."""
    if (exercise.week, exercise.task) in stubs_hit:
        return NOT_IMPLEMENTED, "its stub was reached through another exercise"
    tier_level = [r for r in results if r.op == "import"]  # broken or unavailable: said above
    if tier_level:
        status = FAILED if tier_level[0].status == FAILED else UNCHECKED
        return status, f"{exercise.tier.label} was not graded (see above)"
    own = checks_of(exercise, results)
    failed = [r for r in own if r.status == FAILED]
    if failed:
        real = [r for r in failed if not STUB_HIT.search(r.message)]
        if not real:
            return NOT_IMPLEMENTED, failed[0].message
        return FAILED, f"{real[0].check} check: {real[0].message}"
    if any(r.status == PASSED for r in own):
        return PASSED, ""
    skipped = [r.message for r in own if r.status == SKIPPED]
    return UNCHECKED, skipped[0] if skipped else ""


def progress(impl, stages=None):
    """({exercise: (status, note)}, {tier label: why its written exercises were not graded}).

    `impl` is the workspace folder (None: the reference); `stages` the stages to grade (None:
    every one but the GPU tier on the CUDA simulator)."""
    folder = Path(impl) if impl else REPO_ROOT
    statuses, not_graded = {}, {}
    by_tier = {}
    for exercise in collect():
        if not (folder / exercise.path).is_file():
            statuses[exercise] = (NOT_IMPLEMENTED, ABSENT)
            label = exercise.tier.label if exercise.tier else exercise.package
            not_graded[label] = f"{folder}/ does not hold {exercise.package}"
        elif stub_remains(exercise, folder):
            statuses[exercise] = (NOT_IMPLEMENTED, "")
        else:
            by_tier.setdefault(exercise.tier, []).append(exercise)
    for tier, written in by_tier.items():
        reason = why_not_graded(tier, stages)
        if reason:
            not_graded[tier.label if tier else "nn"] = reason
            statuses.update({exercise: (UNCHECKED, reason) for exercise in written})
            continue
        if tier is None:
            statuses.update(grade_network(folder, written))
            continue
        ops = {exercise.op for exercise in written if exercise.op}
        ops |= {exercise.ladder for exercise in written if exercise.ladder}
        results = grade_tier(tier, impl, ops) if ops else []
        for result in results:
            if result.op == "import":  # the tier does not build or import, or is unavailable
                state = "does not build or import" if result.status == FAILED else "unavailable"
                not_graded[tier.label] = (
                    f"{state}: {result.message.removeprefix(tier.label + ': ')}"
                )
        stubs_hit = {
            (int(hit["week"]), hit["task"]) for r in results for hit in STUB_HIT.finditer(r.message)
        }
        statuses.update({exercise: judge(exercise, results, stubs_hit) for exercise in written})
    return statuses, not_graded


def why_not_graded(tier, stages):
    """Why `tier`'s written exercises are not graded here, or '' when they are."""
    if stages is not None and (tier is None or tier.stage not in stages):
        return "not graded here (--stages)"
    if tier is not None and tier.gpu_needed:
        return GPU_REASON
    if stages is None and tier is not None and tier.simulated:
        return SIMULATOR_REASON
    return ""


def print_table(statuses, not_graded, out):
    """One line per week and tier: how many exercises are in each status."""
    counts = Counter()
    rows = {}
    for exercise, (status, _note) in statuses.items():
        label = exercise.tier.label if exercise.tier else exercise.package
        stage = exercise.tier.stage if exercise.tier else 0
        rows.setdefault((exercise.week, stage, label), Counter())[status] += 1
        counts[status] += 1
    columns = "{week:>4}  {tier:<16}" + "".join(
        f"{{{i}:>{len(s) + 2}}}" for i, s in enumerate(STATUSES)
    )
    print(columns.format(*STATUSES, week="week", tier="tier"), file=out)
    for (week, _stage, label), count in sorted(rows.items()):
        done = count[PASSED] and not count[FAILED] and not count[NOT_IMPLEMENTED]
        line = columns.format(*(count[s] for s in STATUSES), week=week, tier=label)
        print(line + ("   done" if done else ""), file=out)
    if counts[UNCHECKED]:
        print(f"{UNCHECKED}: {UNCHECKED_MEANS}", file=out)
    for label, reason in not_graded.items():
        print(f"{label}: {reason}".replace("\n", "\n    "), file=out)
    total = ", ".join(f"{counts[s]} {s}" for s in STATUSES)
    print(f"{len(statuses)} exercises: {total}", file=out)


def print_notes(statuses, impl, out):
    """The failures with the grader's message, then the next exercise to write."""
    ordered = sorted(statuses, key=lambda e: (e.week, e.tier.stage if e.tier else 0, e.first_line))
    failed = [e for e in ordered if statuses[e][0] == FAILED]
    if failed:
        print(f"\nfailed ({len(failed)}):", file=out)
        for exercise in failed:
            note = statuses[exercise][1].splitlines()[0]
            print(
                f"  week {exercise.week}, task {exercise.task} ({exercise.path}): {note}", file=out
            )
    missing = [e for e in ordered if statuses[e] == (NOT_IMPLEMENTED, "")]
    needs_gpu = [e for e in missing if e.tier and e.tier.gpu_needed]
    doable = [e for e in missing if e not in needs_gpu]
    if doable:
        first = doable[0]
        where = f" IMPL={impl}" if impl and Path(impl) != DEFAULT_OUT else ""
        simulated = first.tier and first.tier.simulated
        slow = " (no GPU: numba's CUDA simulator runs it, slowly)" if simulated else ""
        print(
            f"\nnext: week {first.week}, task {first.task} in {first.path} "
            f"({', '.join(first.functions)}); then `{first.command}{where}`{slow}",
            file=out,
        )
    if needs_gpu:
        print(f"\n{gpu_note(needs_gpu)}", file=out)


def gpu_note(exercises):
    """What to say of `exercises` that this machine cannot grade for want of a GPU, and what a
    learner without one does instead."""
    held = list(dict.fromkeys(exercise.tier for exercise in exercises))
    weeks = sorted({exercise.week for exercise in exercises})
    commands = " and ".join(f"`make grade STAGE={t.stage} VARIANT={t.variant}`" for t in held)
    simulated = [t.label for t in tiers.TIERS.values() if t.on_simulator]
    return (
        f"needs a GPU: {len(exercises)} exercises of {', '.join(t.label for t in held)} "
        f"(weeks {weeks[0]}-{weeks[-1]}); without one, {commands} can only say it is "
        f"unavailable. Here, write {' and '.join(simulated)} for those weeks: numba's CUDA "
        "simulator runs it."
    )


def stage_list(text):
    """'1,4' -> (1, 4); an unknown stage is a usage error."""
    try:
        stages = tuple(int(stage) for stage in text.split(","))
    except ValueError:
        stages = ()
    if not stages or set(stages) - set(tiers.STAGES):
        raise argparse.ArgumentTypeError(f"{text!r}: give stages of {tiers.STAGES}, e.g. 1,2")
    return stages


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m tools.progress", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--impl",
        metavar="DIR",
        default=os.environ.get("S2C_IMPL") or None,
        help="the workspace to read (default: S2C_IMPL, else the reference)",
    )
    parser.add_argument(
        "--stages",
        type=stage_list,
        metavar="N,M",
        help="stages to grade (default: every one but the GPU tier on the CUDA simulator)",
    )
    return parser.parse_args(argv)


def main(argv=None, out=sys.stdout):
    args = parse_args(argv)
    if args.impl and not Path(args.impl).is_dir():
        print(
            f"error: --impl {args.impl}: no such folder (make exercises writes workspace/)",
            file=sys.stderr,
        )
        return 2
    where = f"{args.impl}/" if args.impl else "the reference (make exercises writes your workspace)"
    print(
        f"progress of {where}: the grader's quick checks ({', '.join(CHECKS)})",
        file=out,
        flush=True,
    )
    started = time.perf_counter()
    statuses, not_graded = progress(args.impl, args.stages)
    print_table(statuses, not_graded, out)
    print_notes(statuses, args.impl, out)
    print(f"\n({time.perf_counter() - started:.1f} s)", file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

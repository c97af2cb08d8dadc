"""`make sanitize STAGE=4`: the stage-4 grader's correctness checks under compute-sanitizer.

    python -m grader.sanitize --stage 4 [--variant numba] [--tools memcheck,racecheck,synccheck]
                              [--week K | --through K] [--ops NAMES]

Each tool runs the grader once (correctness, NaN, gradient and distribution checks, at their
small sizes; no timing and no determinism check, whose sizes fill the device: the sanitizer slows
every kernel a hundredfold or more, and it finds races itself) with every child process followed,
since the grader runs GPU code in a worker process; its rows print as they come, and its own last
line says how many checks ran. memcheck finds out-of-bounds and misaligned accesses, racecheck
shared-memory hazards (a missing `syncthreads`), synccheck barriers that not every thread of a
block reaches. With `--through K` (or `--week K`) the stubs of later weeks are skipped, as in
`make grade`: a workspace partway through the course is checked as far as it goes. Each tool's
line gives its count of reports and its seconds; the last line is the total count, 0 when clean.
With `--results` the same summary, with the device and the date, goes to
curriculum/results/sanitize-stage4-<variant>.md.
"""

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime

import tiers
from tiers.machine import gpu_name

from .run import RESULTS

TOOLS = ("memcheck", "racecheck", "synccheck")
SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) error")
# racecheck reports hazards in its own summary line
HAZARDS = re.compile(r"RACECHECK SUMMARY: (\d+) hazard")


def sanitizer_command(tool, grader_args):
    return [
        "compute-sanitizer",
        f"--tool={tool}",
        "--target-processes=all",
        "--print-limit=20",
        sys.executable,
        "-m",
        "grader",
        *grader_args,
    ]


def run_shown(command):
    """Run `command`, printing its output as it comes (the grader's rows show its progress: a
    whole stage under a sanitizer takes minutes); returns (its output, its exit status)."""
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=os.environ | {"S2C_CACHING_ALLOCATOR": "0"},  # memcheck sees each array's end
    )
    lines = []
    for line in process.stdout:
        print(line, end="", flush=True)
        lines.append(line)
    return "".join(lines), process.wait()


def reports_in(output):
    """The number of reports compute-sanitizer counted in `output` (every process summed)."""
    counts = [int(n) for n in SUMMARY.findall(output)] + [int(n) for n in HAZARDS.findall(output)]
    return sum(counts)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m grader.sanitize", description=__doc__)
    parser.add_argument("--stage", type=int, default=4, choices=(4,))
    parser.add_argument("--variant", choices=("numba", "nvcc"))
    parser.add_argument("--impl", metavar="DIR")
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--ops", metavar="NAMES", help="only these ops, comma-separated")
    weeks = parser.add_mutually_exclusive_group()
    weeks.add_argument("--week", type=int, metavar="K", help="only the ops week K teaches")
    weeks.add_argument("--through", type=int, metavar="K", help="the ops of weeks 1 to K")
    parser.add_argument(
        "--results",
        action="store_true",
        help="write the summary to curriculum/results/sanitize-stage4-<variant>.md",
    )
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    args.command = shlex.join(["python", "-m", "grader.sanitize", *argv])
    if args.results and (args.impl or args.ops or args.week or args.through):
        parser.error(
            "--results records the repository's tier in full: no --impl, --ops, --week, --through"
        )
    if not shutil.which("compute-sanitizer"):
        print("compute-sanitizer not found: it comes with the CUDA toolkit, on a GPU machine")
        return 2
    grader_args = ["--stage", "4", "--checks", "correct,nan,grad,dist", "--quick",
                   "--json", "/dev/null", "--timeout", "600"]
    if args.variant:
        grader_args += ["--variant", args.variant]
    if args.impl:
        grader_args += ["--impl", args.impl]
    if args.ops:
        grader_args += ["--ops", args.ops]
    for option in ("week", "through"):
        if getattr(args, option) is not None:
            grader_args += [f"--{option}", str(getattr(args, option))]
    total = 0
    lines = []
    for tool in args.tools.split(","):
        print(f"=== compute-sanitizer --tool={tool}", flush=True)
        started = time.monotonic()
        output, status = run_shown(sanitizer_command(tool, grader_args))
        seconds = time.monotonic() - started
        count = reports_in(output)
        checks_line = re.findall(r"^\d+ passed, \d+ failed.*$", output, re.MULTILINE)
        ran = checks_line[-1] if checks_line else "no summary from the grader"
        line = f"{tool}: {count} reports (grader: {ran}; exit status {status}; {seconds:.0f} s)"
        print(line, flush=True)
        lines.append(line)
        total += count
    print(f"{total} sanitizer reports")
    if args.results:
        print(f"record written to {write_record(args, lines, total)}")
    return 1 if total else 0


def write_record(args, lines, total):
    """The run's summary lines as a small markdown record in curriculum/results/."""
    variant = tiers.find(4, args.variant).variant
    path = RESULTS / f"sanitize-stage4-{variant}.md"
    path.write_text(
        f"# compute-sanitizer on stage 4 ({variant})\n\n"
        f"GPU {gpu_name()}, {datetime.now(UTC):%Y-%m-%d}. Regenerate with `{args.command}`.\n\n"
        + "".join(f"- {line}\n" for line in lines)
        + f"\n**{total} sanitizer reports.**\n"
    )
    return path


if __name__ == "__main__":
    sys.exit(main())

"""EXERCISES.md: every exercise of the course, generated from the solution markers and the contract.

    python -m tools.exercise_index --write    rewrite EXERCISES.md (make exercises-index)
    python -m tools.exercise_index --check    exit 1, showing the difference, when it has drifted
    python -m tools.exercise_index            print it

An exercise is one task of one file: its `BEGIN SOLUTION week N, task NAME` regions, read by
tools/exercises.py (the tool that stubs them). The contract (contract/: its ops and their weeks)
says how the grader checks it: a task named after an op is that op's checks, `matmul_NAME` is the
rung NAME of the tier's matmul ladder (`matmul(a, b, kernel=NAME)`), `softmax_NAME` a rung of its
softmax ladder (`softmax(x, kernel=NAME)`) and `conv_NAME` of its conv2d ladder
(`conv2d_forward(..., kernel=NAME)`), any other task has no check of its own. A tier's exercise is
graded by `make grade STAGE=N WEEK=k`; an exercise outside the tiers (nn/) by its week's tests,
`make test ARGS='-m weekNN'`. A marker whose week the contract contradicts stops the tool, so the
page cannot teach an op in the wrong week, nor in another Python file of a tier than the one the
contract puts it in.
"""

import argparse
import difflib
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import tiers
from contract import OPS, ops_for_week, week_of

from .exercises import LANGUAGE_OF_SUFFIX, REPO_ROOT, available_tiers, plan_tier

INDEX = "EXERCISES.md"
# Packages outside the tiers whose exercises the week's tests grade (`pytest -m weekNN`).
OTHER_PACKAGES = ("nn",)
# Task PREFIX + NAME is rung NAME of op OP's kernel ladder (`OP(..., kernel=NAME)`).
LADDER_PREFIXES = {"matmul_": "matmul", "softmax_": "softmax", "conv_": "conv2d_forward"}
# The tier attribute that lists each ladder's rungs.
LADDER_KERNELS = {"matmul": "MATMUL_KERNELS", "softmax": "SOFTMAX_KERNELS",
                  "conv2d_forward": "CONV_KERNELS"}  # fmt: skip

# The line that opens the function around a region: a Python `def`, or a C definition, which
# starts at column 0 with its return type (a statement inside a body is indented); in CUDA perhaps
# `extern "C"` first, and `__launch_bounds__(...)` before the name.
PYTHON_DEF = re.compile(r"^(?P<indent>[ \t]*)(?:async\s+)?def\s+(?P<name>\w+)\s*\(")
C_DEFINITION = re.compile(
    r"^(?!(?:if|for|while|switch|return|else|do)\b)(?:extern\s+\"C\"\s+)?[A-Za-z_][\w \t*]*?"
    r"(?:__launch_bounds__\([^)]*\)\s*)?\b(?P<name>\w+)\s*\("
)


@dataclass(frozen=True)
class Exercise:
    """One task of one file, with how the grader checks it."""

    week: int
    path: str  # relative to the repository, e.g. "stage1_python/linalg.py"
    task: str
    functions: tuple  # the functions its regions lie in, in file order
    tier: tiers.Tier | None  # the registry's tier holding it; None outside the tiers (nn/)
    first_line: int  # where its first region begins (orders the page; not shown, it moves)

    @property
    def package(self):
        return self.path.split("/")[0]

    @property
    def ladder(self):
        """The op whose kernel ladder it writes a rung of, or None."""
        if self.tier and self.task not in OPS:
            for prefix, op in LADDER_PREFIXES.items():
                if self.task.startswith(prefix):
                    return op
        return None

    @property
    def rung(self):
        """The ladder rung it writes (`ladder(..., kernel=rung)`), or None."""
        return self.task.split("_", 1)[1] if self.ladder else None

    @property
    def op(self):
        """The contract's op it writes, or None."""
        return self.task if self.tier and self.task in OPS else None

    @property
    def checked_by(self):
        """What grades it, in words."""
        if self.tier is None:
            return f"the week's tests (-m week{self.week:02d})"
        if self.op:
            return f"op {self.op}"
        if self.rung:
            return f"op {self.ladder}, kernel={self.rung}"
        return "no check of its own"

    @property
    def command(self):
        """The command that grades it."""
        if self.tier is None:
            return f"make test ARGS='-m week{self.week:02d}'"
        variant = f" VARIANT={self.tier.variant}" if self.tier.variant else ""
        return f"make grade STAGE={self.tier.stage}{variant} WEEK={self.week}"


def tier_of(path):
    """The registry's tier whose module or source folders hold `path` (the longest match: a
    variant's subpackage before its package), or None."""
    holding = [
        (len(folder), tier)
        for tier in tiers.TIERS.values()
        for folder in (tier.module.replace(".", "/"), *tier.sources)
        if path.startswith(folder + "/")
    ]
    return max(holding, key=lambda found: found[0], default=(0, None))[1]


def enclosing_function(lines, line_number, language):
    """The name of the function around line `line_number` (1-based) of a source's `lines`;
    `language` is "python" or "c" (tools/exercises.py's LANGUAGE_OF_SUFFIX)."""
    marker = lines[line_number - 1]
    marker_indent = len(marker) - len(marker.lstrip())
    for line in reversed(lines[: line_number - 1]):
        if language == "python":
            found = PYTHON_DEF.match(line)
            if found and len(found["indent"]) < marker_indent:
                return found["name"]
        elif found := C_DEFINITION.match(line):
            return found["name"]
    return "(module level)"


def exercise_packages(root):
    """The packages whose markers become exercises: the tiers, then nn/ and the like."""
    others = [name for name in OTHER_PACKAGES if (root / name / "__init__.py").is_file()]
    return available_tiers(root) + others


def collect(root=REPO_ROOT):
    """Every exercise under `root`, in week, stage and file order.

    Raises ValueError when a marker contradicts the contract: an op's task in another week than the
    one CONTRACT.md gives, a week that has nothing to grade in the marker's stage, or an op's
    task in a tier's Python file other than the module that holds the op.
    """
    exercises = {}
    for package in exercise_packages(root):
        _files, regions = plan_tier(root, package)
        sources = {}
        for region in regions:
            if region.path not in sources:
                sources[region.path] = (root / region.path).read_text(encoding="utf-8").splitlines()
            language = LANGUAGE_OF_SUFFIX[Path(region.path).suffix]
            function = enclosing_function(sources[region.path], region.begin_line, language)
            earlier = exercises.get((region.path, region.task))
            if earlier is None:
                exercises[region.path, region.task] = Exercise(
                    region.week,
                    region.path,
                    region.task,
                    (function,),
                    tier_of(region.path),
                    region.begin_line,
                )
            elif earlier.week != region.week:
                raise ValueError(
                    f"{region.path}: task {region.task} is marked with weeks {earlier.week} "
                    f"and {region.week}"
                )
            elif function not in earlier.functions:
                exercises[region.path, region.task] = replace(
                    earlier, functions=(*earlier.functions, function)
                )
    for exercise in exercises.values():
        check_against_contract(exercise)
    return sorted(exercises.values(), key=sort_key)


def sort_key(exercise):
    stage = exercise.tier.stage if exercise.tier else 0
    return (exercise.week, stage, exercise.path, exercise.first_line)


def check_against_contract(exercise):
    """Raise ValueError when the contract grades `exercise` in another week than its marker's,
    or holds its op in another module of the tier than the Python file it is written in."""
    if exercise.tier is None:
        return
    stage, where = exercise.tier.stage, f"{exercise.path}: task {exercise.task}"
    if exercise.op and week_of(stage, exercise.op) != exercise.week:
        raise ValueError(
            f"{where} is marked week {exercise.week}, but the contract teaches op {exercise.op} "
            f"in week {week_of(stage, exercise.op)} of stage {stage} (contract/weeks.py)"
        )
    path = Path(exercise.path)
    if exercise.op and path.suffix == ".py" and path.stem != OPS[exercise.op].module:
        raise ValueError(
            f"{where}: op {exercise.op} belongs in the tier's {OPS[exercise.op].module}.py "
            "(contract/ops.py), where every tier defines it"
        )
    if not ops_for_week(stage, exercise.week):
        raise ValueError(
            f"{where} is marked week {exercise.week}, which grades no op of stage {stage}"
        )


def given_ops(exercises):
    """{tier label: [ops of the contract with no exercise of their own in that tier]}."""
    tasks = {}
    for exercise in exercises:
        if exercise.tier:
            tasks.setdefault(exercise.tier.label, set()).add(exercise.task)
    return {label: [op for op in OPS if op not in names] for label, names in tasks.items()}


HEADER = """\
# Exercises

<!-- Generated by `make exercises-index` (python -m tools.exercise_index --write): do not edit.
     tests/test_exercise_index.py fails when this page drifts from the markers. -->

Generated by `make exercises-index` (`python -m tools.exercise_index --write`) from the solution
markers in the reference (`BEGIN SOLUTION week N, task NAME`, which `make exercises` turns into
stubs in `workspace/`) and from the op contract ([contract/CONTRACT.md](contract/CONTRACT.md): the
op each task writes, the week that teaches it). One row per task of a file; its regions may span
several functions. `make progress` shows which of yours pass. The command on each row grades the
row's week (`make test ARGS='-m weekNN'` runs the same checks through pytest). A task with no check
of its own is a helper that the week's ops call (a wrong one fails them) or an alternative that the
grader does not call.
"""


def render(exercises):
    """The text of EXERCISES.md."""
    counts = ", ".join(f"{n} in {name}" for name, n in package_counts(exercises).items())
    lines = [HEADER.rstrip("\n"), "", f"{len(exercises)} exercises: {counts}."]
    for week in sorted({exercise.week for exercise in exercises}):
        lines += ["", f"## Week {week}", ""]
        lines += ["| tier | file | function | task | checked by | grader command |"]
        lines += ["| --- | --- | --- | --- | --- | --- |"]
        for exercise in (e for e in exercises if e.week == week):
            tier = exercise.tier.label if exercise.tier else exercise.package
            functions = ", ".join(f"`{name}`" for name in exercise.functions)
            lines.append(
                f"| {tier} | `{exercise.path}` | {functions} | {exercise.task} | "
                f"{exercise.checked_by} | `{exercise.command}` |"
            )
    given = {label: ops for label, ops in given_ops(exercises).items() if ops}
    if given:
        lines += ["", "## Ops given whole", ""]
        lines += ["Ops of the contract with no task of their own in a tier: the tier composes them"]
        lines += ["from its exercises, and the grader checks them with the rest.", ""]
        lines += [f"- {label}: {', '.join(ops)}" for label, ops in given.items()]
    return "\n".join(lines) + "\n"


def package_counts(exercises):
    counts = {}
    for exercise in exercises:
        counts[exercise.package] = counts.get(exercise.package, 0) + 1
    return counts


def drift(root=REPO_ROOT):
    """The difference between `root`'s EXERCISES.md and what its markers give ('' when none)."""
    path = root / INDEX
    written = path.read_text(encoding="utf-8") if path.is_file() else ""
    expected = render(collect(root))
    diff = difflib.unified_diff(
        written.splitlines(keepends=True),
        expected.splitlines(keepends=True),
        f"{INDEX} (committed)",
        f"{INDEX} (from the markers)",
    )
    return "".join(diff)


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m tools.exercise_index", description=__doc__.split("\n\n")[0]
    )
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help=f"rewrite {INDEX}")
    action.add_argument("--check", action="store_true", help=f"exit 1 when {INDEX} has drifted")
    parser.add_argument(
        "--root", type=Path, default=REPO_ROOT, help="repository to read (default: this one)"
    )
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    try:
        if args.check:
            difference = drift(args.root)
            if difference:
                sys.stdout.write(difference)
                print(f"{INDEX} is out of date: run `make exercises-index`", file=sys.stderr)
                return 1
            print(f"{INDEX} matches the markers")
            return 0
        text = render(collect(args.root))
    except ValueError as error:  # MarkerError included
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.write:
        (args.root / INDEX).write_text(text, encoding="utf-8")
        print(f"wrote {INDEX}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

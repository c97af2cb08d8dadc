"""Write the learner workspace: the tier packages with every solution region replaced by a stub.

    python -m tools.exercises --out workspace [--tiers stage1_python,stage2_numpy,nn] [--force]
                              [--solved-through K]   (weeks 1..K written, the rest stubs)

Reference code marks each exercise body (contract/CONTRACT.md, "Weeks and exercise markers"):

    # BEGIN SOLUTION week 1, task matmul           Python
    /* BEGIN SOLUTION week 12, task relu */         C and CUDA (`// BEGIN SOLUTION ...` works too)
    ...
    # END SOLUTION                                 (`/* END SOLUTION */`, `// END SOLUTION`)

In the workspace a Python region becomes, at the region's indentation,
`raise NotImplementedError("week 1, task matmul: not implemented yet (stage1_python/linalg.py)")`,
a C region `return S2C_NOT_IMPLEMENTED;`, which the C tier's wrapper turns into the same
NotImplementedError, and a CUDA region `return S2C_CUDA_NOT_IMPLEMENTED;` (the status of
stage4_cuda/csrc/common.h), or a bare `return;` in a kernel or another function returning void,
whose launcher reports it. Broken markers (unbalanced, nested, without week and task) stop the
tool before it writes anything, and a tier already in the workspace is never overwritten without
--force: it may hold the learner's work. The packages every tier imports (the argument checks,
`argcheck/`, and the contract, `contract/`) are copied as they are when missing (replaced with
--force), so the workspace also runs alone.
The network (`nn/`, weeks 9 and 10) is stubbed the same way; it runs from the repository root with
S2C_NN naming the workspace (nn/__init__.py), since it imports the registry and the data sets.
"""

import argparse
import fnmatch
import re
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import tiers

REPO_ROOT = Path(__file__).resolve().parent.parent
# Packages every tier imports, copied as they are (no exercises in them): the argument checks and
# the contract (a tier's __init__.py takes its ops from it: contract.export_ops).
GIVEN_PACKAGES = ("argcheck", "contract")
# Packages with exercises besides the tiers, stubbed like them but never built: the network.
NETWORK_PACKAGES = ("nn",)
DEFAULT_OUT = Path("workspace")  # where `make grade` looks for the learner's tiers
# Build outputs stay behind (the workspace builds its own); the names follow .gitignore.
SKIPPED_NAMES = ("__pycache__", "_build", "*.so", "*.o", "*.pyc", "_s2c_native*")
LANGUAGE_OF_SUFFIX = {".py": "python", ".c": "c", ".h": "c", ".cu": "c", ".cuh": "c"}
# __attribute__((...)), __launch_bounds__(...): parentheses in a function's head before its name
ATTRIBUTES = re.compile(r"__attribute__\s*\(\(.*?\)\)|__launch_bounds__\s*\([^)]*\)")
CUDA_SUFFIXES = (".cu", ".cuh")  # C whose stubs return common.h's S2C_CUDA_NOT_IMPLEMENTED
# 21 and 22: attention on the CPU, then in C and CUDA; 23: a transformer; 24: streams and NCCL
WEEKS = range(1, 25)

_WEEK_AND_TASK = r"week\s+(?P<week>\d+)\s*,\s*task\s+(?P<task>[A-Za-z_][\w.-]*)"
BEGIN_MARKER = {
    "python": re.compile(rf"^(?P<indent>[ \t]*)#\s*BEGIN SOLUTION\s+{_WEEK_AND_TASK}\s*$"),
    "c": re.compile(
        r"^(?P<indent>[ \t]*)(?P<open>/\*|//)\s*BEGIN SOLUTION\s+"
        rf"{_WEEK_AND_TASK}\s*(?P<close>\*/)?\s*$"
    ),
}
END_MARKER = {
    "python": re.compile(r"^[ \t]*#\s*END SOLUTION\s*$"),
    "c": re.compile(r"^[ \t]*(?:/\*\s*END SOLUTION\s*\*/|//\s*END SOLUTION)\s*$"),
}
BEGIN_EXAMPLE = {
    "python": "# BEGIN SOLUTION week N, task NAME",
    "c": "/* BEGIN SOLUTION week N, task NAME */",
}


class MarkerError(ValueError):
    """A solution marker the tool cannot turn into a stub; the message gives file and line."""


@dataclass(frozen=True)
class Region:
    """One solution region: where it is and which exercise it is."""

    path: str  # relative to the workspace, e.g. "stage1_python/linalg.py"
    week: int
    task: str
    begin_line: int
    end_line: int


def stub_line(language, indent, week, task, path, newline, returns_void=False):
    """The line that replaces a region: it fails loudly, naming the exercise.

    CUDA files return stage4_cuda/csrc/common.h's status, S2C_CUDA_NOT_IMPLEMENTED. A CUDA region
    in a function returning void (a kernel, a device helper; `returns_void`) becomes `return;`: a
    kernel cannot return a status, so the region of the same task in its launcher reports it.
    """
    if language == "python":
        message = f"week {week}, task {task}: not implemented yet ({path})"
        return f'{indent}raise NotImplementedError("{message}"){newline}'
    if path.endswith(CUDA_SUFFIXES):
        if returns_void:
            return f"{indent}return; /* week {week}, task {task}: not implemented yet */{newline}"
        return f"{indent}return S2C_CUDA_NOT_IMPLEMENTED; /* week {week}, task {task} */{newline}"
    return f"{indent}return S2C_NOT_IMPLEMENTED; /* week {week}, task {task} */{newline}"


def in_void_function(lines_before):
    """Whether the C or CUDA function whose body `lines_before` (a file's lines up to a marker)
    ends inside returns void. Its head is the block of column-0 lines above the body (a template,
    the return type, the name; the parameters may go on on indented lines), and the body's lines
    are indented; `void *` is a pointer, not void."""
    head = []
    for line in reversed(lines_before):
        bare = line.rstrip()
        if bare[:1] in ("", " ", "\t") or bare.startswith(("{", "#", "/*", "*", "//")):
            if head:
                break  # above the head
            continue  # the body, a parameter line, the `{` alone on its line
        if bare.startswith("}") or bare.endswith((";", "*/", "}")):
            break  # the end of what comes before the function
        head.append(bare)
    declaration = ATTRIBUTES.sub("", " ".join(reversed(head))).split("(")[0]
    return re.search(r"\bvoid\b(?!\s*\*)", declaration) is not None


def match_begin(language, line):
    """The BEGIN marker's match (indent, week, task), or None when `line` is malformed."""
    match = BEGIN_MARKER[language].match(line)
    if match and language == "c" and (match["open"] == "/*") != (match["close"] is not None):
        return None  # "/*" without "*/", or "//" with one
    return match


def stub_regions(text, language, path, solved=None):
    """Replace each solution region of `text` by its stub.

    `language` is "python" or "c"; `path` names the file in messages and in the stubs.
    `solved(week, task)`, when given, picks the regions that keep the reference's code, as a
    learner who wrote them has it: their markers go, their body stays.
    Returns (new_text, [Region, ...] of the stubbed regions); raises MarkerError on any
    malformed marker.
    """
    kept, regions = [], []
    open_region = None  # (begin_line, week, task, solved) while inside a region
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        bare = line.rstrip("\r\n")
        where = f"{path}:{number}"
        if "BEGIN SOLUTION" in line:
            match = match_begin(language, bare)
            if match is None:
                raise MarkerError(
                    f"{where}: malformed marker {bare.strip()!r}; "
                    f"write it as '{BEGIN_EXAMPLE[language]}' alone on its line"
                )
            if open_region is not None:
                raise MarkerError(
                    f"{where}: nested BEGIN SOLUTION; the region opened on line "
                    f"{open_region[0]} is not closed yet"
                )
            week, task = int(match["week"]), match["task"]
            if week not in WEEKS:
                raise MarkerError(
                    f"{where}: week {week} is not a week of the course (1..{max(WEEKS)})"
                )
            open_region = (number, week, task, bool(solved and solved(week, task)))
            if not open_region[3]:
                newline = line[len(bare) :]
                void = language == "c" and in_void_function(kept)
                kept.append(stub_line(language, match["indent"], week, task, path, newline, void))
        elif "END SOLUTION" in line:
            if END_MARKER[language].match(bare) is None:
                raise MarkerError(f"{where}: malformed END SOLUTION marker {bare.strip()!r}")
            if open_region is None:
                raise MarkerError(f"{where}: END SOLUTION without a BEGIN SOLUTION before it")
            begin_line, week, task, kept_solved = open_region
            if not kept_solved:
                regions.append(Region(path, week, task, begin_line, number))
            open_region = None
        elif open_region is None or open_region[3]:
            kept.append(line)
    if open_region is not None:
        raise MarkerError(f"{path}:{open_region[0]}: BEGIN SOLUTION never closed by END SOLUTION")
    return "".join(kept), regions


def is_skipped(relative):
    """True for build outputs, which the workspace must not inherit."""
    return any(
        fnmatch.fnmatch(part, pattern) for part in relative.parts for pattern in SKIPPED_NAMES
    )


def plan_tier(root, tier, solved=None):
    """Read one tier package and return ([(relative path, bytes), ...], [Region, ...]);
    `solved` picks regions to keep written (stub_regions)."""
    files, regions = [], []
    for source in sorted((root / tier).rglob("*")):
        relative = source.relative_to(root)
        if source.is_dir() or is_skipped(relative):
            continue
        path = relative.as_posix()
        language = LANGUAGE_OF_SUFFIX.get(source.suffix)
        if language is None:
            content = source.read_bytes()
            if re.search(rb"(BEGIN|END) SOLUTION", content):
                raise MarkerError(f"{path}: solution markers in a file the tool cannot stub")
        else:
            text, found = stub_regions(source.read_text(encoding="utf-8"), language, path, solved)
            content = text.encode("utf-8")
            regions += found
        files.append((relative, content))
    return files, regions


def available_tiers(root):
    """The registry's tier packages (tiers/) that `root` holds, in stage order."""
    return [name for name in tiers.packages() if (root / name / "__init__.py").is_file()]


def exercise_packages(root):
    """Every package of `root` with exercises: its tiers, then the network (NETWORK_PACKAGES)."""
    network = [name for name in NETWORK_PACKAGES if (root / name / "__init__.py").is_file()]
    return available_tiers(root) + network


def check_destination(out, packages, root, force):
    """Refuse to write into the reference, or over a tier without --force."""
    if out.resolve() == root.resolve():
        raise SystemExit("error: --out is the repository itself; choose a folder such as workspace")
    existing = [package for package in packages if (out / package).exists()]
    if existing and not force:
        names = ", ".join(f"{out}/{tier}" for tier in existing)
        raise SystemExit(
            f"error: {names} already {'exists' if len(existing) == 1 else 'exist'} and may hold "
            f"your work; nothing was written.\n"
            f"  Keep it and write elsewhere: make exercises WORKSPACE=another_folder "
            f"(then grade it with IMPL=another_folder).\n"
            f"  Or replace it, losing its changes: make exercises ARGS=--force "
            f"(python -m tools.exercises --out {out} --force)."
        )


def write_workspace(out, plans, root, force):
    """Write the planned files; with --force the listed tiers are replaced whole."""
    for tier, (files, _regions) in plans.items():
        if force and (out / tier).exists():
            shutil.rmtree(out / tier)
        for relative, content in files:
            target = out / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
            shutil.copymode(root / relative, target)


def write_given_packages(out, root, force):
    """Copy the packages the tiers import (GIVEN_PACKAGES) where missing, or all with --force, so
    that the workspace runs on its own too (`cd workspace && python -m stage3_c.build`)."""
    for package in GIVEN_PACKAGES:
        target = out / package
        if not (root / package).is_dir() or (target.exists() and not force):
            continue
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(root / package, target, ignore=shutil.ignore_patterns(*SKIPPED_NAMES))


def build_tier(out, build):
    """Run the build step `build` of a tier copied to the workspace (the registry's, e.g.
    stage3_c.build), as `make build` does for the reference.

    Run inside the workspace so that the package built is the copy. The compiler's output is shown
    only on failure: warnings about the stubs (helpers not used yet) are noise at this point.
    """
    package = build.split(".")[0]
    print(f"building {out}/{package} (python -m {build}) ...", flush=True)
    result = subprocess.run(
        [sys.executable, "-m", build],
        cwd=out,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if result.returncode != 0:
        print(result.stdout, file=sys.stderr)
        raise SystemExit(f"error: building {out}/{package} failed (exit {result.returncode})")
    print(f"  {result.stdout.strip().splitlines()[-1]}")
    print(f"  after editing its sources, `make grade` rebuilds it (python -m {build} --if-stale)")


def print_summary(out, plans):
    """Files written and exercise regions per week."""
    regions = [region for _files, found in plans.values() for region in found]
    file_count = sum(len(files) for files, _found in plans.values())
    print(
        f"wrote {out}/: {len(plans)} package(s), {file_count} files, "
        f"{len(regions)} exercise regions"
    )
    per_week = Counter(region.week for region in regions)
    tiers_of_week = defaultdict(set)
    for region in regions:
        tiers_of_week[region.week].add(region.path.split("/")[0])
    for week in sorted(per_week):
        names = ", ".join(sorted(tiers_of_week[week]))
        print(f"  week {week:2d}: {per_week[week]:3d} regions  ({names})")
    if regions:
        first = min(regions, key=lambda region: region.week)
        where = "" if out == DEFAULT_OUT else f" IMPL={out}"
        if first.path.startswith("stage"):
            stage = first.path[len("stage")]
            print(f"next: make grade STAGE={stage} WEEK={first.week}{where}")
        else:  # the network alone: graded by its week's tests
            print(f"next: make test{where} ARGS='-m week{first.week:02d}'")


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m tools.exercises", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="workspace folder")
    parser.add_argument(
        "--tiers",
        help="comma-separated packages: tiers and nn (default: every tier of the registry, tiers/, "
        "and nn)",
    )
    parser.add_argument(
        "--force", action="store_true", help="replace tiers already in the workspace (loses edits)"
    )
    parser.add_argument(
        "--root", type=Path, default=REPO_ROOT, help="reference code to read (default: this repo)"
    )
    parser.add_argument(
        "--solved-through",
        type=int,
        default=0,
        metavar="K",
        help="keep the reference's code of the exercises of weeks 1..K, as a learner who has done "
        "them has it (the tests' workspaces partway through the course)",
    )
    args = parser.parse_args(argv)
    if args.solved_through not in (0, *WEEKS):
        parser.error(f"--solved-through must be a week, 0..{max(WEEKS)}, got {args.solved_through}")
    return args


def main(argv=None):
    args = parse_args(argv)
    known = exercise_packages(args.root)
    chosen = args.tiers.split(",") if args.tiers else known
    unknown = [package for package in chosen if package not in known]
    if unknown or not chosen:
        raise SystemExit(f"error: unknown package(s) {unknown}; available: {', '.join(known)}")
    check_destination(args.out, chosen, args.root, args.force)
    def solved(week, _task):
        return week <= args.solved_through

    try:
        plans = {package: plan_tier(args.root, package, solved) for package in chosen}
    except MarkerError as error:
        raise SystemExit(f"error: {error}; nothing was written") from None
    write_workspace(args.out, plans, args.root, args.force)
    write_given_packages(args.out, args.root, args.force)
    for tier in tiers.TIERS.values():
        if not tier.build or tier.package not in plans:
            continue
        if tier.gpu_needed:  # built by the first command that can run it, on a GPU
            print(f"not building {args.out}/{tier.package} for the {tier.name} tier: {tier.name} "
                  "needs a GPU (the CUDA simulator runs only the numba variant)")
            continue
        build_tier(args.out, tier.build)
    print_summary(args.out, plans)


if __name__ == "__main__":
    main()

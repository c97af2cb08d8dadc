"""What the curriculum's notebooks share: the repository on the path, the committed results, and
the inline check that grades the learner's workspace.

Each notebook starts with `import _course` (nbmake and `make notebooks` run it from this folder),
which puts the repository root on sys.path so that `grader`, `nn` and the tiers import. The
notebooks compute every figure from code or from the committed records in curriculum/results/;
nothing here holds a measured number.
"""

import io
import json
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
if str(REPOSITORY) not in sys.path:
    sys.path.insert(0, str(REPOSITORY))

import tiers  # noqa: E402  (importable only once the repository is on the path)

# S2C_RESULTS_DIR plots another folder of records, e.g. results copied from a GPU machine.
RESULTS = Path(os.environ.get("S2C_RESULTS_DIR") or REPOSITORY / "curriculum" / "results")
WORKSPACE = REPOSITORY / "workspace"


# -- the committed results ---------------------------------------------------------------------


def grader_records():
    """{file name: record} of the grader's committed records (grade-*.json, bench-*.json; not
    the library bench's bench-stage4-libraries.json, a record of another kind)."""
    records = {
        path.name: json.loads(path.read_text())
        for path in sorted(RESULTS.glob("*.json"))
        if path.name.startswith(("grade-", "bench-"))
    }
    return {name: record for name, record in records.items() if "runs" in record}


def machine_name(machine):
    """How a record's machine is named in titles: its GPU when it has one, else its CPU (a
    grader record names them cpu and cores, a benchmark's processor and cpu_count)."""
    if machine.get("gpu"):
        return machine["gpu"]
    cpu = machine.get("cpu") or machine.get("processor") or "unknown CPU"
    return f"{cpu}, {machine.get('cores') or machine.get('cpu_count')} cores"


def speed_rows(records):
    """One dict per passed speed result of every record: the graded tier's timing and, where it
    was timed at the same size, its reference tier's (`reference_seconds`). Fields a record lacks
    are None, so records of older and newer grader versions read alike."""
    rows = []
    for record in records.values():
        for run in record["runs"]:
            for result in run["results"]:
                timing = result.get("timing") or {}
                if result["check"] != "speed" or result["status"] != "passed":
                    continue
                if "median" not in timing:
                    continue
                reference = timing.get("reference") or {}
                rows.append({
                    "machine": machine_name(record["machine"]),
                    "tier": run["graded"]["label"],
                    "op": result["op"],
                    "size": result["size"],
                    "seconds": timing["median"],
                    "flops": timing.get("flops"),
                    "bytes": timing.get("bytes"),
                    "gflops": timing.get("gflops"),
                    "gbps": timing.get("gbps"),
                    "speedup": timing.get("speedup"),
                    "reference_tier": reference.get("tier"),
                    "reference_seconds": reference.get("median"),
                    "library": (timing.get("library") or {}).get("name"),
                    "library_seconds": (timing.get("library") or {}).get("median"),
                    "library_fraction": timing.get("library_fraction"),
                    "ceilings": timing.get("ceilings"),
                })
    return rows


def ladder_rows(records):
    """The bench's matmul ladder: one dict per kernel (or library) and thread count."""
    rows = []
    for record in records.values():
        for run in record["runs"]:
            for result in run["results"]:
                timing = result.get("timing") or {}
                if result["check"] not in ("kernel", "library") or result["status"] != "passed":
                    continue
                rows.append({
                    "machine": machine_name(record["machine"]),
                    "label": timing.get("kernel") or result["size"].split(",")[0],
                    "library": result["check"] == "library",
                    "threads": timing.get("threads"),
                    "gflops": timing.get("gflops"),
                    "size": result["size"].split(", ")[-1],
                })
    return rows


def by_op(rows):
    """{op: [rows]} in the order the rows come (each op's sizes smallest first)."""
    grouped = defaultdict(list)
    for row in rows:
        grouped[row["op"]].append(row)
    return dict(grouped)


# -- the inline check --------------------------------------------------------------------------


def learner_impl(stage):
    """(impl, sentence): workspace/ when it holds stage `stage`'s package (as `make grade` decides),
    else None (the repository's reference) and a sentence saying which code is graded."""
    package = tiers.find(stage).package
    if (WORKSPACE / package / "__init__.py").exists():
        return str(WORKSPACE), f"grading your workspace/{package}"
    return None, (
        f"no workspace/{package} (`make exercises` writes it): grading the repository's "
        "reference instead, which shows what a finished exercise reports"
    )


def check(stage, ops, checks=("correct", "grad"), table=True):
    """Grade `ops` of stage `stage` with the repository's grader, on the learner's workspace when
    it has the stage (the reference otherwise, saying so); prints the grader's table (with
    table=False only its last line, `N passed, N failed`) and returns its JSON record, read back
    from a temporary file: a notebook never writes results."""
    from grader.run import Options, grade  # the grader's own entry point, as `make grade` uses

    impl, sentence = learner_impl(stage)
    print(sentence)
    with tempfile.TemporaryDirectory() as folder:
        options = Options(stage=stage, ops=tuple(ops), impl=impl, quick=True, checks=tuple(checks),
                          json=str(Path(folder) / "check.json"))
        report = io.StringIO()
        grade(options, out=report)
        record = json.loads(Path(options.json).read_text())  # plain JSON, as committed records
    rows, _written, recap = report.getvalue().partition("\nresults written to")
    recap = recap.partition("\n")[2]  # after the line naming the (temporary) file
    print(rows + "\n" + recap if table else recap.splitlines()[-1])
    return record

"""The release gate of the exercises (ARCHITECTURE.md, "Exercises").

`python -m tools.exercises` turns the reference into a learner workspace. On a workspace generated
in a temporary folder these tests prove that
  (a) no solution text reaches it,
  (b) every module imports, and its C tier compiles,
  (c) the grader reports each stub as not implemented, naming its week, without a traceback,
  (d) the reference passes the same grader runs (stage 1 here; stages 2 and 3 in
      test_grader_planted_bugs.py, the baseline of their planted bugs),
  (e) the tool refuses broken markers, and never overwrites a learner's tier silently.
"""

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from nn import exits
from tools.exercises import (
    REPO_ROOT,
    WEEKS,
    MarkerError,
    available_tiers,
    exercise_packages,
    is_skipped,
    plan_tier,
    stub_regions,
)

TIERS = available_tiers(REPO_ROOT)
PACKAGES = exercise_packages(REPO_ROOT)  # the tiers and the network (nn/)
STAGES = sorted({int(tier[len("stage")]) for tier in TIERS if tier[len("stage")] in "123"})
GRADER_PRESENT = (REPO_ROOT / "grader" / "__main__.py").is_file()
LAST_LINE = re.compile(
    r"^(?:\w+: )?(?P<passed>\d+) passed, (?P<failed>\d+) failed(, \d+ skipped)?$"
)
needs_grader = pytest.mark.skipif(not GRADER_PRESENT, reason="grader/ is not written yet")


def run(args, cwd=REPO_ROOT, env=None, timeout=900):
    """Run `python args...`; return (exit code, stdout and stderr together)."""
    environment = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", **(env or {})}
    done = subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
    )
    return done.returncode, done.stdout


def solution_and_given_lines(text):
    """Split a reference file's stripped lines into (inside regions, outside regions).

    Deliberately independent of the tool's parser: everything between a line mentioning
    BEGIN SOLUTION and the next mentioning END SOLUTION is solution.
    """
    solution, given, inside = set(), set(), False
    for line in text.splitlines():
        if "BEGIN SOLUTION" in line:
            inside = True
        elif "END SOLUTION" in line:
            inside = False
        else:
            (solution if inside else given).add(line.strip())
    return solution, given


def reference_sources():
    """Relative paths of the reference's tier and network files that the workspace must hold."""
    return sorted(
        path.relative_to(REPO_ROOT)
        for tier in PACKAGES
        for path in (REPO_ROOT / tier).rglob("*")
        if path.is_file() and not is_skipped(path.relative_to(REPO_ROOT))
    )


@pytest.fixture(scope="module")
def workspace(exercise_workspace):
    """A workspace written by the tool exactly as `make exercises` does (C tier built), shared
    with the other tests that read one (conftest.py)."""
    if not TIERS:
        pytest.skip("no tier package is written yet")
    return exercise_workspace


# (a) ---------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_no_solution_text_reaches_the_workspace(workspace):
    regions_seen = 0
    for relative in reference_sources():
        copy = workspace / relative
        assert copy.is_file(), f"{relative} is missing from the workspace"
        if copy.suffix not in {".py", ".c", ".h", ".cu", ".cuh"}:
            continue
        reference = (REPO_ROOT / relative).read_text(encoding="utf-8")
        written = copy.read_text(encoding="utf-8")
        regions_seen += reference.count("BEGIN SOLUTION")
        assert "BEGIN SOLUTION" not in written and "END SOLUTION" not in written, relative
        solution, given = solution_and_given_lines(reference)
        leaked = (solution - given - {""}) & {line.strip() for line in written.splitlines()}
        assert not leaked, f"solution lines reached {relative}: {sorted(leaked)[:5]}"
    assert regions_seen > 0, "the reference has no solution region at all"


# (b) ---------------------------------------------------------------------------------------------
IMPORT_EVERY_MODULE = """
import importlib, json, pkgutil, sys, traceback
workspace, tiers, report = sys.argv[1], sys.argv[2].split(","), {}
for tier in tiers:
    try:
        package = importlib.import_module(tier)
        names = [m.name for m in pkgutil.walk_packages(package.__path__, tier + ".")]
        modules = [package] + [importlib.import_module(name) for name in names]
        outside = [m.__name__ for m in modules if not m.__file__.startswith(workspace)]
        report[tier] = {"outside": outside, "available": list(package.available())}
    except Exception:
        report[tier] = {"error": traceback.format_exc()}
print(json.dumps(report))
"""


@pytest.mark.slow
def test_every_workspace_module_imports_and_the_c_tier_compiles(workspace):
    # Run inside the workspace with only it on the path, so no reference module can stand in.
    code, output = run(
        ["-c", IMPORT_EVERY_MODULE, str(workspace), ",".join(TIERS)],
        cwd=workspace,
        env={"PYTHONPATH": str(workspace)},
    )
    assert code == 0, output
    report = json.loads(output.strip().splitlines()[-1])
    for tier, result in report.items():
        assert "error" not in result, f"{tier} does not import:\n{result['error']}"
        assert result["outside"] == [], f"{tier} imported modules outside the workspace"
    if "stage3_c" in report:
        ok, reason = report["stage3_c"]["available"]
        assert ok, f"the workspace's C tier is not usable: {reason}"


# (c) and (d) -------------------------------------------------------------------------------------
def grade(stage, json_path, *extra):
    """Run the grader quickly on one stage; return (exit code, output, last line's match).

    The JSON record goes to `json_path`, not to curriculum/results/.
    """
    command = ["-m", "grader", "--stage", str(stage), "--quick", "--json", str(json_path), *extra]
    code, output = run(command)
    lines = output.strip().splitlines()
    return code, output, LAST_LINE.match(lines[-1].strip()) if lines else None


@needs_grader
@pytest.mark.slow
@pytest.mark.parametrize("stage", STAGES)
def test_grader_reports_every_workspace_stub_as_not_implemented(workspace, stage, tmp_path):
    from contract import OPS, week_of

    code, output, last = grade(stage, tmp_path / "grade.json", "--impl", str(workspace))
    assert code != 0, output
    assert "Traceback" not in output, output
    assert last and int(last["passed"]) == 0 and int(last["failed"]) > 0, output[-2000:]
    for op in OPS:
        week = week_of(stage, op)
        line = rf"^\s*{op}: not implemented \(week {week}, task \w+\)$"
        assert re.search(line, output, re.MULTILINE), f"{op}: no 'not implemented (week {week}'"


@pytest.mark.slow
def test_training_on_the_workspace_stops_at_its_first_stub(workspace, tmp_path):
    code, output = run(["-m", "nn.train", "--stage", "2", "--impl", str(workspace), "--model",
                        "xor", "--data", "xor", "--no-progress", "--run-dir", str(tmp_path)])
    assert code == exits.TIER, output
    assert "Traceback" not in output, output
    stub = re.search(r"^error: week \d+, task \w+: not implemented yet", output, re.MULTILINE)
    assert stub, output


@needs_grader
@pytest.mark.slow
def test_the_reference_stage1_passes_the_grader(tmp_path):
    # the references of stages 2 and 3 are graded in full by tests/test_grader_planted_bugs.py,
    # as the baseline their planted bugs fail against
    code, output, last = grade(1, tmp_path / "grade.json")
    assert last and int(last["failed"]) == 0 and int(last["passed"]) > 0, output[-2000:]
    assert code == 0, output[-2000:]


# (e) ---------------------------------------------------------------------------------------------
PYTHON_SOURCE = textwrap.dedent(
    """\
    def double(values):
        checked = list(values)
        if checked:
            # BEGIN SOLUTION week 1, task double
            result = [2 * v for v in checked]
            # END SOLUTION
            return result
        return []
    """
)

C_SOURCE = textwrap.dedent(
    """\
    int s2c_double(const float *x, float *y, long n) {
        // BEGIN SOLUTION week 12, task double
        for (long i = 0; i < n; i++) y[i] = 2 * x[i];
        return 0;
        // END SOLUTION
    }
    """
)


def test_a_python_region_becomes_a_stub_that_names_its_week_and_task():
    text, regions = stub_regions(PYTHON_SOURCE, "python", "stage1_python/double.py")
    assert [(r.week, r.task, r.begin_line, r.end_line) for r in regions] == [(1, "double", 4, 6)]
    assert "2 * v" not in text and "return result" in text
    namespace = {}
    exec(compile(text, "double.py", "exec"), namespace)
    with pytest.raises(NotImplementedError) as raised:
        namespace["double"]([1.5])
    expected = "week 1, task double: not implemented yet (stage1_python/double.py)"
    assert str(raised.value) == expected
    assert namespace["double"]([]) == []  # code outside the region is untouched


def test_a_c_region_becomes_a_not_implemented_status_at_its_indentation():
    text, regions = stub_regions(C_SOURCE, "c", "stage3_c/csrc/double.c")
    assert [(r.week, r.task) for r in regions] == [(12, "double")]
    assert text.splitlines()[1].startswith("    return S2C_NOT_IMPLEMENTED;")
    assert "2 * x[i]" not in text and text.splitlines()[0] == C_SOURCE.splitlines()[0]


# A launcher after a kernel, its head on two lines (the shape of linalg.cu's swap_middle_axes); a
# kernel whose template and head take three; a static helper returning int, its type on a line
# of its own.
CUDA_SOURCE = textwrap.dedent(
    """\
    __global__ void twice_kernel(const float *x, float *y, long n) {
        long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
        if (i < n) y[i] = 2 * x[i];
    }

    extern "C" int s2c_cuda_twice(const float *x, float *y, long a,
                                  long b) {
        long n = a * b;
        if (n == 0) return S2C_CUDA_OK;
        // BEGIN SOLUTION week 14, task twice
        twice_kernel<<<1, 1>>>(x, y, n);
        return S2C_CUDA_OK;
        // END SOLUTION
    }

    template <int N>
    __global__ void __launch_bounds__(256)
    thrice_kernel(const float *x,
                  float *y) {
        // BEGIN SOLUTION week 14, task thrice
        y[threadIdx.x] = 3 * x[threadIdx.x];
        // END SOLUTION
    }

    __attribute__((always_inline)) static inline int
    rows_of(const float *x,
            long n) {
        // BEGIN SOLUTION week 14, task rows
        return (int)n;
        // END SOLUTION
    }
    """
)


def test_a_cuda_region_returns_a_status_in_a_status_function_and_nothing_in_a_kernel():
    text, regions = stub_regions(CUDA_SOURCE, "c", "stage4_cuda/csrc/twice.cu")
    assert [r.task for r in regions] == ["twice", "thrice", "rows"]
    stubs = [line.strip() for line in text.splitlines() if "task" in line]
    assert stubs == [
        "return S2C_CUDA_NOT_IMPLEMENTED; /* week 14, task twice */",
        "return; /* week 14, task thrice: not implemented yet */",
        "return S2C_CUDA_NOT_IMPLEMENTED; /* week 14, task rows */",
    ]


def test_a_launcher_after_a_declaration_of_a_void_kernel_returns_a_status():
    # the head ends where the lines above it stop being its own: here a declaration whose last
    # line is indented and whose first is a void kernel's
    source = textwrap.dedent(
        """\
        __global__ void scale_kernel(const float *x, float *y,
                                     long n);

        /* y = 2 x */
        extern "C" int s2c_cuda_scale(const float *x, float *y, long n) {
            // BEGIN SOLUTION week 14, task scale
            return S2C_CUDA_OK;
            // END SOLUTION
        }
        """
    )
    text, _ = stub_regions(source, "c", "stage4_cuda/csrc/scale.cu")
    assert "    return S2C_CUDA_NOT_IMPLEMENTED; /* week 14, task scale */\n" in text


@pytest.mark.parametrize(
    ("source", "complaint"),
    [
        ("# BEGIN SOLUTION week 1, task a\nx = 1\n", "never closed"),
        ("x = 1\n# END SOLUTION\n", "without a BEGIN"),
        (
            "# BEGIN SOLUTION week 1, task a\n# BEGIN SOLUTION week 1, task b\n"
            "# END SOLUTION\n# END SOLUTION\n",
            "nested",
        ),
        ("# BEGIN SOLUTION\nx = 1\n# END SOLUTION\n", "malformed"),
        ("# BEGIN SOLUTION week 3\nx = 1\n# END SOLUTION\n", "malformed"),
        ("# BEGIN SOLUTION task a\nx = 1\n# END SOLUTION\n", "malformed"),
        (f"# BEGIN SOLUTION week {max(WEEKS) + 1}, task a\nx = 1\n# END SOLUTION\n",
         f"week {max(WEEKS) + 1}"),
        ("# BEGIN SOLUTION week 2, task a\nx = 1\n# END SOLUTION here\n", "malformed END"),
        ('x = "BEGIN SOLUTION week 2, task a"\n', "malformed"),
    ],
)
def test_broken_python_markers_are_refused_with_file_and_line(source, complaint):
    with pytest.raises(MarkerError, match=complaint) as raised:
        stub_regions(source, "python", "stage1_python/broken.py")
    assert re.match(r"stage1_python/broken\.py:\d+: ", str(raised.value))


@pytest.mark.parametrize(
    "source",
    [
        "/* BEGIN SOLUTION week 12, task relu\nreturn 0;\n/* END SOLUTION */\n",
        "// BEGIN SOLUTION week 12, task relu */\nreturn 0;\n// END SOLUTION\n",
        "/* BEGIN SOLUTION week 12 */\nreturn 0;\n/* END SOLUTION */\n",
    ],
)
def test_broken_c_markers_are_refused(source):
    with pytest.raises(MarkerError, match="malformed"):
        stub_regions(source, "c", "stage3_c/csrc/broken.c")


def write_fake_reference(root, source):
    """A one-tier reference holding `source` as stage1_python/ops.py."""
    (root / "stage1_python").mkdir(parents=True)
    (root / "stage1_python" / "__init__.py").write_text("from .ops import double\n")
    (root / "stage1_python" / "ops.py").write_text(source)


def test_the_tool_writes_nothing_when_a_marker_is_broken(tmp_path):
    write_fake_reference(tmp_path / "ref", PYTHON_SOURCE.replace("# END SOLUTION", "# done"))
    out = tmp_path / "ws"
    code, output = run(
        ["-m", "tools.exercises", "--root", str(tmp_path / "ref"), "--out", str(out)]
    )
    assert code != 0
    assert "stage1_python/ops.py:4: BEGIN SOLUTION never closed" in output
    assert "Traceback" not in output and not out.exists()


def test_the_tool_never_overwrites_a_tier_without_force(tmp_path):
    write_fake_reference(tmp_path / "ref", PYTHON_SOURCE)
    out = tmp_path / "ws"
    tool = ["-m", "tools.exercises", "--root", str(tmp_path / "ref"), "--out", str(out)]
    code, output = run(tool)
    assert code == 0, output
    assert "1 exercise regions" in output and "week  1:   1 regions" in output
    learners_work = out / "stage1_python" / "ops.py"
    learners_work.write_text("# my answer\n")

    code, output = run(tool)
    assert code != 0 and "already exists" in output and "--force" in output
    assert learners_work.read_text() == "# my answer\n"

    code, output = run([*tool, "--force"])
    assert code == 0, output
    assert "raise NotImplementedError" in learners_work.read_text()


def test_the_tool_refuses_to_write_over_the_reference(tmp_path):
    write_fake_reference(tmp_path / "ref", PYTHON_SOURCE)
    code, output = run(
        ["-m", "tools.exercises", "--root", str(tmp_path / "ref"), "--out", "."],
        cwd=tmp_path / "ref",
        env={"PYTHONPATH": str(REPO_ROOT)},
    )
    assert code != 0 and "the repository itself" in output
    assert "2 * v" in (tmp_path / "ref" / "stage1_python" / "ops.py").read_text()


# The curriculum names what the code holds -------------------------------------------------------
CURRICULUM = REPO_ROOT / "curriculum"


def test_each_week_page_names_the_files_and_tasks_of_its_exercises():
    missing = []
    for package in PACKAGES:
        for region in plan_tier(REPO_ROOT, package)[1]:
            page = CURRICULUM / f"week{region.week:02d}.md"
            text = page.read_text(encoding="utf-8") if page.is_file() else ""
            missing += [
                f"{page.name}: {name}"
                for name in (region.path, region.task)
                if f"`{name}`" not in text
            ]
    assert not missing, f"week pages lack exercises of the code: {sorted(set(missing))}"


def test_the_learning_path_links_every_week():
    path = (CURRICULUM / "LEARNING_PATH.md").read_text(encoding="utf-8")
    for week in WEEKS:
        assert (CURRICULUM / f"week{week:02d}.md").is_file()
        assert f"(week{week:02d}.md)" in path

"""`make grade`, `make train` and `make bench` never run an old build of a C tier: loading a tier
(tiers/loading.py) rebuilds it when a source changed, and a failed rebuild is a failure that shows
the compiler's error."""

import io

from c_workspace import c_workspace, write_sources

from grader.run import Options, grade


def grade_ops(workspace, *ops):
    """The grader's report of `ops` on workspace's stage 3 (exit status, text)."""
    out = io.StringIO()
    options = Options(stage=3, impl=str(workspace), ops=ops, quick=True)
    options.json = str(workspace / "grade.json")
    status, _ = grade(options, out)
    return status, out.getvalue()


def test_a_changed_c_source_is_rebuilt_before_grading(tmp_path):
    c_workspace(tmp_path)
    status, text = grade_ops(tmp_path, "scale")
    assert status == 1 and "scale: not implemented (week 11, task scale)" in text, text

    built = sorted((tmp_path / "stage3_c").glob("_s2c_native.*.so"))
    assert built, "grading built the workspace's tier"
    write_sources(tmp_path, solved={"scale"})  # the learner writes scale, builds nothing
    status, text = grade_ops(tmp_path, "scale")
    assert status == 0, text

    source = tmp_path / "stage3_c" / "csrc" / "linalg.c"
    source.write_text(source.read_text() + "\nint s2c_broken(void) { return undeclared; }\n")
    status, text = grade_ops(tmp_path, "scale")
    assert status == 1
    assert "its sources changed and rebuilding it failed" in text, text
    assert "linalg.c" in text and "undeclared" in text, text  # the compiler's own words

"""A segfault in a learner's C code is reported at the C file, line and function (found by
re-running the crashing check under AddressSanitizer), not at the Python line that called C."""

import io
import shutil

import pytest
from c_workspace import c_workspace

from grader.run import Options, grade

CRASH = "    *(volatile float *)0 = x[0]; /* planted: a write through NULL */\n"


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
def test_a_c_segfault_names_the_c_line(tmp_path):
    c_workspace(tmp_path, solved={"relu"})
    source = tmp_path / "stage3_c" / "csrc" / "activations.c"
    lines = source.read_text().splitlines(keepends=True)
    body = lines.index("int s2c_relu(const float *x, float *y, int64_t size)\n") + 2
    lines.insert(body, CRASH)
    source.write_text("".join(lines))

    out = io.StringIO()
    options = Options(stage=3, impl=str(tmp_path), ops=("relu",), quick=True)
    options.json = str(tmp_path / "grade.json")
    status, _ = grade(options, out)
    text = out.getvalue()

    assert status == 1
    assert "the tier crashed (signal SIGSEGV)" in text, text
    assert f"in C at {source}:{body + 1} in s2c_relu" in text, text

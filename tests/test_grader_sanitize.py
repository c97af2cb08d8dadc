"""`make sanitize` (grader/sanitize.py) with a stand-in for compute-sanitizer, a script that runs
the command it is given and prints the summary line compute-sanitizer ends with: the grader's
rows are shown as they come, its reports counted, and the exit status says whether any were."""

import os
import stat
import sys

import pytest

from grader import sanitize

STAND_IN = """#!{python}
import subprocess, sys
arguments = sys.argv[1:]
while arguments[0].startswith("--"):  # its own options come before the program
    arguments = arguments[1:]
status = subprocess.run(arguments).returncode
print("========= ERROR SUMMARY: {errors} errors", flush=True)
sys.exit(status)
"""


def stand_in_sanitizer(folder, errors):
    script = folder / "compute-sanitizer"
    script.write_text(STAND_IN.format(python=sys.executable, errors=errors))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return folder


@pytest.mark.parametrize("errors", [0, 2])
def test_the_graders_rows_show_and_reports_are_counted(tmp_path, monkeypatch, capsys, errors):
    folder = stand_in_sanitizer(tmp_path, errors)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    status = sanitize.main(["--variant", "numba", "--tools", "memcheck", "--ops", "relu"])
    printed = capsys.readouterr().out
    assert "=== compute-sanitizer --tool=memcheck" in printed
    assert "relu                          correct  passed" in printed  # the grader's own row
    assert f"memcheck: {errors} reports (grader: " in printed
    assert printed.rstrip().endswith(f"{errors} sanitizer reports")
    assert status == (1 if errors else 0)


@pytest.mark.parametrize("weeks", [["--through", "18"], ["--week", "16"]])
def test_a_workspace_partway_through_is_checked_as_far_as_it_goes(tmp_path, monkeypatch, weeks):
    """`make sanitize STAGE=4 THROUGH=18` on a week-18 workspace: the grader under each tool is
    given the same weeks, so the stubs of weeks 19 and 22 are skipped, not failed."""
    commands = []

    def record(command):
        commands.append(command)
        return "========= ERROR SUMMARY: 0 errors\n1 passed, 0 failed\n", 0

    monkeypatch.setattr(sanitize.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(sanitize, "run_shown", record)
    assert sanitize.main(["--impl", str(tmp_path), *weeks]) == 0
    assert len(commands) == len(sanitize.TOOLS)
    for command in commands:
        grader = command[command.index("grader") :]
        assert grader[grader.index(weeks[0]) + 1] == weeks[1]


def test_a_record_is_of_the_whole_tier(capsys):
    with pytest.raises(SystemExit):
        sanitize.main(["--results", "--through", "18"])
    assert "--results records the repository's tier in full" in capsys.readouterr().err

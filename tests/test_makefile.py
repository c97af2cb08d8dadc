"""The Makefile is the learner's entry point: `make` alone lists the targets, and every `make X`
written in the README and the curriculum names a target that exists."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "curriculum").glob("*.md"))]
TARGET = re.compile(r"^([a-z]+):", re.MULTILINE)

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def makefile_targets():
    return set(TARGET.findall((ROOT / "Makefile").read_text()))


def test_make_alone_lists_the_targets():
    done = subprocess.run(
        ["make", "--no-print-directory"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    for target in ("setup", "test", "grade", "bench", "train", "data", "exercises", "notebooks"):
        assert re.search(rf"^\s+make {target}\s", done.stdout, re.MULTILINE), target


def test_every_make_command_in_the_docs_is_a_target():
    targets = makefile_targets()
    command = re.compile(r"(?:`|^\s*)make ([a-z]+)\b", re.MULTILINE)  # inline or in a block
    written = {(doc.name, target) for doc in DOCS for target in command.findall(doc.read_text())}
    assert written, "no make command found in the docs"
    unknown = sorted((name, target) for name, target in written if target not in targets)
    assert not unknown, f"make targets the Makefile lacks: {unknown}"

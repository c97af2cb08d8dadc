"""The Makefile is the learner's entry point: `make` alone lists the targets, and its rules (which
tier runs, what `make clean` removes) hold. Every `make X` the pages write is checked by
test_page_commands.py."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.page_commands import pages

ROOT = Path(__file__).resolve().parent.parent
DOCS = pages()

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def test_make_alone_lists_the_targets():
    done = subprocess.run(
        ["make", "--no-print-directory"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    for target in ("setup", "test", "grade", "bench", "train", "data", "exercises", "notebooks"):
        assert re.search(rf"^\s+make {target}\s", done.stdout, re.MULTILINE), target


def test_make_clean_removes_build_outputs_and_never_a_learners_work(tmp_path):
    """`make clean`, run for real on a copy of the Makefile in a fake tree, keeps workspace/ (and a
    workspace written elsewhere, `make exercises WORKSPACE=mine`), .venv and data, whole."""
    shutil.copy(ROOT / "Makefile", tmp_path)
    learner = ["workspace", "mine"]
    build_outputs = [
        "stage3_c/_build/tmp/matmul.o",
        "stage3_c/_s2c_native.cpython-311-x86_64-linux-gnu.so",
        "stage4_cuda/nvcc_impl/_build/libs2c_cuda.so",
        "grader/__pycache__/run.cpython-311.pyc",
        "tests/__pycache__/test_x.cpython-311.pyc",
        ".pytest_cache/README.md",
    ]
    kept = [
        "stage3_c/__init__.py",
        "stage3_c/csrc/matmul.c",
        "grader/__init__.py",
        ".venv/bin/python",
        ".data/mnist/train-images-idx3-ubyte.gz",
    ]
    for folder in learner:  # a learner's tiers, sources and build outputs alike
        kept += [
            f"{folder}/stage1_python/linalg.py",
            f"{folder}/stage1_python/__pycache__/linalg.cpython-311.pyc",
            f"{folder}/stage3_c/csrc/matmul.c",
            f"{folder}/stage3_c/_build/tmp/matmul.o",
            f"{folder}/stage3_c/_s2c_native.cpython-311-x86_64-linux-gnu.so",
            f"{folder}/stage4_cuda/nvcc_impl/_build/libs2c_cuda.so",
        ]
    for name in build_outputs + kept:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")

    done = subprocess.run(["make", "clean"], cwd=tmp_path, capture_output=True, text=True)

    assert done.returncode == 0, done.stderr
    assert [name for name in kept if not (tmp_path / name).exists()] == []
    assert [name for name in build_outputs if (tmp_path / name).exists()] == []


def test_make_clean_says_what_it_removes():
    """Its help names the build outputs and that workspace/ is kept."""
    done = subprocess.run(["make"], cwd=ROOT, capture_output=True, text=True)
    line = next(line for line in done.stdout.splitlines() if "make clean" in line)
    assert "never workspace/" in line and "extension" in line and "__pycache__" in line


def test_the_docs_give_the_stage_as_STAGE_never_inside_ARGS():
    """`make train|bench|grade` take the workspace's tier by STAGE (README, "Which code runs"): a
    `--stage` inside ARGS would train one stage with another stage's IMPL."""
    command = re.compile(r"make (?:train|bench|grade)\b[^`\n]*ARGS='[^']*--stage")
    found = [(doc.name, hit) for doc in DOCS for hit in command.findall(doc.read_text())]
    assert not found, found


@pytest.mark.parametrize("target", ["train", "bench", "grade"])
def test_make_refuses_a_stage_inside_ARGS(target):
    """Run for real (`-o setup`: without building first); it stops before any Python runs."""
    done = subprocess.run(
        ["make", "-o", "setup", target, "ARGS=--stage 1 --model xor"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0
    assert "give the stage as STAGE=N" in done.stdout, done.stdout


@pytest.mark.parametrize("stage", [3, 4])  # stage 4's bench also runs bench.ops_vs_pytorch
@pytest.mark.parametrize("target", ["grade", "train", "bench"])
def test_IMPL_reaches_every_command_of_grade_train_and_bench(target, stage):
    """IMPL=dir: every Python command of the target takes dir's tier; IMPL= none of them."""

    def commands(impl):
        done = subprocess.run(
            ["make", "-n", "-o", "setup", target, f"STAGE={stage}", f"IMPL={impl}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        recipe = re.sub(r"\\\n\s*", " ", done.stdout)  # continued lines joined
        return re.findall(r"-m (?:grader|nn|bench)\.?\w*[^;\n]*", recipe)

    chosen = commands("mine")
    assert chosen and all("--impl mine" in line for line in chosen), chosen
    if target == "bench":
        assert any("bench.ops_vs_pytorch" in line for line in chosen) == (stage == 4), chosen
    assert not any("--impl" in line for line in commands(""))


@pytest.mark.parametrize(
    ("workspace", "impl", "expected"),
    [
        (True, None, "S2C_IMPL=workspace "),
        (False, None, "S2C_IMPL= "),
        (True, "", "S2C_IMPL= "),
        (False, "mine", "S2C_IMPL=mine "),
    ],
)
def test_make_test_takes_the_tiers_by_the_rule_of_grade(tmp_path, workspace, impl, expected):
    """workspace/ when it holds a stage, IMPL=dir that folder, IMPL= the reference."""
    shutil.copy(ROOT / "Makefile", tmp_path)
    if workspace:
        (tmp_path / "workspace" / "stage1_python").mkdir(parents=True)
    command = ["make", "-n", "-o", "setup", "test"] + ([] if impl is None else [f"IMPL={impl}"])
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)
    assert expected in done.stdout, done.stdout

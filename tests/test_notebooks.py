"""The curriculum's notebooks: committed without outputs (every figure they show is computed when
they run, so a committed one could only be stale), each grading the learner's workspace, and
`make notebooks` writing its executed copies outside the repository's files.

The notebooks themselves run top to bottom in CI (`.ci/run`: pytest --nbmake curriculum/notebooks).
"""

import json
from pathlib import Path

import nbformat
import pytest

from tools import notebooks

NOTEBOOKS = sorted(notebooks.NOTEBOOKS.glob("*.ipynb"))


def test_the_notebooks_are_found():
    names = {path.stem for path in NOTEBOOKS}
    assert {"speedups", "gradient_checking", "im2col", "training", "matmul_ladders",
            "roofline"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_a_committed_notebook_holds_no_outputs(path):
    notebook = json.loads(path.read_text())
    with_outputs = [index for index, cell in enumerate(notebook["cells"])
                    if cell.get("outputs") or cell.get("execution_count") is not None]
    assert not with_outputs, (
        f"{path.name}: cells {with_outputs} hold outputs; commit notebooks without them "
        "(`make notebooks` writes the executed copies to runs/notebooks/)"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_a_notebook_teaches_and_grades_the_workspace(path):
    """Explanation a learner reads, and an inline check through the grader (`_course.check`,
    which grades workspace/ when it holds the stage and says when it falls back)."""
    cells = nbformat.read(path, as_version=4).cells
    prose = sum(len(cell.source) for cell in cells if cell.cell_type == "markdown")
    code = "\n".join(cell.source for cell in cells if cell.cell_type == "code")
    assert prose > 1000, f"{path.name}: {prose} characters of explanation"
    assert "_course.check(" in code, f"{path.name}: no inline check of the learner's workspace"


def test_make_notebooks_writes_executed_copies_and_leaves_the_source_alone(tmp_path, monkeypatch):
    source = tmp_path / "notebooks"
    source.mkdir()
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("from pathlib import Path\nprint(Path.cwd().name, 6 * 7)")
    ])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    nbformat.write(notebook, source / "tiny.ipynb")
    before = (source / "tiny.ipynb").read_bytes()
    monkeypatch.setattr(notebooks, "NOTEBOOKS", source)
    out = tmp_path / "out"

    assert notebooks.main(["--out", str(out)]) == 0

    assert (source / "tiny.ipynb").read_bytes() == before
    executed = nbformat.read(out / "tiny.ipynb", as_version=4)
    assert executed.cells[0].outputs[0]["text"] == "notebooks 42\n"  # ran from its own folder


def test_make_notebooks_names_an_unknown_notebook(capsys):
    with pytest.raises(SystemExit) as stopped:
        notebooks.main(["no_such_notebook", "--out", str(Path("unused"))])
    assert stopped.value.code == 2
    assert "no notebook named no_such_notebook" in capsys.readouterr().err


def test_a_failing_notebook_fails_the_command(tmp_path, monkeypatch, capsys):
    source = tmp_path / "notebooks"
    source.mkdir()
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 / 0")])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    nbformat.write(notebook, source / "broken.ipynb")
    monkeypatch.setattr(notebooks, "NOTEBOOKS", source)

    assert notebooks.main(["--out", str(tmp_path / "out")]) == 1

    captured = capsys.readouterr()
    assert "broken: FAILED" in captured.err and "ZeroDivisionError" in captured.err
    assert "0 notebooks ran, 1 failed" in captured.out

"""Execute the curriculum's notebooks and keep what they draw, outside the repository's files.

    python -m tools.notebooks [--out runs/notebooks] [NAME ...]      (`make notebooks`)

The notebooks in curriculum/notebooks/ are committed without outputs: every figure and count
they show is computed when they run (from code and the committed results), so a committed output
could only ever be a stale copy. This command runs each one top to bottom, from its own folder as
nbmake does, and writes the executed copy, outputs included, to OUT/NAME.ipynb (runs/ is ignored
by git), ready to open. The exit status is 1 when a notebook fails; its error names the cell.
"""

import argparse
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

NOTEBOOKS = Path(__file__).resolve().parent.parent / "curriculum" / "notebooks"
CELL_TIMEOUT = 600  # seconds a cell may run (the training notebook's longest is well under)


def execute(path, out_dir):
    """Run notebook `path` from its folder; write the executed copy into `out_dir`; returns the
    copy's path. Raises CellExecutionError (after writing the copy up to the failing cell)."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, timeout=CELL_TIMEOUT,
                            resources={"metadata": {"path": str(path.parent)}})
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / path.name
    try:
        client.execute()
    finally:
        nbformat.write(notebook, target)
    return target


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tools.notebooks", description=__doc__)
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help="notebooks to run, e.g. roofline (default: all)")
    parser.add_argument("--out", type=Path, default=Path("runs/notebooks"),
                        help="where the executed copies go (default: runs/notebooks)")
    args = parser.parse_args(argv)
    known = sorted(NOTEBOOKS.glob("*.ipynb"))
    if args.names:
        wanted = {name.removesuffix(".ipynb") for name in args.names}
        unknown = sorted(wanted - {path.stem for path in known})
        if unknown:
            choices = ", ".join(path.stem for path in known)
            parser.error(f"no notebook named {', '.join(unknown)} (the notebooks: {choices})")
        known = [path for path in known if path.stem in wanted]
    failed = []
    for path in known:
        started = time.perf_counter()
        try:
            target = execute(path, args.out)
            print(f"{path.stem}: ran in {time.perf_counter() - started:.0f} s -> {target}")
        except CellExecutionError as error:
            failed.append(path.stem)
            print(f"{path.stem}: FAILED\n{error}", file=sys.stderr)
    print(f"{len(known) - len(failed)} notebooks ran, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

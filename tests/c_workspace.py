"""A learner's C tier for tests: the exercise workspace's stage3_c with some exercises written.

`c_workspace(folder, solved={"matmul_naive"})` writes folder/stage3_c as `make exercises` does,
except that the solution regions of the tasks in `solved` keep the reference's code: a learner
partway through a week. It is not built; loading it (tiers/loading.py) builds it.
"""

import re
from pathlib import Path

from tools.exercises import plan_tier, stub_regions, write_given_packages, write_workspace

ROOT = Path(__file__).resolve().parent.parent
BEGIN = re.compile(r"BEGIN SOLUTION week \d+, task (\w+)")


def unmark(text, solved):
    """`text` without the markers of the regions of `solved`: stubbing then leaves them as is."""
    lines, keeping = [], False
    for line in text.splitlines(keepends=True):
        begin = BEGIN.search(line)
        if begin and begin[1] in solved:
            keeping = True
        elif keeping and "END SOLUTION" in line:
            keeping = False
        else:
            lines.append(line)
    return "".join(lines)


def c_workspace(folder, solved=()):
    """Write folder/stage3_c with the exercises of `solved` written, the others stubs."""
    write_workspace(folder, {"stage3_c": plan_tier(ROOT, "stage3_c")}, ROOT, force=True)
    write_given_packages(folder, ROOT, force=True)
    write_sources(folder, solved)
    return folder


def write_sources(folder, solved):
    """Rewrite the C sources of folder/stage3_c (only them, as a learner's editor does) with the
    exercises of `solved` written, the others stubs."""
    for source in sorted((ROOT / "stage3_c" / "csrc").glob("*.c")):
        path = f"stage3_c/csrc/{source.name}"
        text, _ = stub_regions(unmark(source.read_text(), set(solved)), "c", path)
        if (folder / path).read_text() != text:
            (folder / path).write_text(text)

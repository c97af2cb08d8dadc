"""A learner's tier for tests: a tier of the exercise workspace with some exercises written.

`c_workspace(folder, solved={"matmul_naive"})` writes folder/stage3_c as `make exercises` does,
except that the solution regions of the tasks in `solved` keep the reference's code: a learner
partway through a week. It is not built; loading it (tiers/loading.py) builds it.
`learner_tier(folder, "stage2_numpy", solved={"relu"})` does the same for any tier package.
"""

from pathlib import Path

from tools.exercises import (
    LANGUAGE_OF_SUFFIX,
    is_skipped,
    plan_tier,
    stub_regions,
    write_given_packages,
    write_workspace,
)

ROOT = Path(__file__).resolve().parent.parent


def c_workspace(folder, solved=()):
    """Write folder/stage3_c with the exercises of `solved` written, the others stubs."""
    return learner_tier(folder, "stage3_c", solved)


def learner_tier(folder, package, solved=()):
    """Write folder/`package` with the exercises of `solved` written, the others stubs."""
    write_workspace(folder, {package: plan_tier(ROOT, package)}, ROOT, force=True)
    write_given_packages(folder, ROOT, force=True)
    write_sources(folder, solved, package)
    return folder


def write_sources(folder, solved, package="stage3_c"):
    """Rewrite the sources of folder/`package` that change (only them, as a learner's editor
    does) with the exercises of `solved` written, the others stubs."""
    for source in sorted((ROOT / package).rglob("*")):
        language = LANGUAGE_OF_SUFFIX.get(source.suffix)
        if language is None or is_skipped(source.relative_to(ROOT)):  # build outputs
            continue
        path = source.relative_to(ROOT).as_posix()
        text, _ = stub_regions(source.read_text(), language, path, lambda _, task: task in solved)
        if (folder / path).read_text() != text:
            (folder / path).write_text(text)

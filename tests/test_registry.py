"""The registry of tiers (tiers/) is the one list of tiers, and the rules of ARCHITECTURE.md hold:
`nn` reaches tiers only through it, tiers import nothing of the project but the shared checks and
the contract, which import nothing of it, tools/ reads the contract from contract/, every tier has
the allocation hook and the grader's NaN poison reaches its outputs through it."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import grader
import tiers
from grader.poison import poisoned_allocations

REPO_ROOT = Path(__file__).resolve().parent.parent
PACKAGES = set(tiers.packages())
# Top-level packages of the project: a tier may import only its own, the shared checks and the
# contract, and these import nothing of the project.
PROJECT = {path.parent.name for path in REPO_ROOT.glob("*/__init__.py")}
SHARED_BY_TIERS = {"argcheck", "contract"}
# What tools/ may import of the grader: its interface for running a grading (grade, Options) and
# the statuses of its results; the contract's data comes from contract/, never from the grader.
GRADER_INTERFACE = {"grader", "grader.run", "grader.records"}


def python_files(folder):
    return sorted(path for path in folder.rglob("*.py") if "__pycache__" not in path.parts)


def imported_top_levels(path):
    """The top-level names of a file's absolute imports (relative ones stay in its package)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def packages_named(path):
    """The tier packages a Python file imports or names in a string (docstrings aside)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    texts = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and id(node) not in docstrings
    ]
    named = {package for package in PACKAGES for text in texts if package in text}
    return named | (imported_top_levels(path) & PACKAGES)


def test_the_registry_is_the_only_list_of_tiers():
    """Outside the registry and the tiers themselves, no code names two tier packages: one named
    in an example or a help text is fine, two or more are a second list to keep in step.
    The tests may name the tiers they test, but their fixture takes the list from the registry."""
    outside = [
        path
        for path in python_files(REPO_ROOT)
        if path.relative_to(REPO_ROOT).parts[0] not in PACKAGES | {"tiers", "tests", ".venv"}
        and "workspace" not in path.relative_to(REPO_ROOT).parts
    ]
    outside.append(REPO_ROOT / "tests" / "conftest.py")
    lists = {
        str(path.relative_to(REPO_ROOT)): sorted(named)
        for path in outside
        if len(named := packages_named(path)) > 1
    }
    assert not lists, f"tier packages listed outside tiers/: {lists}"
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert len({package for package in PACKAGES if package in makefile}) <= 1


def test_nn_reaches_tiers_only_through_the_registry():
    for path in python_files(REPO_ROOT / "nn"):
        imported = imported_top_levels(path)
        assert "grader" not in imported, f"{path.relative_to(REPO_ROOT)} imports the grader"
        assert not imported & PACKAGES, f"{path.relative_to(REPO_ROOT)} imports a tier directly"


def imported_modules(path):
    """The full names of a file's absolute imports, and of any module a string names that starts
    with a tier package (a module loaded by name, `importlib.import_module("stage4_cuda...")`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.update(re.findall(rf"\b(?:{'|'.join(PACKAGES)})(?:\.\w+)+", node.value))
    return names


def test_the_grader_reaches_tiers_only_through_their_interface():
    """The grader loads a tier through the registry and calls its interface: it imports no tier
    package, least of all a private module of one (`_library`, `_scratch`) or a function of its
    internals. Only bench/ may (ARCHITECTURE.md, dependency rules)."""
    for path in python_files(REPO_ROOT / "grader"):
        where = path.relative_to(REPO_ROOT)
        imported = imported_modules(path)
        private = sorted(name for name in imported if name.split(".")[0] in PACKAGES
                         and any(part.startswith("_") for part in name.split(".")))
        assert not private, f"{where} reaches a tier's private parts: {private}"
        tiers_imported = sorted(name for name in imported if name.split(".")[0] in PACKAGES)
        assert not tiers_imported, f"{where} imports a tier directly: {tiers_imported}"
        above = imported_top_levels(path) & {"nn", "bench"}
        assert not above, f"{where} imports {sorted(above)}, which sit above the grader"


def test_nothing_but_the_tests_imports_the_benchmarks():
    for package in sorted(PROJECT - {"bench"}):
        for path in python_files(REPO_ROOT / package):
            assert "bench" not in imported_top_levels(path), (
                f"{path.relative_to(REPO_ROOT)} imports bench/, which sits above everything")


def test_tiers_import_nothing_of_the_project_but_the_shared_checks_and_the_contract():
    for package in PACKAGES:
        for path in python_files(REPO_ROOT / package):
            foreign = imported_top_levels(path) & PROJECT - {package} - SHARED_BY_TIERS
            assert not foreign, f"{path.relative_to(REPO_ROOT)} imports {sorted(foreign)}"


@pytest.mark.parametrize("package", sorted(SHARED_BY_TIERS))
def test_what_the_tiers_share_imports_nothing_of_the_project(package):
    """argcheck/ and contract/ sit under every tier; the contract imports nothing but Python's
    standard library either, so that importing it costs nothing (no NumPy, no grader)."""
    for path in python_files(REPO_ROOT / package):
        imported = imported_top_levels(path)
        foreign = imported & PROJECT - {package}
        assert not foreign, f"{path.relative_to(REPO_ROOT)} imports {sorted(foreign)}"
        if package == "contract":
            libraries = imported - set(sys.stdlib_module_names)
            assert not libraries, f"{path.relative_to(REPO_ROOT)} imports {sorted(libraries)}"


def grader_modules_beyond_its_interface(path):
    """The grader's modules (or their names) a file imports beyond GRADER_INTERFACE: `grader`'s
    own exports and the names of grader.run and grader.records are its interface."""
    allowed = GRADER_INTERFACE | {f"grader.{name}" for name in grader.__all__}
    return sorted(name for name in imported_modules(path)
                  if name.split(".")[0] == "grader" and name not in allowed
                  and name.rpartition(".")[0] not in GRADER_INTERFACE - {"grader"})  # fmt: skip


def test_tools_read_the_contract_from_contract_not_from_the_grader(tmp_path):
    reaching = tmp_path / "reaching.py"
    reaching.write_text("from grader.ops import OPS\nfrom grader import weeks\n")
    assert grader_modules_beyond_its_interface(reaching) == ["grader.ops", "grader.ops.OPS",
                                                            "grader.weeks"]  # fmt: skip
    for path in python_files(REPO_ROOT / "tools"):
        inside = grader_modules_beyond_its_interface(path)
        assert not inside, (
            f"{path.relative_to(REPO_ROOT)} imports {inside}: the contract's data (ops, weeks) "
            "is contract/'s; of the grader, tools/ runs a grading (grader.run, grader.records)"
        )


def test_every_entry_is_consistent():
    for name, tier in tiers.TIERS.items():
        assert tier.name == name and tier.package in PROJECT | {"stage4_cuda"}
        assert tier.bits == (64 if tier.tier_class == "python" else 32)
        assert tier.references and all(
            reference in tiers.TIERS and reference != name for reference in tier.references
        )
        assert tiers.find(tier.stage, tier.variant) is tier
    assert tiers.find(4).name == "numba"  # a stage's first variant is its default
    with pytest.raises(ValueError, match="stage 2 has no variant 'numba'"):
        tiers.find(2, "numba")
    with pytest.raises(ValueError, match="unknown tier 'cuda'; the tiers: python, numpy, c"):
        tiers.get("cuda")


def test_the_tier_fixture_runs_on_every_registry_entry():
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         f"{__file__}::test_the_allocation_hook_is_poisoned"],
        cwd=REPO_ROOT, capture_output=True, text=True, check=True,
    ).stdout
    ids = [line.split("[")[1].rstrip("]") for line in collected.splitlines() if "[" in line]
    assert ids == list(tiers.TIERS)


def test_a_missing_tier_is_reported_not_raised(tmp_path):
    loaded = tiers.load(tiers.get("numpy"), impl=tmp_path)
    assert not loaded.ok and loaded.broken
    assert loaded.reason == f"no tier package at {tmp_path.resolve() / 'stage2_numpy'}"


def test_a_variant_not_written_yet_is_unavailable_in_a_workspace_too(tmp_path):
    """A workspace's stage4_cuda without nvcc_impl/ (one written before the variant existed): not
    written yet, never a broken import (`make grade STAGE=4` on such a workspace)."""
    (tmp_path / "stage4_cuda").mkdir()
    (tmp_path / "stage4_cuda" / "__init__.py").write_text("")
    loaded = tiers.load(tiers.get("nvcc"), impl=tmp_path)
    assert not loaded.ok and not loaded.broken
    assert loaded.reason == "stage4_cuda.nvcc_impl is not written yet"


def test_the_allocation_hook_is_poisoned(tier):
    """Under the grader's poison, the hook's outputs are NaN (integers: their most negative
    value) in the tier's own native kind, and the hook is restored afterwards."""
    hook = tier.empty
    home = sys.modules[hook.__module__]
    assert home.empty is hook, "the tier must export the hook its ops call"
    with poisoned_allocations(tier):
        floats = np.asarray(tier.to_numpy(tier.empty((2, 3), np.float32)))
        integers = np.asarray(tier.to_numpy(tier.empty((4,), np.int64)))
        assert home.empty is tier.empty is not hook
    assert floats.shape == (2, 3) and np.isnan(floats).all()
    assert integers.shape == (4,) and (integers == np.iinfo(np.int64).min).all()
    assert tier.empty is hook and home.empty is hook
    plain = np.asarray(tier.to_numpy(hook((2, 3), np.float32)))
    assert plain.shape == (2, 3)


def test_ops_that_fill_their_outputs_allocate_them_through_the_hook(tier, monkeypatch):
    """maxpool2d_forward writes its outputs window by window: its y and argmax come from the
    hook (NumPy computes them whole in stage 2, which needs no hook)."""
    if tier.NAME == "numpy":
        pytest.skip("stage 2 builds maxpool's outputs whole with NumPy reductions")
    home = sys.modules[tier.empty.__module__]
    real, shapes = home.empty, []

    def recording(shape, dtype=np.float32):
        shapes.append(tuple(shape))
        return real(shape, dtype)

    monkeypatch.setattr(home, "empty", recording)
    x = tier.from_numpy(np.random.default_rng(0).standard_normal((1, 2, 4, 4)).astype(np.float32))
    tier.maxpool2d_forward(x, 2, 2)
    assert shapes.count((1, 2, 2, 2)) == 2

"""Finding, importing and talking to tiers: the repository's, or a learner's from `--impl DIR`.

A tier is a module with the contract's ops plus NAME, from_numpy, to_numpy, synchronize and
available (CONTRACT.md). Values cross into a tier through `to_native` and come back through
`to_numpy_tree`, so the checks themselves only ever see NumPy arrays.
"""

import importlib
import importlib.util
import subprocess
import sys
import traceback
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPOSITORY = Path(__file__).resolve().parent.parent
PACKAGES = {1: "stage1_python", 2: "stage2_numpy", 3: "stage3_c", 4: "stage4_cuda"}
VARIANTS = ("numba", "nvcc")  # stage 4 has two, each a full tier


def module_name(stage, variant=None):
    """The importable name of a repository tier, e.g. 'stage4_cuda.numba_impl'."""
    if stage == 4:
        return f"{PACKAGES[4]}.{variant or VARIANTS[0]}_impl"
    return PACKAGES[stage]


def tier_label(stage, variant=None):
    """How reports name a tier: 'stage 2' or 'stage 4 (numba)'."""
    return f"stage {stage}" + (f" ({variant})" if stage == 4 else "")


@dataclass
class LoadedTier:
    """A tier module, or why there is none: `broken` when its code fails to import."""

    stage: int
    variant: str | None
    module: object = None
    origin: str = ""
    reason: str = ""
    broken: bool = False

    @property
    def ok(self):
        return self.module is not None

    @property
    def label(self):
        name = getattr(self.module, "NAME", None)
        return tier_label(self.stage, self.variant) + (f" [{name}]" if name else "")


def _package_dir(impl, stage):
    """The package folder of `stage` inside `impl` (a workspace root or the package itself)."""
    impl = Path(impl).resolve()
    package = PACKAGES[stage]
    if impl.name == package and (impl / "__init__.py").exists():
        return impl
    return impl / package


def _import_from(directory, alias):
    """Import the package in `directory` under the module name `alias` (its relative imports work).

    The repository's own package of the same name stays importable, so a learner's tier and the
    reference can be loaded side by side.
    """
    spec = importlib.util.spec_from_file_location(
        alias, directory / "__init__.py", submodule_search_locations=[str(directory)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[alias] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[alias]
        raise
    return module


_BUILT = set()  # package folders whose build step already ran in this process


def build_if_stale(directory):
    """Run a tier package's build step, `python -m PACKAGE.build --if-stale`, once per process:
    it compiles only when a source changed since the last build. It runs in the folder holding
    the package, so a workspace's copy builds its own sources. Returns the compiler's complaint
    when the build fails ("" otherwise): an old build is never used silently."""
    if directory in _BUILT or not (directory / "build.py").exists():
        return ""
    done = subprocess.run(
        [sys.executable, "-m", f"{directory.name}.build", "--if-stale"],
        cwd=directory.parent,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        output = (done.stdout + done.stderr).strip().splitlines()
        return "\n".join(output[-20:])
    if done.stdout:  # it rebuilt: say so, and why
        print(done.stdout.strip(), file=sys.stderr)
    _BUILT.add(directory)
    return ""


def load(stage, variant=None, impl=None):
    """Import a tier: the repository's, or the one under `impl` (see `_package_dir`), after
    rebuilding it if its sources changed (`build_if_stale`)."""
    tier = LoadedTier(stage, variant if stage == 4 else None)
    name = module_name(stage, variant)
    directory = _package_dir(impl or REPOSITORY, stage)
    complaint = (directory / "__init__.py").exists() and build_if_stale(directory)
    if complaint:
        tier.origin, tier.broken = str(directory), True
        tier.reason = f"its sources changed and rebuilding it failed:\n{complaint}"
        return tier
    try:
        if impl is None:
            tier.module = importlib.import_module(name)
            tier.origin = str(Path(tier.module.__file__).parent)
        else:
            tier.origin = str(directory)
            if not (directory / "__init__.py").exists():  # a wrong --impl path: a failure
                tier.reason, tier.broken = f"no tier package at {directory}", True
                return tier
            # One module name per folder: graded tiers from two folders never share a module.
            alias = f"graded_{PACKAGES[stage]}_{zlib.crc32(str(directory).encode()):08x}"
            package = sys.modules.get(alias) or _import_from(directory, alias)
            tier.module = (
                importlib.import_module(f"{alias}.{name.split('.')[1]}")
                if (stage == 4)
                else package
            )
    except ModuleNotFoundError as error:
        if error.name and name.startswith(error.name):
            tier.reason = f"{name} is not written yet"
            return tier
        return _broken(tier, error)
    except Exception as error:  # the tier's own code failed: report it, never crash the grader
        return _broken(tier, error)
    ok, reason = tier.module.available()
    if not ok:
        tier.module, tier.reason = None, reason
    return tier


def _broken(tier, error):
    tier.broken = True
    tier.reason = f"importing it failed: {describe_exception(error)}"
    return tier


def describe_exception(error):
    """'ValueError: message (at path/file.py:42 in fn)': where the innermost frame raised it."""
    frames = traceback.extract_tb(error.__traceback__)
    where = ""
    if frames:
        frame = frames[-1]
        path = Path(frame.filename)
        try:
            path = path.resolve().relative_to(REPOSITORY)
        except ValueError:
            pass
        where = f" (at {path}:{frame.lineno} in {frame.name})"
    return f"{type(error).__name__}: {error}{where}"


def to_native(tier, value):
    """A value for `tier`: arrays through from_numpy (always a fresh copy), tuples item by item."""
    if isinstance(value, np.ndarray):
        return tier.from_numpy(value.copy())
    if isinstance(value, tuple) and value and isinstance(value[0], np.ndarray):
        return tuple(to_native(tier, item) for item in value)
    return value


def to_numpy_tree(tier, value, structure):
    """A tier's result as {output name: NumPy array}, walking the op's output structure.

    `structure` is a tuple of names, or (name, (subnames...)) for a result that is a tuple itself
    (batchnorm's `saved`). Scalars (losses) become 0-d float64 arrays; they must be Python floats.
    """
    if not structure:  # an in-place op: its results are its updated arguments
        if value is not None:
            raise ContractError(f"returned {type(value).__name__}, expected None (works in place)")
        return {}
    if len(structure) == 1 and isinstance(structure[0], str):
        return {structure[0]: _leaf_to_numpy(tier, value, structure[0])}
    if not isinstance(value, tuple | list) or len(value) != len(structure):
        raise ContractError(
            f"returned {type(value).__name__}, expected a tuple of {len(structure)} "
            f"({', '.join(entry if isinstance(entry, str) else entry[0] for entry in structure)})"
        )
    result = {}
    for item, entry in zip(value, structure, strict=True):
        if isinstance(entry, str):
            result[entry] = _leaf_to_numpy(tier, item, entry)
        else:
            name, subnames = entry
            result[name] = tuple(to_numpy_tree(tier, item, subnames).values())
    return result


def _leaf_to_numpy(tier, value, name):
    if name == "loss":
        if not isinstance(value, float):
            raise ContractError(f"returned {type(value).__name__}, expected a Python float")
        return np.asarray(value, dtype=np.float64)
    return np.asarray(tier.to_numpy(value))


def flatten(outputs, structure):
    """{name: array or tuple of arrays} -> {'name' or 'name.sub': array}, for comparing."""
    flat = {}
    for entry in structure:
        if isinstance(entry, str):
            flat[entry] = outputs[entry]
        else:
            name, subnames = entry
            items = zip(subnames, outputs[name], strict=True)
            flat.update({f"{name}.{sub}": item for sub, item in items})
    return flat


class ContractError(Exception):
    """A tier returned something the contract does not allow (wrong type, count or dtype)."""

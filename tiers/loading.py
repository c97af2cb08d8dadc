"""Importing a tier: the repository's, or a learner's copy from a folder (`--impl DIR`).

A learner's copy is imported under an alias, so that it and the repository's package of the same
name can be loaded side by side (the grader compares them). Whatever goes wrong comes back as a
LoadedTier saying why, never as an exception: a tier not written yet, one whose `available()`
says no (a C tier not built, no GPU), and one whose own code fails to import (`broken`).
"""

import importlib
import importlib.util
import os
import subprocess
import sys
import sysconfig
import traceback
import zlib
from dataclasses import dataclass
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
# Where Python's standard library and installed packages live (the venv's, resolved)
LIBRARIES = tuple(
    {Path(sysconfig.get_path(name)).resolve() for name in ("stdlib", "platstdlib", "purelib")}
)


@dataclass
class LoadedTier:
    """A registry tier (tiers.Tier) and its module, or why there is none."""

    tier: object
    module: object = None
    origin: str = ""
    reason: str = ""
    broken: bool = False

    @property
    def ok(self):
        return self.module is not None

    @property
    def stage(self):
        return self.tier.stage

    @property
    def variant(self):
        return self.tier.variant

    @property
    def label(self):
        """'stage 2 [numpy]': the registry's label, then the NAME the module gives itself."""
        name = getattr(self.module, "NAME", None)
        return self.tier.label + (f" [{name}]" if name else "")


_BUILT = set()  # package folders whose build step already ran in this process


def build_environment(environment=os.environ):
    """`environment` for a build step run in another folder (a workspace, a scratch copy): the
    repository comes last on PYTHONPATH, so the tier's `import argcheck` finds the repository's
    copy where the folder holds none (a workspace written before it had one)."""
    path = os.pathsep.join(filter(None, (environment.get("PYTHONPATH"), str(REPOSITORY))))
    return {**environment, "PYTHONPATH": path}


def build_if_stale(tier, directory):
    """Run the tier's build step, `python -m BUILD --if-stale`, once per process and folder: it
    compiles only when a source changed since the last build. It runs in the folder holding the
    package, so a workspace's copy builds its own sources. Returns the compiler's complaint when
    the build fails ("" otherwise): an old build is never used silently."""
    if not tier.build or directory in _BUILT or not (directory / "__init__.py").exists():
        return ""
    if not (directory.parent / Path(*tier.build.split("."))).with_suffix(".py").exists():
        return ""  # a copy without the build step (a workspace written before it existed)
    done = subprocess.run(
        [sys.executable, "-m", tier.build, "--if-stale"],
        cwd=directory.parent,
        capture_output=True,
        text=True,
        env=build_environment(),
    )
    if done.returncode != 0:
        output = (done.stdout + done.stderr).strip().splitlines()
        return "\n".join(output[-20:])
    if done.stdout:  # it rebuilt: say so, and why
        print(done.stdout.strip(), file=sys.stderr)
    _BUILT.add(directory)
    return ""


def load(tier, impl=None):
    """Import `tier` (a tiers.Tier): the repository's, or the copy under `impl`, after
    rebuilding it if its sources changed (`build_if_stale`) and it can run here.

    `impl` is a workspace root holding the tier's package folder, or that folder itself.
    """
    loaded = LoadedTier(tier)
    directory = package_dir(impl or REPOSITORY, tier.package)
    # A tier that cannot run here (no GPU) is not built to be refused: available() says why.
    complaint = "" if tier.gpu_needed else build_if_stale(tier, directory)
    if complaint:
        loaded.origin, loaded.broken = str(directory), True
        loaded.reason = f"its sources changed and rebuilding it failed:\n{complaint}"
        return loaded
    wanted = tier.module  # the module's name as imported: a workspace's is an alias
    try:
        if impl is None:
            loaded.module = importlib.import_module(tier.module)
            loaded.origin = str(Path(loaded.module.__file__).parent)
        else:
            loaded.origin = str(directory)
            problem = missing_package(tier, impl)
            if problem:  # a wrong --impl path: a failure
                loaded.reason, loaded.broken = problem, True
                return loaded
            # One module name per folder: graded tiers from two folders never share a module.
            alias = f"graded_{tier.package}_{zlib.crc32(str(directory).encode()):08x}"
            package = sys.modules.get(alias) or _import_from(directory, alias)
            wanted = alias + tier.module[len(tier.package) :]  # + '.numba_impl' for a variant
            loaded.module = importlib.import_module(wanted) if wanted != alias else package
    except ModuleNotFoundError as error:
        if error.name and wanted.startswith(error.name):
            loaded.reason = f"{tier.module} is not written yet"
            return loaded
        return _broken(loaded, error)
    except Exception as error:  # the tier's own code failed: report it, never crash the caller
        return _broken(loaded, error)
    ok, reason = loaded.module.available()
    if not ok:
        loaded.module, loaded.reason = None, reason
    return loaded


def missing_package(tier, impl):
    """Why the folder `impl` holds no copy of `tier` to load ("" when it holds one): the folder
    does not exist, or it lacks the tier's package (a workspace of other stages)."""
    if not Path(impl).is_dir():
        return f"no folder {impl}"
    directory = package_dir(impl, tier.package)
    if not (directory / "__init__.py").exists():
        return f"no tier package at {directory}"
    return ""


def package_dir(impl, package):
    """The folder of `package` inside `impl` (a workspace root or the package folder itself)."""
    impl = Path(impl).resolve()
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


def _broken(loaded, error):
    loaded.broken = True
    loaded.reason = f"importing it failed: {describe_exception(error)}"
    return loaded


def describe_exception(error):
    """'ValueError: message (at path/file.py:42 in fn)': where it was raised, in the innermost
    frame of code outside Python's libraries (the learner's line, not the line of NumPy or of
    numba's CUDA simulator that found the fault: an index past a kernel's array is reported at the
    kernel's line); in the innermost frame when all are the libraries'."""
    frames = traceback.extract_tb(error.__traceback__)
    ours = [frame for frame in frames if not _in_libraries(frame.filename)]
    where = ""
    if frames:
        frame = (ours or frames)[-1]
        path = Path(frame.filename)
        try:
            path = path.resolve().relative_to(REPOSITORY)
        except ValueError:
            pass
        where = f" (at {path}:{frame.lineno} in {frame.name})"
    return f"{type(error).__name__}: {error}{where}"


def _in_libraries(filename):
    """Whether code of `filename` is Python's or an installed package's (or not a file at all,
    such as '<frozen importlib._bootstrap>')."""
    if filename.startswith("<"):
        return True
    path = Path(filename).resolve()
    return any(path.is_relative_to(folder) for folder in LIBRARIES)

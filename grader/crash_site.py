"""Where native code crashed: the C file, line and function, not the Python line that called it.

When the isolated worker dies by a signal in a tier that is built from C (its package has a
build.py), the crashing check is run once more on a copy of the tier built with AddressSanitizer
(`python -m PACKAGE.build --asan`, as `make asan` does): ASan's report names the C frame
("#0 0x... in s2c_relu .../csrc/activations.c:14"), which is mapped back to the graded sources.
An exception needs no re-run: `tiers.describe_exception` names the innermost line of the tier's
own code that raised it (for an index past an array on numba's CUDA simulator, the kernel's line
rather than the simulator's).
"""

import dataclasses
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import tiers
from tiers.loading import REPOSITORY, build_environment, package_dir

ASAN_FRAME = re.compile(r"#\d+ 0x[0-9a-f]+ in (\S+) (\S+\.(?:c|cu|h)):(\d+)")
BUILD_OUTPUTS = shutil.ignore_patterns("_build", "*.so", "__pycache__")
ASAN_BUILD_SECONDS = 300


def native_crash_site(setup, task, timeout):
    """' in C at path/file.c:LINE in function' for the check `task` that crashed, or ''."""
    package = tiers.find(setup.stage, setup.variant).package
    directory = package_dir(setup.impl or REPOSITORY, package)
    library = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True)
    if not (directory / "build.py").exists() or not os.path.isabs(library.stdout.strip()):
        return ""
    from .isolation import IsolatedRunner  # the runner that crashed is the one that calls this

    with tempfile.TemporaryDirectory(prefix="s2c-asan-") as scratch:
        copy = Path(scratch) / directory.name
        shutil.copytree(directory, copy, ignore=BUILD_OUTPUTS)
        built = subprocess.run(
            [sys.executable, "-m", f"{directory.name}.build", "--asan"],
            cwd=scratch,
            capture_output=True,
            timeout=ASAN_BUILD_SECONDS,
            env=build_environment(),
        )
        if built.returncode != 0:
            return ""
        environment = os.environ | {
            "LD_PRELOAD": library.stdout.strip(),
            "ASAN_OPTIONS": "detect_leaks=0",
        }
        asan_copy = dataclasses.replace(setup, impl=scratch)
        runner = IsolatedRunner(asan_copy, environment, measure=False)  # it crashes, not hangs
        try:
            runner.run(task, timeout)
            report = runner.errors_text()
        finally:
            runner.close()
    for function, path, line in ASAN_FRAME.findall(report):
        if path.startswith(str(copy)):
            original = directory / Path(path).relative_to(copy)
            shown = tiers_relative(original)
            return f"; in C at {shown}:{line} in {function} (re-run under AddressSanitizer)"
    return ""


def tiers_relative(path):
    """`path` relative to the repository when inside it, else as given."""
    try:
        return path.resolve().relative_to(REPOSITORY)
    except ValueError:
        return path

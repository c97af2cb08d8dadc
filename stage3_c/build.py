"""Build the C tier's extension module, stage3_c._s2c_native, with cffi (API mode, out of line).

    python -m stage3_c.build [--asan]      (`make build`; `make asan` adds --asan)
    python -m stage3_c.build --if-stale    (only when a source is newer than the extension)

Every csrc/*.c file is compiled into one extension placed beside this file, so a copy of the
package elsewhere (the exercise workspace's stage3_c) builds its own sources in its own folder.
The declarations cffi needs are read from csrc/s2c.h and csrc/matmul.h, the headers the C files
include, so there is one list of functions, not two.

Flags: -O3 -march=native (the extension is built on the machine that runs it, so gcc may use every
instruction that CPU has: AVX2 and FMA on the course machines) -ffp-contract=fast (multiply-adds
fuse into FMA) -fopenmp -std=c99. With --asan: AddressSanitizer at -O1, for `make asan`.
"""

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import cffi

PACKAGE_DIR = Path(__file__).resolve().parent
CSRC = PACKAGE_DIR / "csrc"
BUILD_DIR = PACKAGE_DIR / "_build"
MODULE = "_s2c_native"
HEADERS = ("matmul.h", "s2c.h")  # matmul.h first: s2c.h includes it

RELEASE_FLAGS = ["-O3", "-march=native", "-ffp-contract=fast", "-fopenmp", "-std=c99"]
ASAN_FLAGS = [
    "-O1",
    "-g",
    "-fsanitize=address",
    "-fno-omit-frame-pointer",
    "-fopenmp",
    "-std=c99",
]


def declarations():
    """The C declarations of the headers, as cffi's cdef wants them: no preprocessor lines."""
    lines = []
    for header in HEADERS:
        for line in (CSRC / header).read_text().splitlines():
            if not line.lstrip().startswith("#"):
                lines.append(line)
    return "\n".join(lines)


def sources():
    """Every C file of csrc/, sorted so that builds are reproducible."""
    found = sorted(CSRC.glob("*.c"))
    if not found:
        raise SystemExit(f"error: no C sources in {CSRC}")
    return [str(path) for path in found]


def stale_reason():
    """Why the extension must be rebuilt ("" when it is up to date): it is missing, or a source
    of csrc/ or this build script is newer than it. The grader and nn.train ask before loading
    the tier (grader/tiers.py), so a learner's edited C is never run from an old build."""
    built = sorted(PACKAGE_DIR.glob(f"{MODULE}.*.so"))
    if not built:
        return "the extension is not built"
    inputs = [CSRC, *CSRC.glob("*.[ch]"), Path(__file__)]  # CSRC: a file added or removed
    newer = [path.name for path in inputs if path.stat().st_mtime > built[0].stat().st_mtime]
    return f"changed since the last build: {', '.join(sorted(newer))}" if newer else ""


def build(asan=False, verbose=False):
    """Compile the extension and put it in the package folder; returns the path of the .so."""
    compile_flags = ASAN_FLAGS if asan else RELEASE_FLAGS
    link_flags = ["-fopenmp"] + (["-fsanitize=address"] if asan else [])
    ffi = cffi.FFI()
    ffi.cdef(declarations())
    ffi.set_source(
        f"stage3_c.{MODULE}",
        '#include "s2c.h"',
        sources=sources(),
        include_dirs=[str(CSRC)],
        extra_compile_args=compile_flags,
        extra_link_args=link_flags,
        libraries=["m"],
    )
    # A fresh build folder each time, of this build alone: distutils skips objects it believes up
    # to date (an ASan object must never end up in a release build, or the reverse), and two
    # builds of one tree at once must not delete each other's files.
    BUILD_DIR.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=BUILD_DIR) as scratch:
        built = Path(ffi.compile(tmpdir=scratch, verbose=verbose))
        target = PACKAGE_DIR / built.name
        staged = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        shutil.copy2(built, staged)
    os.replace(staged, target)  # atomic: a process importing now gets the old or the new file
    for stale in PACKAGE_DIR.glob(f"{MODULE}.*.so"):
        if stale != target:  # built for another Python version
            stale.unlink()
    return target


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m stage3_c.build", description=__doc__)
    parser.add_argument("--asan", action="store_true", help="build with AddressSanitizer")
    parser.add_argument("--verbose", action="store_true", help="show the compiler commands")
    parser.add_argument("--if-stale", action="store_true", help="build only when out of date")
    args = parser.parse_args(argv)
    reason = stale_reason()
    if args.if_stale and not reason:
        return 0
    try:
        target = build(asan=args.asan, verbose=args.verbose)
    except (cffi.VerificationError, OSError) as error:
        print(f"error: building the C tier failed: {error}", file=sys.stderr)
        return 1
    kind = "AddressSanitizer build" if args.asan else "release build"
    why = f"; {reason}" if args.if_stale else ""
    print(f"built {target.relative_to(PACKAGE_DIR.parent)} ({kind}{why})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Build the C tier's extension module, stage3_c._s2c_native, with cffi (API mode, out of line).

    python -m stage3_c.build [--asan] [--arch FLAGS]      (`make build`; `make asan` adds --asan)
    python -m stage3_c.build --if-stale    (only when a source is newer than the extension or
                                            S2C_ARCH_FLAGS names another target, and then as the
                                            extension in place was built, for that target)

Every csrc/*.c file is compiled into one extension placed beside this file, so a copy of the
package elsewhere (the exercise workspace's stage3_c) builds its own sources in its own folder.
The declarations cffi needs are read from csrc/s2c.h and csrc/matmul.h, the headers the C files
include, so there is one list of functions, not two.

Flags: -O3, the target flags, -ffp-contract=fast (multiply-adds fuse into FMA where the target has
it) -fopenmp -std=c99. The target flags are --arch, else the environment variable S2C_ARCH_FLAGS,
else -march=native: the extension is built on the machine that runs it, so gcc may use every
instruction that CPU has (AVX2 and FMA, AVX-512 where present). Other targets build the same code
for another CPU, e.g. "-march=x86-64-v2" (SSE4.2 only), "-march=x86-64-v3" (AVX2 and FMA) or
"-march=native -mno-fma"; `make portability` runs the tests on each. The extension reports its
flags: stage3_c.build_info(). With --asan: AddressSanitizer at -O1 (same target), for `make asan`.
"""

import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

import cffi

PACKAGE_DIR = Path(__file__).resolve().parent
CSRC = PACKAGE_DIR / "csrc"
BUILD_DIR = PACKAGE_DIR / "_build"
MODULE = "_s2c_native"
BUILD_RECORD = BUILD_DIR / "last-build.json"  # how the extension in place was built
HEADERS = ("matmul.h", "s2c.h")  # matmul.h first: s2c.h includes it

ARCH_VARIABLE = "S2C_ARCH_FLAGS"
DEFAULT_ARCH = "-march=native"
# a function declared to return a status that returns none hands its caller garbage, which may
# read as success: an error, not a warning
ERRORS = ["-Werror=return-type"]
ASAN_FLAGS = [
    *ERRORS,
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


def compile_flags(asan=False, arch=None):
    """The compiler flags of a release (or AddressSanitizer) build for target flags `arch` (a
    string; None: the S2C_ARCH_FLAGS environment variable, else -march=native). The ASan build
    keeps the target, so that it checks the SIMD micro-kernels that the release build runs."""
    if arch is None:
        arch = os.environ.get(ARCH_VARIABLE) or DEFAULT_ARCH
    if asan:
        return [*ASAN_FLAGS, *shlex.split(arch)]
    return [*ERRORS, "-O3", *shlex.split(arch), "-ffp-contract=fast", "-fopenmp", "-std=c99"]


def module_source(flags):
    """The extension's own C source: the API header, and s2c_build_flags() (declared in s2c.h)
    returning the flags it was compiled with, so that a test or a benchmark can print them."""
    text = json.dumps(" ".join(flags))  # a valid C string literal for ASCII flags
    return f'#include "s2c.h"\nconst char *s2c_build_flags(void) {{ return {text}; }}\n'


def stale_reason():
    """Why the extension must be rebuilt ("" when it is up to date): it is missing, a source of
    csrc/ or this build script is newer than it, or S2C_ARCH_FLAGS asks for another target than
    it was built for. The grader and nn.train ask before loading the tier (tiers/loading.py), so
    a learner's edited C is never run from an old build."""
    built = sorted(PACKAGE_DIR.glob(f"{MODULE}.*.so"))
    if not built:
        return "the extension is not built"
    inputs = [CSRC, *CSRC.glob("*.[ch]"), Path(__file__)]  # CSRC: a file added or removed
    newer = [path.name for path in inputs if path.stat().st_mtime > built[0].stat().st_mtime]
    if newer:
        return f"changed since the last build: {', '.join(sorted(newer))}"
    wanted, (_asan, arch) = os.environ.get(ARCH_VARIABLE), last_build()
    if wanted and arch is not None and shlex.split(wanted) != shlex.split(arch):
        return f"{ARCH_VARIABLE}={wanted!r}, built for {arch!r}"
    return ""


def last_build():
    """(asan, arch) of the build in place, as `build` recorded them; the defaults when none is."""
    try:
        recorded = json.loads(BUILD_RECORD.read_text())
        return bool(recorded["asan"]), str(recorded["arch"])
    except (OSError, ValueError, KeyError, TypeError):
        return False, None


def build(asan=False, verbose=False, arch=None):
    """Compile the extension (target flags `arch`: see compile_flags) and put it in the package
    folder; returns the path of the .so."""
    arch = os.environ.get(ARCH_VARIABLE) or DEFAULT_ARCH if arch is None else arch
    flags = compile_flags(asan, arch)
    link_flags = ["-fopenmp"] + (["-fsanitize=address"] if asan else [])
    ffi = cffi.FFI()
    ffi.cdef(declarations())
    ffi.set_source(
        f"stage3_c.{MODULE}",
        module_source(flags),
        sources=sources(),
        include_dirs=[str(CSRC)],
        extra_compile_args=flags,
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
    BUILD_RECORD.write_text(json.dumps({"asan": asan, "arch": arch}))
    for stale in PACKAGE_DIR.glob(f"{MODULE}.*.so"):
        if stale != target:  # built for another Python version
            stale.unlink()
    return target


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m stage3_c.build", description=__doc__)
    parser.add_argument("--asan", action="store_true", help="build with AddressSanitizer")
    parser.add_argument(
        "--arch",
        help=f"target flags of the release build (default: ${ARCH_VARIABLE}, else {DEFAULT_ARCH})",
    )
    parser.add_argument("--verbose", action="store_true", help="show the compiler commands")
    parser.add_argument("--if-stale", action="store_true", help="build only when out of date")
    args = parser.parse_args(argv)
    reason = stale_reason()
    if args.if_stale and not reason:
        return 0
    if args.if_stale:  # rebuild as it was built (an ASan build stays one), for a new target
        asan, arch = last_build()
        args.asan, args.arch = asan, os.environ.get(ARCH_VARIABLE) or arch
        print(f"building the C tier: {reason} ...", flush=True)
    try:
        target = build(asan=args.asan, verbose=args.verbose, arch=args.arch)
    except (cffi.VerificationError, OSError) as error:
        print(f"error: building the C tier failed: {error}", file=sys.stderr)
        return 1
    flags = " ".join(compile_flags(args.asan, args.arch))
    kind = "AddressSanitizer build" if args.asan else "release build"
    print(f"built {target.relative_to(PACKAGE_DIR.parent)} ({kind}: {flags})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

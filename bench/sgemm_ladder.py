"""Build and run the SGEMM ladder's benchmark (stage4_cuda/csrc/sgemm/bench.cu), and turn its JSON
into the table of stage4_cuda/csrc/sgemm/README.md.

    python3 bench/sgemm_ladder.py [--rung N] [--sizes 1024,4096] [--out DIR]
        builds bench.cu with every rung (nvcc, -lcublas), runs it on the GPU: each rung is checked
        against cuBLAS and timed; writes DIR/sgemm-bench.json and DIR/sgemm-bench.md (the table)
    python3 bench/sgemm_ladder.py --table RESULTS.json [--write]
        prints the table of a JSON written before; --write puts it into the README

Runs with the standard library alone (`python3 FILE` works on a GPU machine without the project's
environment; `python -m bench.sgemm_ladder` too). nvcc is found on the PATH or under
/usr/local/cuda; cuBLAS's header and library in that toolkit, in CUBLAS_ROOT, or in a Python
package (nvidia-cublas, which PyTorch installs). The exit status is 1 when a rung fails its check.
"""

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SGEMM_DIR = REPO_ROOT / "stage4_cuda" / "csrc" / "sgemm"
README = SGEMM_DIR / "README.md"
RESULTS = Path("curriculum/results/sgemm-cuda-h100.json")  # relative to the repository root
TABLE_COMMAND = f"python3 bench/sgemm_ladder.py --table {RESULTS} --write"
TABLE_BEGIN = f"<!-- BEGIN TABLE: {TABLE_COMMAND} -->"
TABLE_END = "<!-- END TABLE -->"
NOT_MEASURED = (
    f"Not measured yet: no `{RESULTS}`. On a GPU machine, `python3 bench/sgemm_ladder.py "
    f"--out DIR` writes DIR/sgemm-bench.json; committed as `{RESULTS}`, `{TABLE_COMMAND}` "
    "puts its table here."
)
# The ladder's targets for the best rung, as shares of cuBLAS: {n = k = m: share}.
TARGETS = {4096: 0.90, 1024: 0.75}
NVCC_FLAGS = ["-O3", "-std=c++17", "-lineinfo"]


def rung_sources():
    """The ladder's rung files, 01_naive.cu ... 08_cp_async.cu, in order."""
    return sorted(SGEMM_DIR.glob("[0-9][0-9]_*.cu"))


def find_nvcc():
    """The nvcc to use, or None."""
    found = shutil.which("nvcc")
    if found:
        return found
    default = Path("/usr/local/cuda/bin/nvcc")
    return str(default) if default.is_file() else None


def find_cublas(nvcc):
    """(include folder, library file) of cuBLAS, or None: CUBLAS_ROOT, nvcc's toolkit, then the
    nvidia-cublas Python package of any site-packages folder in sight."""
    roots = []
    if os.environ.get("CUBLAS_ROOT"):
        roots.append(Path(os.environ["CUBLAS_ROOT"]))
    if nvcc:
        toolkit = Path(nvcc).resolve().parent.parent
        roots += [toolkit, *toolkit.glob("targets/*")]
    site_folders = {sysconfig.get_paths()["purelib"], *sys.path}
    site_folders.update(glob.glob("/opt/*/.venv/lib/python3*/site-packages"))
    for folder in sorted(site_folders):
        roots += [Path(p) for p in glob.glob(os.path.join(folder, "nvidia", "*"))]
    for root in roots:
        header = root / "include" / "cublas_v2.h"
        libraries = sorted(glob.glob(str(root / "lib*" / "libcublas.so*")))
        if header.is_file() and libraries:
            return header.parent, Path(min(libraries, key=len))  # the shortest: libcublas.so
    return None


def link_flags(library):
    """nvcc flags that link `library` (a libcublas.so file, perhaps only a versioned one) and find
    it at run time."""
    return [f"-L{library.parent}", f"-l:{library.name}", "-Xlinker", f"-rpath={library.parent}"]


def arch_flags(archs):
    """nvcc flags for `archs` such as ["sm_80", "sm_90"] or ["native"]: machine code for each."""
    if archs == ["native"]:
        return ["-arch=native"]
    return [f"-gencode=arch=compute_{a[3:]},code={a}" for a in archs]


def build_bench(output, archs, nvcc=None, cublas=None):
    """Compile bench.cu, every rung and ../errors.cu into the program `output`; returns the nvcc
    command. Raises SystemExit with nvcc's messages when the build fails."""
    nvcc = nvcc or find_nvcc()
    if nvcc is None:
        raise SystemExit("error: nvcc not found (on the PATH or in /usr/local/cuda/bin)")
    cublas = cublas or find_cublas(nvcc)
    if cublas is None:
        raise SystemExit(
            "error: cuBLAS not found (cublas_v2.h and libcublas.so): set CUBLAS_ROOT to the "
            "folder holding include/ and lib/"
        )
    include, library = cublas
    sources = [SGEMM_DIR / "bench.cu", *rung_sources(), SGEMM_DIR.parent / "errors.cu"]
    command = [nvcc, *NVCC_FLAGS, *arch_flags(archs), f"-I{include}", "-o", str(output)]
    command += [str(source) for source in sources] + link_flags(library)
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"error: nvcc failed:\n{' '.join(command)}\n{done.stdout}{done.stderr}")
    return command


# --- the table ------------------------------------------------------------------------------------


def size_name(size):
    n, k, m = size["n"], size["k"], size["m"]
    return f"{n}^3" if n == k == m else f"{n} x {k} x {m}"


def best_rung(size):
    """The fastest rung that passed its check at `size`, or None."""
    passed = [rung for rung in size["rungs"] if rung.get("status") == "ok"]
    return max(passed, key=lambda rung: rung["gflops"], default=None)


def target_lines(results):
    """One line per target of the ladder (TARGETS) that these results can judge."""
    lines = []
    for size in results["sizes"]:
        target = TARGETS.get(size["n"]) if size["n"] == size["k"] == size["m"] else None
        best = best_rung(size)
        if target is None or best is None:
            continue
        verdict = "met" if best["share_of_cublas"] >= target else "not met"
        lines.append(
            f"- {size_name(size)}: best rung {best['rung']} ({best['name']}) at "
            f"{best['share_of_cublas']:.1%} of cuBLAS; target {target:.0%}: **{verdict}**."
        )
    return lines


def render_table(results):
    """The markdown of the README's results section, from bench.cu's JSON."""
    parts = [
        f"Measured {results['date']} on {results['device']} (compute capability "
        f"{results['compute_capability']}, {results['multiprocessors']} multiprocessors), CUDA "
        f"runtime {results['cuda_runtime']}, cuBLAS {results['cublas']} with "
        f"{results['cublas_math']}. Timing: {results['timing']}. Check: {results['check']}.",
    ]
    targets = target_lines(results)
    if targets:
        parts += ["", "Targets (the best rung as a share of cuBLAS):", "", *targets]
    for size in results["sizes"]:
        cublas = size["cublas"]
        bound = size["error_bound"]
        parts += [
            "",
            f"{size_name(size)} ({size['gflop']:.1f} GFLOP; error bound {bound:.2g}):",
            "",
            "| rung | GFLOP/s | of cuBLAS | ms | check (max error / bound) | registers "
            "| spilled bytes | tiles |",
            "| --- | ---: | ---: | ---: | --- | ---: | ---: | --- |",
        ]
        for rung in size["rungs"]:
            name = f"{rung['rung']} {rung['name']}"
            if "ms" not in rung:
                parts.append(f"| {name} | - | - | - | {rung['status']} | - | - | - |")
                continue
            ratio = rung["max_error_ratio"]
            error = "NaN or unwritten" if ratio is None else f"{ratio / bound:.2g}"
            check = ("ok" if rung["status"] == "ok" else "**wrong**") + f" ({error})"
            parts.append(
                f"| {name} | {rung['gflops']:.0f} | {rung['share_of_cublas']:.1%} | "
                f"{rung['ms']:.4g} | {check} | {rung['registers']} | {rung['spill_bytes']} | "
                f"{rung['config'] or '-'} |"
            )
        parts.append(
            f"| cuBLAS | {cublas['gflops']:.0f} | 100% | {cublas['ms']:.4g} | "
            "reference | - | - | - |"
        )
    return "\n".join(parts)


def readme_section(results_path=REPO_ROOT / RESULTS):
    """What the README's results section should hold: the table of `results_path`; for the
    committed results (RESULTS), the not-measured note while that file does not exist."""
    if not results_path.is_file() and results_path.resolve() == (REPO_ROOT / RESULTS).resolve():
        return NOT_MEASURED
    if not results_path.is_file():
        raise SystemExit(f"error: {results_path} does not exist")
    return render_table(json.loads(results_path.read_text()))


def write_into_readme(text):
    document = README.read_text()
    if TABLE_BEGIN not in document:
        raise SystemExit(f"error: {README} has no line {TABLE_BEGIN!r} to write after")
    begin = document.index(TABLE_BEGIN) + len(TABLE_BEGIN)
    end = document.index(TABLE_END, begin)
    README.write_text(document[:begin] + "\n" + text + "\n" + document[end:])


def readme_table():
    """The text now between the README's table markers."""
    document = README.read_text()
    begin = document.index(TABLE_BEGIN) + len(TABLE_BEGIN)
    return document[begin : document.index(TABLE_END, begin)].strip("\n")


# --- the command line -----------------------------------------------------------------------------


def run_bench(args):
    """Build, run, and write DIR/sgemm-bench.json and .md; returns the program's exit status."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / "sgemm-bench.json"
    with tempfile.TemporaryDirectory() as folder:
        program = Path(folder) / "sgemm_ladder"
        print("building:", " ".join(build_bench(program, args.arch)), flush=True)
        command = [str(program), "--sizes", args.sizes, "--repeats", str(args.repeats)]
        command += ["--json", str(json_path)] + (["--rung", str(args.rung)] if args.rung else [])
        status = subprocess.run(command).returncode
    if not json_path.is_file():
        raise SystemExit(f"error: the benchmark wrote no {json_path} (exit {status})")
    table = render_table(json.loads(json_path.read_text()))
    (out / "sgemm-bench.md").write_text(table + "\n")
    print("\n" + table)
    if args.write:
        write_into_readme(table)
        print(f"\nwritten into {README}")
    return status


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python3 bench/sgemm_ladder.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--rung", type=int, choices=range(1, 9), help="one rung only")
    parser.add_argument("--sizes", default="1024,4096", help="S (n = k = m) or NxKxM, commas")
    parser.add_argument("--repeats", type=int, default=5, help="timed batches (median)")
    parser.add_argument("--out", default=".", help="folder for sgemm-bench.json and .md")
    parser.add_argument(
        "--arch",
        default="native",
        type=lambda text: text.split(","),
        help="GPU architectures, e.g. sm_80,sm_90 (default: the GPU of this machine)",
    )
    parser.add_argument("--table", type=Path, help="print the table of this JSON; build nothing")
    parser.add_argument("--write", action="store_true", help=f"write the table into {README}")
    args = parser.parse_args(argv)
    if args.table:
        text = readme_section(args.table)
        print(text)
        if args.write:
            write_into_readme(text)
        return 0
    return run_bench(args)


if __name__ == "__main__":
    sys.exit(main())

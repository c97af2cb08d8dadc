"""Time the matmul ladder of csrc/matmul.c against NumPy's BLAS, and write MATMUL.md's table.

    python -m stage3_c.bench_matmul            print the tables (about two minutes on 2 cores)
    python -m stage3_c.bench_matmul --write    also put them into stage3_c/MATMUL.md
    options: --size 1024 --naive-size 512 --large-size 2048 (0: none) --threads 1,2
             --repeats 5 --rounds 3

Each figure is the best, over --rounds rounds, of the median of --repeats timed calls that follow
one warm-up call; the rounds visit every kernel in turn. Other programs sharing the cores can only
slow a call down, so the best median is the closest to what the machine itself can do; the load
average printed with the tables says how busy it was. Every result is checked against NumPy's.

The peak is measured, not looked up: a small probe runs 12 independent chains of 8-float fused
multiply-adds (enough to keep both FMA units of a core busy despite their 4-cycle latency), so its
GFLOP/s is 2 units x 8 floats x 2 flops x the clock the core actually runs at.
"""

import argparse
import importlib.util
import os
import platform
import re
import statistics
import tempfile
import time
from datetime import date
from functools import partial
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

import stage3_c
from stage3_c import build

MARKDOWN = Path(__file__).resolve().parent / "MATMUL.md"
TABLE_BEGIN = "<!-- BEGIN TABLES: python -m stage3_c.bench_matmul --write -->"
TABLE_END = "<!-- END TABLES -->"
SINGLE_THREADED = ("naive", "loop_order")  # the kernels without OpenMP
FLOPS_PER_CYCLE = 2 * 8 * 2  # FMA units x floats per AVX register x flops per FMA

PROBE_SOURCE = """
typedef float v8 __attribute__((vector_size(32)));
float fma_chains(long iterations)
{
    /* different starting values, or the compiler would compute one chain and copy it */
    v8 x0 = {0}, x1 = {1}, x2 = {2}, x3 = {3}, x4 = {4}, x5 = {5};
    v8 x6 = {6}, x7 = {7}, x8 = {8}, x9 = {9}, x10 = {10}, x11 = {11};
    const v8 m = {0.999f, 0.999f, 0.999f, 0.999f, 0.999f, 0.999f, 0.999f, 0.999f};
    const v8 a = {1e-3f, 1e-3f, 1e-3f, 1e-3f, 1e-3f, 1e-3f, 1e-3f, 1e-3f};
    for (long i = 0; i < iterations; i++) {
        x0 = x0 * m + a; x1 = x1 * m + a; x2 = x2 * m + a; x3 = x3 * m + a;
        x4 = x4 * m + a; x5 = x5 * m + a; x6 = x6 * m + a; x7 = x7 * m + a;
        x8 = x8 * m + a; x9 = x9 * m + a; x10 = x10 * m + a; x11 = x11 * m + a;
    }
    v8 sum = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7 + x8 + x9 + x10 + x11;
    return sum[0];
}
"""
PROBE_FLOPS_PER_ITERATION = 12 * 8 * 2


def measured_peak_gflops(rounds):
    """One core's FMA throughput in GFLOP/s (best of 3 * `rounds` runs), or None where the AVX2 +
    FMA probe cannot be built or run (another CPU, no compiler)."""
    if not stage3_c._native.lib.s2c_simd_supported():
        return None
    import cffi

    ffi = cffi.FFI()
    ffi.cdef("float fma_chains(long iterations);")
    flags = ["-O2", "-mavx2", "-mfma", "-ffp-contract=fast"]
    ffi.set_source("_fma_probe", PROBE_SOURCE, extra_compile_args=flags)
    with tempfile.TemporaryDirectory() as folder:
        try:
            spec = importlib.util.spec_from_file_location("_fma_probe", ffi.compile(tmpdir=folder))
            probe = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(probe)
        except (cffi.VerificationError, OSError, ImportError):
            return None
        iterations = 20_000_000
        seconds = min(
            time_once(lambda: probe.lib.fma_chains(iterations)) for _ in range(3 * rounds)
        )
    return iterations * PROBE_FLOPS_PER_ITERATION / seconds / 1e9


def time_once(call):
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def best_median_seconds(call, repeats):
    """The median time of `repeats` calls after a warm-up call."""
    call()
    return statistics.median(time_once(call) for _ in range(repeats))


def check_result(kernel, received, expected):
    error = float(np.max(np.abs(received - expected)))
    if not error <= 1e-3 * float(np.max(np.abs(expected))):
        raise SystemExit(f"error: kernel {kernel} is wrong: max error {error:.3g} against NumPy")


def implemented(kernel):
    """False for a kernel that is still an exercise stub (in a learner's workspace)."""
    one = np.ones((1, 1), np.float32)
    try:
        stage3_c.matmul(one, one, kernel)
    except NotImplementedError:
        return False
    return True


def measure(size, kernels, thread_counts, repeats, rounds, rng):
    """{(kernel, threads): GFLOP/s, or None when not implemented} for square products of `size`;
    kernel "numpy" is NumPy's."""
    a = rng.standard_normal((size, size)).astype(np.float32)
    b = rng.standard_normal((size, size)).astype(np.float32)
    expected = a @ b
    flops = 2.0 * size**3
    runs = [(kernel, threads) for threads in thread_counts for kernel in kernels]
    runs = [(k, t) for k, t in runs if t == 1 or k not in SINGLE_THREADED]
    missing = {(k, t): None for k, t in runs if k != "numpy" and not implemented(k)}
    runs = [run for run in runs if run not in missing]
    best = dict(missing)
    for _ in range(rounds):
        for kernel, threads in runs:
            with threadpool_limits(limits=threads, user_api="blas"):
                stage3_c.set_num_threads(threads)
                if kernel == "numpy":
                    seconds = best_median_seconds(partial(np.matmul, a, b), repeats)
                else:
                    seconds = best_median_seconds(partial(stage3_c.matmul, a, b, kernel), repeats)
                    check_result(kernel, stage3_c.matmul(a, b, kernel), expected)
            best[kernel, threads] = max(best.get((kernel, threads), 0.0), flops / seconds / 1e9)
    stage3_c.set_num_threads(0)
    return best


def table(size, results, thread_counts, peak, naive_size=None):
    """A markdown table: one row per kernel, its GFLOP/s on each thread count and its ratios."""
    one, many = thread_counts[0], thread_counts[-1]
    header = f"| kernel | n | GFLOP/s, {one} thread | of NumPy, {one} thread | of peak |"
    rule = "| --- | ---: | ---: | ---: | ---: |"
    if many != one:
        header += f" GFLOP/s, {many} threads | {many} threads / {one} |"
        rule += " ---: | ---: |"
    lines = [header, rule]
    numpy_single = results[size]["numpy", one]
    for kernel in [*stage3_c.MATMUL_KERNELS, "numpy"]:
        n = naive_size if kernel == "naive" and naive_size else size
        if (kernel, one) not in results.get(n, {}):
            continue
        single = results[n][kernel, one]
        name = (
            "NumPy (OpenBLAS)"
            if kernel == "numpy"
            else f"{stage3_c.MATMUL_KERNELS.index(kernel) + 1} {kernel}"
        )
        if single is None:
            dashes = " - |" * (rule.count("---") - 3)
            lines.append(f"| {name} | {n} | not implemented yet |{dashes}")
            continue
        cells = [name, str(n), f"{single:.1f}", f"{single / numpy_single:.0%}"]
        cells.append(f"{single / peak:.0%}" if peak else "?")
        if many != one:
            parallel = results[n].get((kernel, many))
            cells += [f"{parallel:.1f}", f"{parallel / single:.2f}x"] if parallel else ["-", "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def machine_description():
    model = platform.processor() or platform.machine()
    try:
        text = Path("/proc/cpuinfo").read_text()
        model = re.search(r"^model name\s*:\s*(.+)$", text, re.M).group(1)
    except (OSError, AttributeError):
        pass
    blas = next(
        (
            f"{i['internal_api']} {i['version']}"
            for i in threadpool_info()
            if i["user_api"] == "blas"
        ),
        "?",
    )
    return f"{model}, {os.cpu_count()} cores; NumPy {np.__version__} with {blas}"


def report(args):
    """Measure everything and return the text of the tables (markdown)."""
    rng = np.random.default_rng(0)
    load_before = os.getloadavg()[0]
    peaks = [measured_peak_gflops(args.rounds)]
    fast_enough = [k for k in stage3_c.MATMUL_KERNELS if k != "naive"] + ["numpy"]
    plan = [(args.size, fast_enough), (args.naive_size, ["naive"])]
    if args.large_size:
        plan.append((args.large_size, fast_enough))
    results = {}
    for size, kernels in plan:
        measured = measure(size, kernels, args.threads, args.repeats, args.rounds, rng)
        results.setdefault(size, {}).update(measured)
    load_after = os.getloadavg()[0]
    peaks.append(measured_peak_gflops(args.rounds))  # again: a busy moment only lowers it
    peak = max((gflops for gflops in peaks if gflops), default=None)
    clock = f"{peak / FLOPS_PER_CYCLE:.2f} GHz" if peak else "unknown"
    parts = [
        f"Measured {date.today().isoformat()} on {machine_description()}; C built with "
        f"`{' '.join(build.RELEASE_FLAGS)}`; load average {load_before:.1f} before, "
        f"{load_after:.1f} after. Best of {args.rounds} rounds of the median of "
        f"{args.repeats} calls.",
        "",
        f"Peak of one core: 2 FMA units x 8 floats x 2 flops x {clock} = "
        + (f"{peak:.1f} GFLOP/s (measured: 12 independent FMA chains)." if peak else "unknown."),
        "",
        f"c[n, n] = a[n, n] @ b[n, n] in float32, n = {args.size}; naive at n = "
        f"{args.naive_size}, as it is too slow at the full size:",
        "",
        table(args.size, results, args.threads, peak, naive_size=args.naive_size),
    ]
    if args.large_size:
        megabytes = args.large_size**2 * 4 // 2**20
        parts += [
            "",
            f"n = {args.large_size} ({megabytes} MiB per matrix):",
            "",
            table(args.large_size, results, args.threads, peak),
        ]
    return "\n".join(parts)


def write_into_markdown(text):
    document = MARKDOWN.read_text()
    begin, end = document.index(TABLE_BEGIN) + len(TABLE_BEGIN), document.index(TABLE_END)
    MARKDOWN.write_text(document[:begin] + "\n" + text + "\n" + document[end:])


def thread_list(text):
    counts = [int(part) for part in text.split(",")]
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"thread counts must be >= 1, got {text!r}")
    return counts


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m stage3_c.bench_matmul",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--naive-size", type=int, default=512)
    parser.add_argument("--large-size", type=int, default=2048)
    parser.add_argument("--threads", type=thread_list, default=[1, os.cpu_count() or 1])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--write", action="store_true", help=f"write the tables into {MARKDOWN.name}"
    )
    args = parser.parse_args(argv)
    ok, reason = stage3_c.available()
    if not ok:
        raise SystemExit(f"error: {reason}")
    text = report(args)
    print(text)
    if args.write:
        write_into_markdown(text)
        print(f"\nwritten into {MARKDOWN}")


if __name__ == "__main__":
    main()

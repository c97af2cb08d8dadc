"""Time the matmul ladder of csrc/matmul.c against NumPy's BLAS, and write MATMUL.md's table.

    python -m stage3_c.bench_matmul            print the tables (about two minutes on 2 cores)
    python -m stage3_c.bench_matmul --write    also put them into stage3_c/MATMUL.md, in the
                                               section of this build's micro-kernel (AVX-512,
                                               AVX2 or plain C: see stage3_c.build_info())
    options: --size 1024 --naive-size 512 --large-size 2048 (0: none) --threads 1,2
             --repeats 5 --rounds 3

Each figure is the best, over --rounds rounds, of the median of --repeats timed calls that follow
one warm-up call; the rounds visit every kernel in turn. Other programs sharing the cores can only
slow a call down, so the best median is the closest to what the machine itself can do; the load
average printed with the tables says how busy it was. Every result is checked against NumPy's.

The peak is measured, not looked up: a small probe runs 12 independent chains of fused
multiply-adds of the widest vectors the CPU has (16 floats with AVX-512, else 8 with AVX2 + FMA):
enough to keep both FMA units of a core busy despite their 4-cycle latency, at the clock the core
actually runs at. A kernel measured above that peak means the peak was measured wrong (the core ran
slower during the probe, or the probe missed a faster unit): the table says so instead of printing
a share over 100%.
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

MARKDOWN = Path(__file__).resolve().parent / "MATMUL.md"
TABLE_BEGIN = "<!-- BEGIN TABLES {key}: python -m stage3_c.bench_matmul --write -->"
TABLE_END = "<!-- END TABLES -->"
SINGLE_THREADED = ("naive", "loop_order")  # the kernels without OpenMP
SIMD_NAMES = {16: "AVX-512", 8: "AVX2 + FMA", 0: "plain C"}  # by floats per vector register

# 12 independent chains x = x * m + a of `width`-float vectors, compiled for the instruction set
# that has them (a target attribute, so the probe builds on any x86 CPU), and the widest width the
# CPU running it supports.
PROBE_SOURCE = """
#define CHAINS(width, isa)                                                                     \\
    typedef float v##width __attribute__((vector_size(4 * width)));                            \\
    __attribute__((target(isa))) float fma_chains_##width(long iterations)                     \\
    {                                                                                          \\
        /* different starting values, or the compiler would compute one chain and copy it */   \\
        v##width x0 = {0}, x1 = {1}, x2 = {2}, x3 = {3}, x4 = {4}, x5 = {5};                   \\
        v##width x6 = {6}, x7 = {7}, x8 = {8}, x9 = {9}, x10 = {10}, x11 = {11};               \\
        const v##width m = x0 + 0.999f, a = x0 + 1e-3f; /* x0 is 0: every lane the same */     \\
        for (long i = 0; i < iterations; i++) {                                                \\
            x0 = x0 * m + a; x1 = x1 * m + a; x2 = x2 * m + a; x3 = x3 * m + a;                \\
            x4 = x4 * m + a; x5 = x5 * m + a; x6 = x6 * m + a; x7 = x7 * m + a;                \\
            x8 = x8 * m + a; x9 = x9 * m + a; x10 = x10 * m + a; x11 = x11 * m + a;            \\
        }                                                                                      \\
        v##width sum = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7 + x8 + x9 + x10 + x11;            \\
        return sum[0];                                                                         \\
    }
CHAINS(8, "avx2,fma")
CHAINS(16, "avx512f")
int widest_fma(void)
{
    if (__builtin_cpu_supports("avx512f"))
        return 16;
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 8 : 0;
}
"""
PROBE_CHAINS = 12


def measured_peak(rounds):
    """(GFLOP/s, floats per FMA) of one core running its widest fused multiply-adds (best of
    3 * `rounds` runs), or (None, 0) where the probe cannot be built or run (a CPU without FMA,
    not x86, no compiler)."""
    import cffi

    ffi = cffi.FFI()
    ffi.cdef("float fma_chains_8(long); float fma_chains_16(long); int widest_fma(void);")
    ffi.set_source("_fma_probe", PROBE_SOURCE, extra_compile_args=["-O2", "-ffp-contract=fast"])
    with tempfile.TemporaryDirectory() as folder:
        try:
            spec = importlib.util.spec_from_file_location("_fma_probe", ffi.compile(tmpdir=folder))
            probe = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(probe)
        except (cffi.VerificationError, OSError, ImportError):
            return None, 0
        width = probe.lib.widest_fma()
        if not width:
            return None, 0
        chains = getattr(probe.lib, f"fma_chains_{width}")
        iterations = 20_000_000
        seconds = min(time_once(lambda: chains(iterations)) for _ in range(3 * rounds))
    return iterations * PROBE_CHAINS * width * 2 / seconds / 1e9, width


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


def share_of_peak(gflops, peak):
    """`gflops` as a share of the measured peak; never a share over 100%, which can only be an
    error in the measurement of the peak."""
    if not peak:
        return "?"
    return f"{gflops / peak:.0%}" if gflops <= peak else "over the peak: mismeasured"


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
        cells.append(share_of_peak(single, peak))
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


def section_key():
    """The MATMUL.md section that this build's tables go to: its micro-kernel's instruction set."""
    return SIMD_NAMES[stage3_c.build_info()["simd_width"]]


def report(args):
    """Measure everything and return the text of the tables (markdown)."""
    rng = np.random.default_rng(0)
    # Described first, before the peak probe's library is loaded and deleted: one run asked after
    # it found no BLAS in threadpoolctl's list (printed "?").
    machine = machine_description()
    load_before = os.getloadavg()[0]
    peaks = [measured_peak(args.rounds)]
    fast_enough = [k for k in stage3_c.MATMUL_KERNELS if k != "naive"] + ["numpy"]
    plan = [(args.size, fast_enough), (args.naive_size, ["naive"])]
    if args.large_size:
        plan.append((args.large_size, fast_enough))
    results = {}
    for size, kernels in plan:
        measured = measure(size, kernels, args.threads, args.repeats, args.rounds, rng)
        results.setdefault(size, {}).update(measured)
    load_after = os.getloadavg()[0]
    peaks.append(measured_peak(args.rounds))  # again: a busy moment only lowers it
    peak, width = max(peaks, key=lambda found: found[0] or 0.0)
    info = stage3_c.build_info()
    if peak:
        # 2 flops per float of an FMA; a core with 2 FMA units issues 2 per cycle
        clock = peak / (2 * width * 2)
        peak_text = (
            f"{peak:.1f} GFLOP/s: {PROBE_CHAINS} independent chains of {width}-float FMAs "
            f"({SIMD_NAMES[width]}), {peak / (2 * width):.2f} G FMA instructions per second "
            f"(2 FMA units at {clock:.2f} GHz, or one at twice that)."
        )
    else:
        peak_text = "unknown (no FMA unit found, or the probe could not be built)."
    parts = [
        f"Measured {date.today().isoformat()} on {machine}; C built with "
        f"`{info['flags']}`, so the simd kernel runs the {SIMD_NAMES[info['simd_width']]} "
        f"micro-kernel; load average {load_before:.1f} before, {load_after:.1f} after. Best of "
        f"{args.rounds} rounds of the median of {args.repeats} calls.",
        "",
        f"Peak of one core, measured: {peak_text}",
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


def write_into_markdown(text, key):
    """Replace the tables of section `key` (between its BEGIN and END markers) by `text`."""
    document = MARKDOWN.read_text()
    marker = TABLE_BEGIN.format(key=key)
    if marker not in document:
        raise SystemExit(f"error: {MARKDOWN.name} has no section {marker!r} to write into")
    begin = document.index(marker) + len(marker)
    end = document.index(TABLE_END, begin)
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
        key = section_key()
        write_into_markdown(text, key)
        print(f"\nwritten into {MARKDOWN}, section {key}")


if __name__ == "__main__":
    main()

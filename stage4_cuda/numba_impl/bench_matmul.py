"""Time the numba matmul ladder (matmul_ladder.py) on the GPU against cuBLAS SGEMM through PyTorch.

    python -m stage4_cuda.numba_impl.bench_matmul [--sizes 1024,4096] [--sweep]
                                                  [--out curriculum/results/matmul-numba-h100.json]

Square products of each size, fp32, TF32 off for cuBLAS. After a warm-up call (which also compiles
the kernel), each repeat times LAUNCHES calls launched back to back between two CUDA events: each
launch is issued while the kernel before it runs, so the events see the device's time, not the
Python launch overhead (tens of microseconds). Each figure is the median of the repeats' time per
call; the spread is the interquartile range. The inputs (normal numbers, 3 * 64 MB
at 4096) are larger than the L2 cache, so no flushing is needed at the larger size; at 1024 the
inputs stay in L2, as they would in a network. Every result is checked against cuBLAS's by
||C - C_ref|| / ||C_ref|| (fp32: far below 1e-3). --sweep also times rungs 5 to 7 with other
tile sizes (make_register_2d, make_register_2d_prefetch, make_register_2d_vector). The JSON record
goes to --out, by default curriculum/results/matmul-numba-<device>.json, and a table to stdout.
"""

import argparse
import json
import platform
import re
import statistics
from datetime import UTC, datetime
from pathlib import Path

import numba
from numba import cuda

from . import linalg
from . import matmul_ladder as ladder

RESULTS = Path(__file__).resolve().parents[2] / "curriculum" / "results"
# (patch, spread, depth_step) variants of rungs 5 and 6 for --sweep; the first is the default.
SWEEP = ((8, 16, 8), (8, 16, 16), (4, 16, 8), (4, 16, 16), (8, 8, 8), (8, 8, 16))


def device_slug(name):
    """'NVIDIA H100 80GB HBM3' -> 'h100': the model, for file names."""
    match = re.search(r"\b([A-Z]+\d{2,4}[A-Za-z]?)\b", name)
    return (match.group(1) if match else re.sub(r"\W+", "-", name)).lower()


LAUNCHES = 10  # calls per timed repeat
REPEATS = 7


def time_calls(call):
    """(median, q1, q3) in milliseconds per call of `call()` on the device."""
    call()  # warm-up: compiles, loads the module
    times = []
    for _ in range(REPEATS):
        start, end = cuda.event(), cuda.event()
        start.record()
        for _ in range(LAUNCHES):
            call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / LAUNCHES)
    quartiles = statistics.quantiles(times, n=4)
    return statistics.median(times), quartiles[0], quartiles[2]


def launcher(kernel, blocks, threads, *args):
    """A call that launches `kernel` on `args` (bound now, not when called)."""
    return lambda: kernel[blocks, threads](*args)


def relative_error(received, expected):
    """||received - expected|| / ||expected||, in float64."""
    difference = (received.double() - expected.double()).norm()
    return float(difference / expected.double().norm())


def measure(torch, size, sweep):
    """{label: record} for one square size: every rung, its sweep variants, and cuBLAS."""
    a = torch.randn(size, size, device="cuda")
    b = torch.randn(size, size, device="cuda")
    flops = 2.0 * size**3
    expected = torch.matmul(a, b)
    torch_ms = time_calls(lambda: torch.matmul(a, b))
    results = {"cuBLAS (torch.matmul)": record(flops, torch_ms, torch_ms, 0.0)}
    print_row(size, "cuBLAS (torch.matmul)", results["cuBLAS (torch.matmul)"])
    a_numba, b_numba = cuda.as_cuda_array(a), cuda.as_cuda_array(b)  # views: no copy
    c = torch.empty(size, size, device="cuda")
    c_numba = cuda.as_cuda_array(c)
    variants = [(name, ladder.LADDER[name]) for name in linalg.MATMUL_KERNELS]
    if sweep:
        variants += [
            (f"{maker.__name__[5:]} R={p} spread={s} BK={k}", maker(p, s, k))
            for maker in (
                ladder.make_register_2d,
                ladder.make_register_2d_prefetch,
                ladder.make_register_2d_vector,
            )
            for p, s, k in SWEEP[1:]
        ]
    for label, (kernel, geometry) in variants:
        blocks, threads = geometry(size, size)
        c.fill_(float("nan"))
        call = launcher(kernel, blocks, threads, a_numba, b_numba, c_numba)
        try:
            times = time_calls(call)
        except Exception as error:  # a variant that does not compile or launch: say so, go on
            results[label] = {"error": f"{type(error).__name__}: {error}"[:500]}
            print(f"| {size} | {label} | failed: {results[label]['error'][:200]} |", flush=True)
            continue
        error = relative_error(c, expected)
        results[label] = record(flops, times, torch_ms, error) | resources(kernel)
        print_row(size, label, results[label])
    return results


def resources(kernel):
    """The compiled kernel's registers and local-memory bytes per thread (spills show there);
    numba answers per compiled signature, and each kernel here has one."""
    registers, local = kernel.get_regs_per_thread(), kernel.get_local_mem_per_thread()
    if isinstance(registers, dict):
        (registers,), (local,) = registers.values(), local.values()
    return {"registers": int(registers), "local_bytes": int(local)}


def record(flops, times, torch_times, error):
    median, q1, q3 = times
    return {
        "ms": median,
        "ms_q1": q1,
        "ms_q3": q3,
        "gflops": flops / median / 1e6,
        "share_of_cublas": torch_times[0] / median,
        "relative_error": error,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m stage4_cuda.numba_impl.bench_matmul")
    parser.add_argument("--sizes", default="1024,4096")
    parser.add_argument("--sweep", action="store_true", help="also other tile sizes of rungs 5-7")
    parser.add_argument("--out", type=Path, help="the JSON record (default: under results/)")
    args = parser.parse_args(argv)
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = cuda.get_current_device()
    name = device.name.decode() if isinstance(device.name, bytes) else str(device.name)
    sizes = [int(size) for size in args.sizes.split(",")]
    print(f"{name}, numba {numba.__version__}, torch {torch.__version__}, TF32 off")
    print("| n | kernel | ms | GFLOP/s | of cuBLAS | rel. error | registers | local bytes |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    report = {
        "device": name,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": platform.node(),
        "numba": numba.__version__,
        "torch": torch.__version__,
        "tf32": False,
        "timing": f"CUDA events around {LAUNCHES} back-to-back launches, median of {REPEATS}",
        "sizes": {str(size): measure(torch, size, args.sweep) for size in sizes},
    }
    out = args.out or RESULTS / f"matmul-numba-{device_slug(name)}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"-> {out}")


def print_row(size, label, r):
    print(
        f"| {size} | {label} | {r['ms']:.3f} | {r['gflops']:.0f} | "
        f"{100 * r['share_of_cublas']:.1f}% | {r['relative_error']:.1e} | "
        f"{r.get('registers', '')} | {r.get('local_bytes', '')} |",
        flush=True,
    )


if __name__ == "__main__":
    main()

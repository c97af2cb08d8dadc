"""Times the attention ladder of the nvcc variant (stage4_cuda/csrc/attention/) beside PyTorch's
scaled_dot_product_attention, forward and backward, on one GPU, in one run.

    python -m bench.attention_ladder                    every rung, N = 1024 .. 8192, into --out
    python -m bench.attention_ladder --rungs flash2 --lengths 4096
    python -m bench.attention_ladder --table RECORD.json     the Markdown of a record; times nothing
    python -m bench.attention_ladder --plot RECORD.json      its plot (RECORD.png)
    python -m bench.attention_ladder --readme RECORD.json    its table into csrc/attention/README.md

Shapes: q, k, v [B, H, N, 64] float32 with B H N = TOKENS (B H = 256 heads at N = 1024, 32 at
8192: thousands of query tiles at every N, enough to fill a GPU), causal and not. For each, on
fresh standard normal inputs (PyTorch with TF32 off: fp32 products throughout):

- **check**: each rung's y and lse against float64 on the first head (every output of every
  head finite); the backward's dq, dk, dv likewise, against float64 autograd; PyTorch's too;
- **time**: CUDA events around one call, after a warm-up call, the best of up to REPEATS calls
  (fewer when the calls take longer than BUDGET_S together);
- **memory**: the device memory a call takes beyond its inputs, at its peak. Ours: the caching
  allocator (stage4_cuda/runtime/allocator.py) and the library's scratch are emptied first, then
  cudaMemGetInfo's free memory is read before the call and after it, with its outputs alive (the
  allocator keeps what it freed during the call allocated, so the difference is the peak, to the
  driver's 2 MiB pages). PyTorch's: torch.cuda.max_memory_allocated over its allocated memory
  before the call (its own allocator's count; cudaMemGetInfo cannot see inside its cache).

FLOPs counted: 4 N M D a head for the forward (q k^T and P v), 10 N M D for the backward (five
products: q k^T and dy v^T recomputed, dv, dq, dk; our query-gradient pass recomputes the first
two again, which is not counted), halved with a causal mask; TFLOP/s = those over the time.
"""

import argparse
import datetime
import json
import math
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
README = REPO_ROOT / "stage4_cuda" / "csrc" / "attention" / "README.md"
README_BEGIN = "<!-- BEGIN GENERATED TABLE: python -m bench.attention_ladder --readme RECORD -->"
README_END = "<!-- END GENERATED TABLE -->"
LENGTHS = (1024, 2048, 4096, 8192)
D = 64
HEADS_PER_BATCH = 16
TOKENS = 1 << 18  # B H N: the heads shrink as N grows
REPEATS = 5
BUDGET_S = 1.0  # the timed calls of one row stop once they have taken this long together
RTOL = 2e-4  # float32 sums of up to 8192 terms against float64, relative to the largest value
TARGET_VS_TORCH = 1.5  # the best forward within 1.5x PyTorch's time
TARGET_VS_NAIVE = 3.0  # ... and at least 3x faster than the naive rung, at N = 4096
TARGET_BACKWARD = 2.0  # the backward within 2x PyTorch's
TORCH = "torch sdpa"


def torch_cuda():
    """PyTorch with CUDA and TF32 off, or SystemExit: the comparison needs it."""
    try:
        import torch
    except ImportError:
        raise SystemExit(
            "attention_ladder: PyTorch is not installed (the comparison needs it)"
        ) from None
    if not torch.cuda.is_available():
        raise SystemExit("attention_ladder: no GPU")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch


def flops(n, m, d, causal, backward=False):
    """The multiply-adds of one head as FLOPs, halved by a causal mask (n = m here)."""
    total = (10 if backward else 4) * n * m * d
    return total / 2 if causal else total


def reference(torch, q, k, v, dy, causal):
    """(y, lse, dq, dk, dv) of the first head in float64 (PyTorch on the GPU)."""
    q, k, v, dy = (a[0, 0].double().requires_grad_() for a in (q, k, v, dy))
    s = q @ k.T / math.sqrt(q.shape[-1])
    if causal:
        s = s + torch.full_like(s, -math.inf).triu(1)
    lse = torch.logsumexp(s, dim=-1)
    y = torch.exp(s - lse[:, None]) @ v
    dq, dk, dv = torch.autograd.grad(y, (q, k, v), dy)
    return [a.detach() for a in (y, lse, dq, dk, dv)]


def worst(torch, got, want):
    """The worst |got - want| over RTOL times the largest |want| (NaN when an output of any head
    is not finite: NaN never passes)."""
    if not bool(torch.isfinite(got).all()):
        return float("nan")
    head = got[(0,) * (got.dim() - want.dim())].double()
    return float((head - want).abs().max() / (RTOL * want.abs().max()))


def time_call(torch, function):
    """Seconds of the fastest of up to REPEATS calls of `function()` (CUDA events around each),
    after a warm-up call."""
    function()
    torch.cuda.synchronize()
    best, spent = math.inf, 0.0
    for _ in range(REPEATS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        function()
        end.record()
        end.synchronize()
        seconds = start.elapsed_time(end) / 1e3
        best, spent = min(best, seconds), spent + seconds
        if spent > BUDGET_S:
            break
    return best


def our_peak_bytes(function):
    """The device memory the nvcc variant takes during `function()` beyond what exists before:
    cudaMemGetInfo's free memory before and after, the caching allocator and the library's
    scratch emptied first (so that every block the call allocates, freed or not, stays
    allocated until the second reading)."""
    from numba import cuda

    from stage4_cuda.nvcc_impl import _scratch

    _scratch._buffer = None
    context = cuda.current_context()
    release = getattr(context.memory_manager, "release_cached", None)
    if release is None:  # numba's own manager: its freed blocks go back at once, the peak unseen
        raise SystemExit(
            "attention_ladder: the caching allocator is not installed "
            "(stage4_cuda/runtime/device.py); the peak memory cannot be read"
        )
    release()
    cuda.synchronize()
    free_before = context.get_memory_info().free
    outputs = function()
    cuda.synchronize()
    used = free_before - context.get_memory_info().free
    del outputs
    return used


def torch_peak_bytes(torch, function):
    """PyTorch's allocator's peak during `function()` over its allocation before."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    outputs = function()
    torch.cuda.synchronize()
    used = torch.cuda.max_memory_allocated() - before
    del outputs
    return used


def measure(torch, gpu, n, causal, rungs, seed):
    """The rows of one length and mask: each rung forward, the backward, PyTorch's both."""
    import torch.nn.functional as F

    heads = TOKENS // n
    shape = (heads // HEADS_PER_BATCH, HEADS_PER_BATCH, n, D)
    generator = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v, dy = (torch.randn(shape, device="cuda", generator=generator) for _ in range(4))
    y64, lse64, *grads64 = reference(torch, q, k, v, dy, causal)
    per_head = flops(n, n, D, causal) * heads
    rows = []

    def row(name, seconds, peak, check, work=per_head):
        rows.append({"name": name, "seconds": seconds, "tflops": work / seconds / 1e12,
                     "peak_bytes": peak, "check": check})  # fmt: skip

    for name in rungs:

        def forward(name=name):
            return gpu.attention(q, k, v, causal, None, kernel=name)

        peak = our_peak_bytes(forward)
        y, (lse,) = gpu.attention(q, k, v, causal, None, kernel=name)
        y, lse = torch.as_tensor(y), torch.as_tensor(lse)
        error = max(worst(torch, y, y64), worst(torch, lse, lse64))
        row(name, time_call(torch, forward), peak, verdict(error))
    y, (lse,) = gpu.attention(q, k, v, causal, None)

    def backward():
        return gpu.attention_backward(dy, q, k, v, y, (lse,), causal, None)

    peak = our_peak_bytes(backward)
    grads = [torch.as_tensor(g) for g in backward()]
    error = max(worst(torch, g, w) for g, w in zip(grads, grads64, strict=True))
    work = flops(n, n, D, causal, backward=True) * heads
    row("backward", time_call(torch, backward), peak, verdict(error), work)

    def torch_forward():
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    theirs = torch_forward()
    row(TORCH, time_call(torch, torch_forward), torch_peak_bytes(torch, torch_forward),
        verdict(worst(torch, theirs, y64)))  # fmt: skip
    leaves = [a.detach().clone().requires_grad_() for a in (q, k, v)]
    out = F.scaled_dot_product_attention(*leaves, is_causal=causal)

    def torch_backward():
        return torch.autograd.grad(out, leaves, dy, retain_graph=True)

    grads = torch_backward()
    error = max(worst(torch, g, w) for g, w in zip(grads, grads64, strict=True))
    row(f"{TORCH} backward", time_call(torch, torch_backward),
        torch_peak_bytes(torch, torch_backward), verdict(error), work)  # fmt: skip
    return {"n": n, "heads": heads, "shape": list(shape), "causal": causal, "rows": rows}


def verdict(error):
    return f"{'ok' if error <= 1.0 else 'FAILED'} ({error:.2g})"  # NaN is not <= 1


# --- the record --------------------------------------------------------------------------------


def find(case, name):
    return next((r for r in case["rows"] if r["name"] == name), None)


def best_forward(case, rungs):
    """The fastest of the rungs measured in `case`."""
    found = [r for r in case["rows"] if r["name"] in rungs]
    return min(found, key=lambda r: r["seconds"]) if found else None


def targets(record):
    """Lines saying whether each target is met, per length and mask measured."""
    lines, rungs = [], record["rungs"]
    for case in record["cases"]:
        label = f"N = {case['n']}{', causal' if case['causal'] else ''}"
        best, torch_row = best_forward(case, rungs), find(case, TORCH)
        if best and torch_row:
            ratio = best["seconds"] / torch_row["seconds"]
            met = "met" if ratio <= TARGET_VS_TORCH else "**missed**"
            lines.append(f"- {label}: best forward ({best['name']}) {ratio:.2f}x PyTorch's time; "
                         f"target <= {TARGET_VS_TORCH}x: {met}.")  # fmt: skip
        naive = find(case, "naive")
        if best and naive and case["n"] == 4096:
            ratio = naive["seconds"] / best["seconds"]
            met = "met" if ratio >= TARGET_VS_NAIVE else "**missed**"
            lines.append(f"- {label}: best forward {ratio:.1f}x faster than naive; "
                         f"target >= {TARGET_VS_NAIVE}x: {met}.")  # fmt: skip
        ours, theirs = find(case, "backward"), find(case, f"{TORCH} backward")
        if ours and theirs:
            ratio = ours["seconds"] / theirs["seconds"]
            met = "met" if ratio <= TARGET_BACKWARD else "**missed**"
            lines.append(f"- {label}: backward {ratio:.2f}x PyTorch's time; "
                         f"target <= {TARGET_BACKWARD}x: {met}.")  # fmt: skip
    return lines


def memory_lines(record):
    """Each rung's peak memory a head against N (its growth exponent between the lengths)."""
    lines = []
    for causal in (False, True):
        cases = sorted((c for c in record["cases"] if c["causal"] == causal), key=lambda c: c["n"])
        if len(cases) < 2:
            continue
        for name in [*record["rungs"], "backward"]:
            per_head = [(c["n"], find(c, name)["peak_bytes"] / c["heads"]) for c in cases
                        if find(c, name)]  # fmt: skip
            if len(per_head) < 2 or min(b for _, b in per_head) <= 0:
                continue
            (n0, b0), (n1, b1) = per_head[0], per_head[-1]
            exponent = math.log(b1 / b0) / math.log(n1 / n0)
            lines.append(f"- {name}{' (causal)' if causal else ''}: "
                         f"{b0 / 2**20:.3g} MiB a head at N = {n0}, {b1 / 2**20:.3g} at N = {n1}: "
                         f"grows as N^{exponent:.2f}.")  # fmt: skip
    return lines


def table(record):
    """The Markdown table of a record's rows."""
    lines = ["| N | causal | kernel | ms | TFLOP/s | x PyTorch | peak MiB | check |",
             "| ---: | --- | --- | ---: | ---: | ---: | ---: | --- |"]  # fmt: skip
    for case in record["cases"]:
        torch_rows = {False: find(case, TORCH), True: find(case, f"{TORCH} backward")}
        for r in case["rows"]:
            versus = torch_rows["backward" in r["name"]]
            ratio = f"{r['seconds'] / versus['seconds']:.2f}" if versus else "-"
            lines.append(f"| {case['n']} | {'yes' if case['causal'] else 'no'} | {r['name']} | "
                         f"{r['seconds'] * 1e3:.4g} | {r['tflops']:.2f} | {ratio} | "
                         f"{r['peak_bytes'] / 2**20:.1f} | {r['check']} |")  # fmt: skip
    return lines


def render(record):
    """The Markdown of a record: how it was measured, the targets, memory, the table."""
    return "\n".join([
        "# The attention ladder of the nvcc variant",
        "",
        "<!-- generated by `python -m bench.attention_ladder --table RECORD.json`; "
        "do not edit -->",
        "",
        *summary(record),
    ]) + "\n"  # fmt: skip


def summary(record):
    """The lines a record's page and the ladder's README share."""
    return [
        f"Measured {record['measured']} on {record['device']}, PyTorch {record['torch']} "
        f"(TF32 off; its fp32 scaled_dot_product_attention). q, k, v [B, H, N, {D}] float32, "
        f"B H N = {TOKENS}. Time: CUDA events around one call, the best of up to {REPEATS} "
        "after a warm-up. Check: outputs of every head finite, the first head against float64 "
        f"within {RTOL:g} of its largest value (worst error / tolerance in brackets). Peak: "
        "device memory beyond the inputs (ours: cudaMemGetInfo around the call with the "
        "caching allocator emptied; PyTorch's: its allocator's peak). TFLOP/s counts 4 N^2 D a "
        "head forward, 10 N^2 D backward, halved when causal.",
        "",
        "Targets:",
        "",
        *(targets(record) or ["- not judged: PyTorch or the lengths missing."]),
        "",
        "Peak memory a head:",
        "",
        *(memory_lines(record) or ["- one length only."]),
        "",
        *table(record),
    ]


def plot(record, path):
    """Forward time and peak memory a head against N, one line per rung and PyTorch, causal
    dashed: a PNG at `path`."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display needed
    import matplotlib.pyplot as plt

    figure, (times, memory) = plt.subplots(1, 2, figsize=(11, 4.2))
    names = [*record["rungs"], TORCH, "backward", f"{TORCH} backward"]
    for index, name in enumerate(names):
        for causal in (False, True):
            cases = sorted((c for c in record["cases"] if c["causal"] == causal and find(c, name)),
                           key=lambda c: c["n"])  # fmt: skip
            if not cases:
                continue
            style = {"color": f"C{index}", "linestyle": "--" if causal else "-", "marker": "o",
                     "label": name if not causal else None}  # fmt: skip
            n = [c["n"] for c in cases]
            times.plot(n, [find(c, name)["seconds"] * 1e3 for c in cases], **style)
            memory.plot(n, [find(c, name)["peak_bytes"] / c["heads"] / 2**20 for c in cases],
                        **style)  # fmt: skip
    for axes, label in ((times, "ms a call"), (memory, "peak MiB a head")):
        axes.set_xscale("log", base=2)
        axes.set_yscale("log")
        axes.set_xlabel("N (sequence length)")
        axes.set_ylabel(label)
        axes.grid(True, which="both", alpha=0.3)
    times.set_title("time (dashed: causal)")
    memory.set_title("peak device memory beyond the inputs")
    times.legend(fontsize=8)
    figure.suptitle(f"attention ladder, {record['device']}, d = {D}, B H N = {TOKENS}")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def write_readme(record, readme=README):
    """Replace the generated section of the ladder's README by this record's summary and its
    plot (attention-ladder.png beside the README)."""
    plot(record, readme.parent / "attention-ladder.png")
    text = readme.read_text(encoding="utf-8")
    head, begin, rest = text.partition(README_BEGIN)
    _, end, tail = rest.partition(README_END)
    if not begin or not end:
        raise SystemExit(f"{readme} lacks the markers {README_BEGIN} ... {README_END}")
    figure = "![time and peak memory of each rung against N](attention-ladder.png)"
    body = "\n".join([figure, "", *summary(record)])
    readme.write_text(f"{head}{begin}\n\n{body}\n\n{end}{tail}", encoding="utf-8")


def run(lengths, rungs, seed, save):
    torch = torch_cuda()
    import stage4_cuda.nvcc_impl as gpu

    ok, reason = gpu.available()
    if not ok:
        raise SystemExit(f"attention_ladder: the nvcc variant is unavailable: {reason}")
    properties = torch.cuda.get_device_properties(0)
    record = {
        "measured": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "device": properties.name,
        "multiprocessors": properties.multi_processor_count,
        "torch": torch.__version__,
        "seed": seed,
        "rungs": list(rungs),
        "cases": [],
    }
    for n in lengths:
        for causal in (False, True):
            print(f"N = {n}{' causal' if causal else ''} ...", file=sys.stderr, flush=True)
            record["cases"].append(measure(torch, gpu, n, causal, rungs, seed + n + causal))
            save(record)  # after every case: a run cut short keeps what it measured
            torch.cuda.empty_cache()  # this length's inputs and PyTorch's cached blocks
    return record


def main(argv=None):
    from stage4_cuda.nvcc_impl.attention import ATTENTION_KERNELS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", default=",".join(map(str, LENGTHS)), help="N, commas")
    parser.add_argument("--rungs", default="", help="names, commas (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("runs/attention-bench"),
                        help="folder for attention-ladder.json, .md and .png")  # fmt: skip
    parser.add_argument("--table", type=Path, help="print the Markdown of this record")
    parser.add_argument("--plot", type=Path, help="draw this record's plot beside it (.png)")
    parser.add_argument("--readme", type=Path, help="write this record's table into the README")
    args = parser.parse_args(argv)
    if args.table or args.plot or args.readme:
        for path, action in ((args.table, lambda r, p: print(render(r), end="")),
                             (args.plot, lambda r, p: plot(r, p.with_suffix(".png"))),
                             (args.readme, lambda r, p: write_readme(r))):  # fmt: skip
            if path:
                action(json.loads(path.read_text()), path)
        return 0
    rungs = [r for r in ATTENTION_KERNELS if not args.rungs or r in args.rungs.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    base = args.out / "attention-ladder"

    def save(record):
        base.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")
        base.with_suffix(".md").write_text(render(record))

    record = run([int(n) for n in args.lengths.split(",")], rungs, args.seed, save)
    plot(record, base.with_suffix(".png"))
    print(render(record), end="")
    failed = [r for c in record["cases"] for r in c["rows"] if "FAILED" in r["check"]]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Times the softmax ladder of the nvcc variant (csrc/softmax/) beside a device-to-device copy of
the same bytes and PyTorch, on one GPU, in one run.

    python -m bench.softmax_ladder            every rung at every shape, into --out
    python -m bench.softmax_ladder --write    ... into curriculum/results/softmax-cuda-h100.*
    python -m bench.softmax_ladder --rungs online,cross_entropy --shapes 4096x32768
    python -m bench.softmax_ladder --table curriculum/results/softmax-cuda-h100.json

Shapes: [4096, 32768] and [8192, 50257] (the targets' shapes: a vocabulary of GPT-2's size),
and the curriculum's [64, 10] and [256, 10] for reference. For each shape, on fresh standard
normal inputs:

- **check**: each rung's launcher writes into outputs filled with NaN; every output must be
  finite, and the rows agree with a float64 reference (all of them at the small shapes,
  SAMPLE_ROWS random rows at the large ones; the loss against the float64 mean over every row)
  within RTOL of each value plus RTOL of the row's largest (so that an entry of 1e-9 beside
  entries near 1 is not judged on its own rounding);
- **time**: CUDA events around batches of back-to-back calls (each batch at least BATCH_S, so
  that launch overheads hide behind the kernels; at [64, 10] they do not, and the inputs stay in
  L2: those rows are for reference), after a warm-up call, the median of REPEATS batches;
- **copy**: a device-to-device copy of the same bytes, timed the same way: the driver's
  (cuMemcpyDtoD) and, when PyTorch is installed, PyTorch's copy kernel; the faster is the ceiling.

Cost model: softmax reads x once and writes y once, 2 R bytes for R = 4 rows cols; a copy of x
moves the same 2 R. GB/s = 2 R / time; "of copy" = GB/s over the copy's. The fused cross-entropy
(loss and gradient) reads the logits and writes the gradient: 2 R as well (labels and the loss
are a few KB); the loss alone reads R. A rung that reads x twice or three times from device
memory pays for it in time, not in the bytes counted. PyTorch's softmax is counted the same way.
"""

import argparse
import datetime
import json
import sys
from pathlib import Path

import numpy as np
from numba import cuda

import stage4_cuda.nvcc_impl as gpu
from stage4_cuda.nvcc_impl._library import call

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path("curriculum/results/softmax-cuda-h100")  # .json and .md, from the repository root
SHAPES = ((4096, 32768), (8192, 50257), (64, 10), (256, 10))
TARGET_SHAPES = SHAPES[:2]
TARGET_SHARE = 0.90  # online and fused cross-entropy: >= 90% of the copy bandwidth
TARGET_RATIO = 1.2  # online >= 1.2x the three-pass rung
SAMPLE_ROWS = 256  # rows checked at a large shape (every output is checked to be finite)
RTOL = 1e-5  # float32 exp and sums against float64: a few units of 2^-24, well within
BATCH_S = 0.025  # each timed batch of calls lasts at least this long
REPEATS = 5
CROSS_ENTROPY = "cross_entropy"  # rung 5, beside SOFTMAX_KERNELS


def parse_shapes(text):
    """'4096x32768,64x10' -> ((4096, 32768), (64, 10))."""
    return tuple(tuple(int(n) for n in item.split("x")) for item in text.split(","))


# --- float64 references ------------------------------------------------------------------------


def softmax64(x):
    """Row-wise softmax of x in float64."""
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def cross_entropy64(logits, labels, chunk=512):
    """Mean cross-entropy in float64, `chunk` rows at a time (a [8192, 50257] float64 copy would
    take 3.3 GB)."""
    total = 0.0
    for first in range(0, len(logits), chunk):
        x = logits[first : first + chunk].astype(np.float64)
        top = x.max(axis=1)
        lse = top + np.log(np.exp(x - top[:, None]).sum(axis=1))
        total += float((lse - x[np.arange(len(x)), labels[first : first + chunk]]).sum())
    return total / len(logits)


def compare(received, expected):
    """The worst |received - expected| / (RTOL |expected| + RTOL max |expected| of its row) of
    rows [n, cols] or values [n] (NaN when an output is not finite: NaN never passes)."""
    received, expected = np.asarray(received, np.float64), np.asarray(expected, np.float64)
    if not np.isfinite(received).all():
        return float("nan")
    scale = np.abs(expected).max(axis=-1, keepdims=True) if expected.ndim > 1 else 0.0
    return float((np.abs(received - expected) / (RTOL * (np.abs(expected) + scale))).max())


# --- one shape ---------------------------------------------------------------------------------


class Shape:
    """Fresh inputs of one shape on the device, the rows checked, and the calls timed."""

    def __init__(self, rng, rows, cols):
        self.rows, self.cols, self.bytes = rows, cols, 4 * rows * cols
        self.host = rng.standard_normal((rows, cols), dtype=np.float32)
        self.labels_host = rng.integers(0, cols, rows, dtype=np.int64)
        self.x, self.labels = gpu.from_numpy(self.host), gpu.from_numpy(self.labels_host)
        self.nan = np.full((rows, cols), np.nan, np.float32)
        self.y = cuda.device_array((rows, cols), np.float32)  # every rung's output
        self.terms = cuda.device_array(rows, np.float32)  # rung 5's loss per row
        self.loss = cuda.device_array(1, np.float32)
        self.scratch = cuda.device_array(2 * rows, np.float32)  # three_pass's row statistics
        self.sample = np.sort(rng.choice(rows, min(rows, SAMPLE_ROWS), replace=False))

    def launcher(self, name, grad=True):
        """The library call of rung `name` on this shape, writing into self.y (rung 5: the loss
        into self.loss, and the gradient into self.y unless not `grad`)."""
        rows, cols = self.rows, self.cols
        if name == CROSS_ENTROPY:
            args = (self.x, self.labels, self.terms, self.loss, self.y if grad else None, rows,
                    cols)  # fmt: skip
            return lambda: call("s2c_cuda_cross_entropy_loss", *args)
        scratch = self.scratch if name == "three_pass" else None
        return lambda: call(f"s2c_cuda_softmax_{name}", self.x, self.y, scratch, rows, cols, 0)

    def check(self, name):
        """The worst error over the tolerance of rung `name` (NaN: an output not finite), its
        outputs filled with NaN first."""
        self.y.copy_to_device(self.nan)
        self.loss.copy_to_device(np.full(1, np.nan, np.float32))
        self.launcher(name)()
        y = self.y.copy_to_host()
        if not np.isfinite(y).all():
            return float("nan")
        sample, labels = self.host[self.sample], self.labels_host[self.sample]
        expected = softmax64(sample)
        if name != CROSS_ENTROPY:
            return compare(y[self.sample], expected)
        expected[np.arange(len(sample)), labels] -= 1.0
        loss = self.loss.copy_to_host()
        return max(compare(y[self.sample], expected / self.rows),
                   compare(loss, [cross_entropy64(self.host, self.labels_host)]))  # fmt: skip

    def copies(self):
        """{name: call}: the driver's device-to-device copy of x, and PyTorch's when present."""
        calls = {"cuMemcpyDtoD": lambda: self.y.copy_to_device(self.x)}
        torch = torch_or_none()
        if torch is not None:
            source, target = torch.as_tensor(self.x), torch.as_tensor(self.y)
            calls["torch copy_"] = lambda: target.copy_(source)
        return calls

    def torch_calls(self):
        """{name: (call, bytes)}: PyTorch's softmax, and its cross-entropy forward and backward."""
        torch = torch_or_none()
        if torch is None:
            return {}
        import torch.nn.functional as F

        x = torch.as_tensor(self.x)
        logits = x.detach().clone().requires_grad_()
        labels = torch.as_tensor(self.labels)

        def cross_entropy():  # the gradient returned, not accumulated into logits.grad
            return torch.autograd.grad(F.cross_entropy(logits, labels), logits)

        return {
            "torch.softmax": (lambda: torch.softmax(x, dim=1), 2 * self.bytes),
            "torch F.cross_entropy + backward": (cross_entropy, 2 * self.bytes),
        }


def torch_or_none():
    """PyTorch with CUDA, or None."""
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def time_call(function):
    """Seconds per call of `function()`: CUDA events around batches of back-to-back calls, each
    at least BATCH_S long, after a warm-up call; the median of REPEATS batches."""
    function()
    cuda.synchronize()
    start, end = cuda.event(), cuda.event()
    count, seconds = 1, 0.0
    while True:  # the batch size: doubled until a batch lasts BATCH_S
        start.record()
        for _ in range(count):
            function()
        end.record()
        end.synchronize()
        seconds = cuda.event_elapsed_time(start, end) / 1e3
        if seconds >= BATCH_S:
            break
        count *= 2
    times = [seconds / count]
    for _ in range(REPEATS - 1):
        start.record()
        for _ in range(count):
            function()
        end.record()
        end.synchronize()
        times.append(cuda.event_elapsed_time(start, end) / 1e3 / count)
    return float(np.median(times))


def measure_shape(rng, rows, cols, rungs):
    """The record of one shape: the copy, each rung checked then timed, PyTorch."""
    shape = Shape(rng, rows, cols)
    before = {name: time_call(copy) for name, copy in shape.copies().items()}
    rows_out = []

    def row(label, seconds, moved, check):
        rows_out.append({"name": label, "seconds": seconds, "gbps": moved / seconds / 1e9,
                         "check": check})  # fmt: skip

    for number, name in rungs:
        worst = shape.check(name)
        check = f"{'ok' if worst <= 1.0 else 'FAILED'} ({worst:.2g})"  # NaN is not <= 1
        row(f"{number} {name}", time_call(shape.launcher(name)), 2 * shape.bytes, check)
        if name == CROSS_ENTROPY:
            loss_alone = shape.launcher(name, grad=False)
            row(f"{number} {name}, loss alone", time_call(loss_alone), shape.bytes, "-")
    for label, (function, moved) in shape.torch_calls().items():
        row(label, time_call(function), moved, "-")
    # The copy timed before and after the rest, the faster kept: the ceiling of every share.
    copies = {name: min(before[name], time_call(copy)) for name, copy in shape.copies().items()}
    copy_seconds = min(copies.values())
    copy_gbps = 2 * shape.bytes / copy_seconds / 1e9
    for result in rows_out:
        result["share"] = result["gbps"] / copy_gbps
    return {
        "rows": rows,
        "cols": cols,
        "bytes": shape.bytes,
        "copy": {"seconds": copy_seconds, "gbps": copy_gbps, "each_seconds": copies},
        "results": rows_out,
    }


# --- the record --------------------------------------------------------------------------------


def find(shape, prefix):
    """The result of `shape` whose name starts with `prefix` (a rung number and name), or None."""
    return next((r for r in shape["results"] if r["name"].startswith(prefix)), None)


def targets(record):
    """Lines saying, for each target shape measured, whether the ladder's targets are met."""
    lines = []
    for shape in record["shapes"]:
        if (shape["rows"], shape["cols"]) not in TARGET_SHAPES:
            continue
        name = f"[{shape['rows']}, {shape['cols']}]"
        for prefix in ("4 online", f"5 {CROSS_ENTROPY}"):
            found = find(shape, prefix)
            if found and found["name"] == prefix:
                met = "met" if found["share"] >= TARGET_SHARE else "**missed**"
                lines.append(f"- {name} {prefix}: {found['share']:.1%} of the copy bandwidth; "
                             f"target {TARGET_SHARE:.0%}: {met}.")  # fmt: skip
        online, three = find(shape, "4 online"), find(shape, "1 three_pass")
        if online and three:
            ratio = three["seconds"] / online["seconds"]
            met = "met" if ratio >= TARGET_RATIO else "**missed**"
            lines.append(f"- {name} online / three_pass: {ratio:.2f}x faster; "
                         f"target {TARGET_RATIO}x: {met}.")  # fmt: skip
    return lines


def render(record):
    """The Markdown table of a record."""
    lines = [
        "# The softmax ladder of the nvcc variant",
        "",
        f"<!-- generated by `python -m bench.softmax_ladder --table {RESULTS}.json`; "
        "do not edit -->",
        "",
        f"Measured {record['measured']} on {record['device']} ({record['multiprocessors']} "
        f"multiprocessors, L2 {record['l2_bytes'] / 2**20:.0f} MiB), PyTorch "
        f"{record['torch'] or 'not installed'}. Timing: CUDA events around batches of "
        f"back-to-back calls (>= {BATCH_S * 1e3:.0f} ms each) after a warm-up call, median of "
        f"{REPEATS} batches. Check: outputs filled with NaN first, every one finite, rows "
        f"against float64 within {RTOL:g} of the value plus {RTOL:g} of the row's largest "
        "(worst error / tolerance in brackets).",
        "",
        "Cost model: softmax and the fused cross-entropy (loss and gradient) read the input once "
        "and write an output of its size once, 2 R bytes (R = 4 rows cols); the copy moves the "
        "same 2 R (the faster of cuMemcpyDtoD and PyTorch's copy kernel). The loss alone reads R.",
        "",
        "Targets (the ladder's: a share of the copy bandwidth, and online against three_pass):",
        "",
        *(targets(record) or ["- not judged: neither [4096, 32768] nor [8192, 50257] measured."]),
    ]
    for shape in record["shapes"]:
        copy = shape["copy"]
        lines += [
            "",
            f"[{shape['rows']}, {shape['cols']}] (R = {shape['bytes'] / 1e6:.3g} MB; copy "
            f"{copy['gbps']:.0f} GB/s, {copy['seconds'] * 1e3:.4g} ms):",
            "",
            "| kernel | ms | GB/s | of copy | check |",
            "| --- | ---: | ---: | ---: | --- |",
        ]
        for r in shape["results"]:
            lines.append(f"| {r['name']} | {r['seconds'] * 1e3:.4g} | {r['gbps']:.0f} | "
                         f"{r['share']:.1%} | {r['check']} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def device_facts():
    """The device's name, multiprocessors and L2 size."""
    device = cuda.get_current_device()
    name = device.name.decode() if isinstance(device.name, bytes) else device.name
    return {"device": name, "multiprocessors": device.MULTIPROCESSOR_COUNT,
            "l2_bytes": device.L2_CACHE_SIZE}  # fmt: skip


def run(shapes, rungs, seed):
    ok, reason = gpu.available()
    if not ok:
        raise SystemExit(f"softmax_ladder: the nvcc variant is unavailable: {reason}")
    torch = torch_or_none()
    rng = np.random.default_rng(seed)
    record = {
        "measured": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        **device_facts(),
        "torch": torch.__version__ if torch else None,
        "seed": seed,
        "shapes": [],
    }
    for rows, cols in shapes:
        print(f"[{rows}, {cols}] ...", file=sys.stderr, flush=True)
        record["shapes"].append(measure_shape(rng, rows, cols, rungs))
    return record


def select_rungs(text):
    """[(number, name)] of the rungs named (or numbered) in `text`, or all of them."""
    every = list(enumerate([*gpu.SOFTMAX_KERNELS, CROSS_ENTROPY], start=1))
    if not text:
        return every
    wanted = text.split(",")
    return [(n, name) for n, name in every if name in wanted or str(n) in wanted]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", type=parse_shapes, default=SHAPES, help="ROWSxCOLS, commas")
    parser.add_argument("--rungs", default="", help="names or numbers, commas (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("runs/softmax-bench"),
                        help="folder for softmax-bench.json and .md")  # fmt: skip
    parser.add_argument("--write", action="store_true", help=f"write {RESULTS}.json and .md")
    parser.add_argument("--table", type=Path, help="print the Markdown of this JSON; time nothing")
    args = parser.parse_args(argv)
    if args.table:
        print(render(json.loads(args.table.read_text())), end="")
        return 0
    record = run(args.shapes, select_rungs(args.rungs), args.seed)
    if args.write:
        base = REPO_ROOT / RESULTS
    else:
        args.out.mkdir(parents=True, exist_ok=True)
        base = args.out / "softmax-bench"
    base.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")
    base.with_suffix(".md").write_text(render(record))
    print(render(record), end="")
    failed = [r for s in record["shapes"] for r in s["results"] if "FAILED" in r["check"]]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

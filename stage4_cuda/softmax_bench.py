"""Times the softmax ladder of the nvcc variant (csrc/softmax/) beside a device-to-device copy of
the same bytes and PyTorch, on one GPU, in one run.

    python -m stage4_cuda.softmax_bench            every rung at every shape, into --out
    python -m stage4_cuda.softmax_bench --write    ... into curriculum/results/softmax-cuda-h100.*
    python -m stage4_cuda.softmax_bench --rungs online,cross_entropy --shapes 4096x32768
    python -m stage4_cuda.softmax_bench --table curriculum/results/softmax-cuda-h100.json

Shapes: [4096, 32768] and [8192, 50257] (the targets of issue #12: a vocabulary of GPT-2's size),
and the curriculum's [64, 10] and [256, 10] for reference. For each shape, on fresh standard
normal inputs:

- **check**: each rung runs through the wrapper (`softmax(x, kernel=...)`,
  `cross_entropy_loss_and_grad`) with its outputs filled with NaN first (the grader's hook);
  every output must be finite, and the rows compared with a float64 reference (all of them at the
  small shapes, SAMPLE_ROWS random rows at the large ones; the loss against the float64 mean of
  every row) within the contract's GPU tolerance (grader/tolerance.py);
- **time**: the library's launcher on preallocated outputs, with CUDA events, the L2 flushed
  before each repeat, the median (grader/gpu_timing.py, as the grader times ops);
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

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path("curriculum/results/softmax-cuda-h100")  # .json and .md, from the repository root
SHAPES = ((4096, 32768), (8192, 50257), (64, 10), (256, 10))
TARGET_SHAPES = SHAPES[:2]
TARGET_SHARE = 0.90  # online and fused cross-entropy: >= 90% of the copy bandwidth
TARGET_RATIO = 1.2  # online >= 1.2x the three-pass rung
SAMPLE_ROWS = 256  # rows checked at a large shape (every output is checked to be finite)
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


def compare(op_name, received, expected, args):
    """(passed, worst error over the contract's GPU tolerance): NaN never passes."""
    from grader.ops import OPS
    from grader.tolerance import tolerance

    received, expected = np.asarray(received, np.float64), np.asarray(expected, np.float64)
    if not np.isfinite(received).all():
        return False, float("nan")
    tol = tolerance(OPS[op_name], 32, 64, args, gpu=True)
    worst = float((np.abs(received - expected) / (tol.atol + tol.rtol * np.abs(expected))).max())
    return worst <= 1.0, worst


# --- one shape ---------------------------------------------------------------------------------


class Shape:
    """Fresh inputs of one shape on the device, the rows checked, and the timing helpers."""

    def __init__(self, rng, rows, cols):
        from numba import cuda

        import stage4_cuda.nvcc_impl as gpu

        self.gpu, self.rows, self.cols = gpu, rows, cols
        self.host = rng.standard_normal((rows, cols), dtype=np.float32)
        self.labels_host = rng.integers(0, cols, rows, dtype=np.int64)
        self.x, self.labels = gpu.from_numpy(self.host), gpu.from_numpy(self.labels_host)
        self.y = cuda.device_array((rows, cols), np.float32)  # the timed launches' outputs
        self.sample = np.sort(rng.choice(rows, min(rows, SAMPLE_ROWS), replace=False))
        self.bytes = 4 * rows * cols

    def check_softmax(self, kernel):
        from grader.poison import poisoned_allocations

        with poisoned_allocations(self.gpu):
            y = self.gpu.to_numpy(self.gpu.softmax(self.x, kernel=kernel))
        if not np.isfinite(y).all():
            return False, float("nan")
        sample = self.host[self.sample]
        return compare("softmax", y[self.sample], softmax64(sample), {"x": sample})

    def check_cross_entropy(self):
        from grader.poison import poisoned_allocations

        with poisoned_allocations(self.gpu):
            loss, grad = self.gpu.cross_entropy_loss_and_grad(self.x, self.labels)
            loss, grad = float(loss), self.gpu.to_numpy(grad)
        if not np.isfinite(grad).all():
            return False, float("nan")
        args = {"logits": self.host, "labels": self.labels_host}
        passed, worst = compare("cross_entropy_loss", loss, cross_entropy64(**args), args)
        sample, labels = self.host[self.sample], self.labels_host[self.sample]
        expected = softmax64(sample)
        expected[np.arange(len(sample)), labels] -= 1.0
        sampled = {"logits": sample, "labels": labels}
        grad_passed, grad_worst = compare("cross_entropy_loss_backward", grad[self.sample],
                                          expected / self.rows, sampled)  # fmt: skip
        return passed and grad_passed, max(worst, grad_worst)

    def launcher(self, name):
        """The library call that rung `name` makes on preallocated outputs."""
        from numba import cuda

        from stage4_cuda.nvcc_impl._library import call

        rows, cols = self.rows, self.cols
        if name == CROSS_ENTROPY:
            terms, loss = cuda.device_array(rows, np.float32), cuda.device_array(1, np.float32)
            args = (self.x, self.labels, terms, loss, self.y, rows, cols)
            return lambda: call("s2c_cuda_cross_entropy_loss", *args)
        scratch = cuda.device_array(2 * rows, np.float32) if name == "three_pass" else None
        return lambda: call(f"s2c_cuda_softmax_{name}", self.x, self.y, scratch, rows, cols, 0)

    def loss_only(self):
        """Rung 5 asked for the loss alone: one read of the logits."""
        from numba import cuda

        from stage4_cuda.nvcc_impl._library import call

        terms, loss = cuda.device_array(self.rows, np.float32), cuda.device_array(1, np.float32)
        args = (self.x, self.labels, terms, loss, None, self.rows, self.cols)
        return lambda: call("s2c_cuda_cross_entropy_loss", *args)

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


def time_call(call):
    """Median seconds of `call()` (CUDA events, L2 flushed before each repeat)."""
    from grader.gpu_timing import l2_flush, measure_gpu

    return measure_gpu(call, flush=l2_flush())[0].median


def measure_shape(rng, rows, cols, rungs):
    """The record of one shape: the copy, each rung checked then timed, PyTorch."""
    shape = Shape(rng, rows, cols)
    copies = {name: time_call(call) for name, call in shape.copies().items()}
    copy_seconds = min(copies.values())
    copy_gbps = 2 * shape.bytes / copy_seconds / 1e9
    rows_out = []

    def row(label, seconds, moved, check):
        gbps = moved / seconds / 1e9
        rows_out.append({"name": label, "seconds": seconds, "gbps": gbps,
                         "share": gbps / copy_gbps, "check": check})  # fmt: skip

    for number, name in rungs:
        passed, worst = (
            shape.check_cross_entropy() if name == CROSS_ENTROPY else shape.check_softmax(name)
        )
        check = f"{'ok' if passed else 'FAILED'} ({worst:.2g})"
        row(f"{number} {name}", time_call(shape.launcher(name)), 2 * shape.bytes, check)
        if name == CROSS_ENTROPY:
            row(f"{number} {name}, loss alone", time_call(shape.loss_only()), shape.bytes, "-")
    for label, (call, moved) in shape.torch_calls().items():
        row(label, time_call(call), moved, "-")
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
    """Lines saying, for each target shape measured, whether issue #12's targets are met."""
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
        f"<!-- generated by `python -m stage4_cuda.softmax_bench --table {RESULTS}.json`; "
        "do not edit -->",
        "",
        f"Measured {record['measured']} on {record['device']} ({record['multiprocessors']} "
        f"multiprocessors, L2 {record['l2_bytes'] / 2**20:.0f} MiB), PyTorch "
        f"{record['torch'] or 'not installed'}. Timing: CUDA events, L2 flushed before each "
        "repeat, median (grader/gpu_timing.py). Check: outputs filled with NaN first, every one "
        "finite, rows against float64 within the contract's GPU tolerance (worst error / "
        "tolerance in brackets).",
        "",
        "Cost model: softmax and the fused cross-entropy (loss and gradient) read the input once "
        "and write an output of its size once, 2 R bytes (R = 4 rows cols); the copy moves the "
        "same 2 R (the faster of cuMemcpyDtoD and PyTorch's copy kernel). The loss alone reads R.",
        "",
        "Targets (issue #12):",
        "",
        *targets(record),
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
    from numba import cuda

    from grader.gpu_timing import l2_bytes

    device = cuda.get_current_device()
    name = device.name.decode() if isinstance(device.name, bytes) else device.name
    return {"device": name, "multiprocessors": device.MULTIPROCESSOR_COUNT,
            "l2_bytes": l2_bytes(device)}  # fmt: skip


def run(shapes, rungs, seed):
    from stage4_cuda.nvcc_impl import available

    ok, reason = available()
    if not ok:
        raise SystemExit(f"softmax_bench: the nvcc variant is unavailable: {reason}")
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
    from stage4_cuda.nvcc_impl import SOFTMAX_KERNELS

    every = list(enumerate([*SOFTMAX_KERNELS, CROSS_ENTROPY], start=1))
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

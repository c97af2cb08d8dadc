"""The conv2d ladder of the nvcc variant (stage4_cuda/csrc/conv/) beside cuDNN, at the conv layers
of LeNet-5 and the Fashion CNN (nn/models.py), batch 64 and 256, forward and backward.

    python -m bench.conv_ladder [--kernel NAME] [--batches 64,256] [--repeats 50]
                                     [--json PATH] [--write]

Each rung is first verified on fresh random inputs, its outputs pre-filled with NaN (the
grader's poisoned allocations), against PyTorch in float64 within the rung's error bound
(stage4_cuda/conv_accuracy.py); then it is timed by CUDA events over `--repeats` calls after a
warm-up, calling the library's launcher with its buffers allocated once (as a training step does;
the wrapper's checks and allocations are not timed). cuDNN runs through PyTorch on the same
tensors with TF32 off (torch.backends.cudnn.allow_tf32 = False): F.conv2d forward, and
torch.ops.aten.convolution_backward for dx, dw and db (dx skipped where the network skips it:
the first layers). GFLOP/s count 2 N K OH OW C R S per pass (forward; dx and dw each, backward).
`--write` writes curriculum/results/conv-cuda-h100.json and .md (the table, naming the GPU).
Needs a CUDA GPU, PyTorch with CUDA and the built library; the exit status is 1 when a rung
fails its check.
"""

import argparse
import json
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS = REPO_ROOT / "curriculum" / "results" / "conv-cuda-h100"

# (name, C, K, kernel size, stride, padding, input size, dx needed): nn/models.py's conv layers.
LAYERS = [
    ("lenet5 conv1", 1, 6, 5, 1, 2, 28, False),
    ("lenet5 conv2", 6, 16, 5, 1, 0, 14, True),
    ("fashion_cnn conv1", 1, 64, 3, 1, 0, 28, False),
    ("fashion_cnn conv2", 64, 128, 3, 1, 0, 13, True),
]


def cuda_time(function, repeats):
    """Median of 5 rounds of `repeats` calls, in microseconds per call, by CUDA events."""
    import torch

    for _ in range(3):
        function()
    torch.cuda.synchronize()
    rounds = []
    for _ in range(5):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repeats):
            function()
        stop.record()
        stop.synchronize()
        rounds.append(start.elapsed_time(stop) * 1000 / repeats)
    return sorted(rounds)[2]


def worst_excess(received, expected, bound):
    """The largest |received - expected| / bound (<= 1 passes; NaN or inf never does)."""
    import torch

    received = torch.as_tensor(received, device="cuda").double()
    if not torch.isfinite(received).all():
        return float("inf")
    return float(((received - expected).abs() / bound.clamp_min(1e-300)).max())


def layer_inputs(layer, batch, seed):
    """Random float32 x, w, b, dy on the GPU for a layer, and their float64 copies."""
    import torch

    _, c, k, size, stride, padding, hw, _ = layer
    generator = torch.Generator(device="cuda").manual_seed(seed)
    out = (hw + 2 * padding - size) // stride + 1

    def normal(*shape):
        return torch.randn(*shape, device="cuda", generator=generator)

    x, w = normal(batch, c, hw, hw), normal(k, c, size, size)
    b, dy = normal(k), normal(batch, k, out, out)
    return (x, w, b, dy), tuple(t.double() for t in (x, w, b, dy))


def bench_layer(layer, batch, kernels, repeats, seed):
    """The rows of one layer at one batch: each rung's forward, the backward, cuDNN's."""
    import torch
    import torch.nn.functional as F

    import stage4_cuda.nvcc_impl as gpu
    from grader.poison import poisoned_allocations
    from stage4_cuda import conv_accuracy
    from stage4_cuda.nvcc_impl import _library, conv
    from stage4_cuda.nvcc_impl._scratch import scratch_for

    name, c, k, size, stride, padding, hw, need_dx = layer
    (x, w, b, dy), (x64, w64, b64, dy64) = layer_inputs(layer, batch, seed)
    out = dy.shape[2]
    flops = 2 * batch * k * out * out * c * size * size
    expected = F.conv2d(x64, w64, b64, stride, padding)
    shape = conv._geometry(x.shape, k, size, size, stride, padding, out, out)
    y = torch.empty_like(dy)
    rows = []
    cudnn = cuda_time(lambda: F.conv2d(x, w, b, stride, padding), repeats)
    for kernel in kernels:
        if conv.kernel_that_runs(kernel, x.shape, w.shape, stride, padding) != kernel:
            continue
        with poisoned_allocations(gpu):
            received = gpu.conv2d_forward(x, w, b, stride, padding, kernel=kernel)
        bound = conv_accuracy.forward_bound(kernel, x64, w64, b64, stride, padding)
        excess = worst_excess(received, expected, bound)
        scratch = scratch_for("s2c_cuda_conv2d_scratch", shape,
                              gpu.CONV_KERNELS.index(kernel) + 1)
        def launch(launcher=f"s2c_cuda_conv2d_{kernel}", scratch=scratch):
            _library.call(launcher, x, w, b, y, scratch, shape)

        micros = cuda_time(launch, repeats)
        rows.append({"layer": name, "batch": batch, "pass": "forward", "kernel": kernel,
                     "us": micros, "cudnn_us": cudnn, "gflops": flops / micros / 1e3,
                     "error_over_bound": excess, "ok": excess <= 1})  # fmt: skip

    # the backward: dx (where the network needs it), dw and db
    dx_mask = [need_dx, True, True]
    expected_grads = torch.ops.aten.convolution_backward(
        dy64, x64, w64, [k], [stride] * 2, [padding] * 2, [1, 1], False, [0, 0], 1, dx_mask)
    with poisoned_allocations(gpu):
        received_grads = gpu.conv2d_backward(x, w, dy, stride, padding, need_dx=need_dx)
    winograd = conv.backward_winograd_blocks(x.shape, w.shape, stride, padding)
    bounds = conv_accuracy.backward_bound(x64, w64, dy64, stride, padding, winograd)
    pairs = zip(received_grads, expected_grads, bounds, strict=True)
    excess = max(worst_excess(got, want, bound) for got, want, bound in pairs if want is not None)
    dx = torch.empty_like(x) if need_dx else None
    dw, db = torch.empty_like(w), torch.empty_like(b)
    scratch = scratch_for("s2c_cuda_conv2d_scratch", shape, conv.BACKWARD_SCRATCH)
    micros = cuda_time(lambda: _library.call("s2c_cuda_conv2d_backward", x, w, dy, dx, dw, db,
                                             scratch, shape), repeats)  # fmt: skip
    cudnn = cuda_time(lambda: torch.ops.aten.convolution_backward(
        dy, x, w, [k], [stride] * 2, [padding] * 2, [1, 1], False, [0, 0], 1, dx_mask), repeats)
    passes = 2 if need_dx else 1
    backward = "backward" if need_dx else "backward (no dx)"
    rows.append({"layer": name, "batch": batch, "pass": backward,
                 "kernel": "backward", "us": micros, "cudnn_us": cudnn,
                 "gflops": passes * flops / micros / 1e3, "error_over_bound": excess,
                 "ok": excess <= 1})  # fmt: skip
    return rows


def table(record):
    """The Markdown table of a record."""
    lines = [
        f"# conv2d ladder (nvcc) beside cuDNN: {record['device']}",
        "",
        f"Written by `python -m bench.conv_ladder --write` ({record['torch']}, cuDNN "
        f"{record['cudnn']}, TF32 off). Times are CUDA-event medians per call after warm-up; "
        "ratio = cuDNN's time / ours (above 1: faster than cuDNN). Every rung was first checked "
        "against PyTorch in float64 within its error bound (stage4_cuda/conv_accuracy.py).",
        "",
        "| layer | batch | pass | kernel | us | GFLOP/s | cuDNN us | ratio | check |",
        "| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for row in record["rows"]:
        check = "ok" if row["ok"] else f"FAILED ({row['error_over_bound']:.3g} x bound)"
        lines.append(
            f"| {row['layer']} | {row['batch']} | {row['pass']} | {row['kernel']} | "
            f"{row['us']:.1f} | {row['gflops']:.0f} | {row['cudnn_us']:.1f} | "
            f"{row['cudnn_us'] / row['us']:.2f} | {check} |")  # fmt: skip
    lines += ["", f"`best` runs: {record['best_rule']}.", ""]
    lines += [f"- {line}" for line in record["verdicts"]]
    return "\n".join(lines) + "\n"


def verdicts(rows):
    """The target: the best forward within 2x of cuDNN on the Fashion CNN's layers."""
    lines = []
    for layer in [layer for layer in LAYERS if layer[0].startswith("fashion_cnn")]:
        for batch in sorted({row["batch"] for row in rows}):
            forwards = [row for row in rows if row["layer"] == layer[0] and row["batch"] == batch
                        and row["pass"] == "forward" and row["ok"]]  # fmt: skip
            if forwards:
                best = min(forwards, key=lambda row: row["us"])
                ratio = best["us"] / best["cudnn_us"]
                lines.append(f"{layer[0]}, batch {batch}: best forward ({best['kernel']}) "
                             f"{ratio:.2f}x cuDNN's time: "
                             f"{'within' if ratio <= 2 else 'NOT within'} 2x")  # fmt: skip
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.conv_ladder", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernel", action="append", help="a rung (repeatable; default: all)")
    parser.add_argument("--batches", default="64,256")
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the record here")
    parser.add_argument("--write", action="store_true", help=f"write {RESULTS}.json and .md")
    args = parser.parse_args(argv)

    import torch

    import stage4_cuda.nvcc_impl as gpu
    from stage4_cuda.nvcc_impl import conv

    unknown = [kernel for kernel in args.kernel or () if kernel not in gpu.CONV_KERNELS]
    if unknown:
        parser.error(f"--kernel {unknown[0]!r} is not a rung; the rungs are "
                     f"{', '.join(gpu.CONV_KERNELS)}")  # fmt: skip
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    ok, reason = gpu.available()
    if not ok:
        print(f"the nvcc variant is unavailable: {reason}", file=sys.stderr)
        return 1
    kernels = args.kernel or list(gpu.CONV_KERNELS)
    rows = []
    for batch in map(int, args.batches.split(",")):
        for layer in LAYERS:
            for row in bench_layer(layer, batch, kernels, args.repeats, args.seed):
                rows.append(row)
                print(f"{row['layer']:18} {row['batch']:4} {row['pass']:19} {row['kernel']:14} "
                      f"{row['us']:9.1f} us {row['gflops']:7.0f} GFLOP/s  cuDNN "
                      f"{row['cudnn_us']:8.1f} us  {'ok' if row['ok'] else 'FAILED'}",
                      flush=True)  # fmt: skip
    record = {"device": torch.cuda.get_device_name(), "torch": f"PyTorch {torch.__version__}",
              "cudnn": torch.backends.cudnn.version(), "best_rule": conv.best_rule(), "rows": rows,
              "verdicts": verdicts(rows)}  # fmt: skip
    print("\n".join(record["verdicts"]))
    text = json.dumps(record, indent=1)
    if args.json:
        args.json.write_text(text)
    if args.write:
        RESULTS.with_suffix(".json").write_text(text)
        RESULTS.with_suffix(".md").write_text(table(record))
    return 0 if all(row["ok"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

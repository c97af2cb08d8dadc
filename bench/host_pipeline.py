"""Batches from the host, overlapped with computation: pinned against pageable copies, and one
epoch of the Tiny-ImageNet CNN with and without the double-buffered pipeline (nn/host_pipeline.py).

    python -m bench.host_pipeline --output curriculum/results/host-pipeline-h200

Needs a GPU and the nvcc variant. Two measurements, every time from CUDA events:
- Bandwidth: host-to-device copies of 1 MB to 256 MB from ordinary (pageable) NumPy memory and
  from page-locked memory (cudaMallocHost), each on a stream of its own; GB/s of the best of
  `--repeats`.
- An epoch: the Tiny-ImageNet CNN (4.39M parameters) on synthetic 64x64x3 images (random pixels
  and labels: the time of a step does not depend on them), with its recipe's augmentation
  (shifts, flips). The pipeline sends each batch's uint8 pixels and its draws, and augments and
  normalizes it on the device, on the copy stream right after its copy (nn/host_pipeline.py; the
  record says where, `augmented_on`): a copy's time includes that kernel. Serial: each batch is
  readied, copied (and augmented) and waited for, then its step runs and is waited for; the copy
  and compute times are the sums of their events. Pipelined: the trainer's PipelinedStep, batch
  i + 1 readied and copied while batch i computes; overlapped time: from the first copy's start to
  the last step's end. overlap = max(copy, compute) / overlapped time (1.0: the shorter is wholly
  hidden; target >= 0.8). Also the epoch as HostStep takes it (the step every tier has: the batch
  augmented and normalized on the host, a pageable float32 copy on the kernels' stream, its result
  read back every step), timed on the host. A timeline of the pipelined epoch's first batches:
  OUTPUT.png.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from nn.backend import TierError, nvcc_tier
from nn.data import DataSet, Normalizer, Split
from nn.host_pipeline import HostPipeline
from nn.models import build_model
from nn.optimizers import make_optimizer
from nn.progress import Progress
from nn.recipes import recipe_for
from nn.report import machine
from nn.steps import HostStep, PipelinedStep

SIZES_MB = (1, 4, 16, 64, 256)
AUGMENTED_ON = {
    "device": "The pipeline sends each batch's uint8 pixels and its draws; a kernel on the copy "
    "stream shifts, flips and normalizes it on the device (the copy times include it).",
    "host": "The pipeline augments and normalizes each batch on the host and sends it as float32.",
}
TIMELINE_BATCHES = 8


def bandwidth(tier, megabytes, repeats):
    """{"pageable", "pinned": GB/s} of host-to-device copies of `megabytes` MB."""
    count = megabytes << 20
    device = tier.empty((count,), np.uint8)
    pinned = tier.pinned_empty((count,), np.uint8)
    pinned[:] = 1
    sources = {"pageable": np.ones(count, np.uint8), "pinned": pinned}
    stream, result = tier.Stream(), {}
    for kind, source in sources.items():
        best = float("inf")
        for _ in range(repeats + 1):  # the first copy warms up (page faults, the driver's pools)
            began = tier.Event(timing=True).record(stream)
            tier.upload(device, source, stream)
            ended = tier.Event(timing=True).record(stream)
            ended.synchronize()
            best = min(best, began.elapsed_ms(ended))
        result[kind] = count / (best * 1e-3) / 1e9
    return result


def synthetic_data(batches, batch_size, seed=0):
    """Tiny-ImageNet-shaped random images (uint8 [N, 3, 64, 64]) and labels of 200 classes."""
    rng = np.random.default_rng(seed)
    count = batches * batch_size
    images = rng.integers(0, 256, (count, 3, 64, 64), dtype=np.uint8)
    labels = rng.integers(0, 200, count).astype(np.int64)
    train = Split(images, labels)
    test = Split(images[:batch_size], labels[:batch_size])
    names = [f"class{number}" for number in range(200)]
    return DataSet("synthetic-tiny-imagenet", train, None, test, names, Normalizer.fit(images))


def parts(tier, data, recipe):
    """(model, optimizer) of the Tiny-ImageNet CNN on `tier`, from the recipe's seed."""
    model = build_model("tiny_imagenet_cnn", data.input_shape, data.num_classes).build(
        tier, recipe.seed
    )
    optimizer = make_optimizer(recipe.optimizer, tier, model.parameters(), recipe.weight_decay,
                               **recipe.optimizer_options())  # fmt: skip
    return model, optimizer


def epoch_order(data, recipe):
    return np.random.default_rng([recipe.seed, 0]).permutation(len(data.train))


def spans(timeline, kind):
    """Milliseconds of each `kind` entry of a pipeline's timeline."""
    return [start.elapsed_ms(end) for _, what, start, end in timeline if what == kind]


def serial_epoch(tier, data, recipe):
    """(copy ms, compute ms, host seconds, where the batches were augmented: "device" or "host")
    of an epoch where nothing overlaps."""
    model, optimizer = parts(tier, data, recipe)
    pipeline = HostPipeline(tier, data, model.loss, recipe, timed=True)
    step = PipelinedStep(model, optimizer, pipeline)
    pipeline.start_epoch(0, epoch_order(data, recipe))
    started = time.perf_counter()
    for index in range(pipeline.batches()):
        pipeline.prepare(index)
        pipeline.staged[index].copied.synchronize()
        inputs, targets, labels = pipeline.batch(index)
        began = pipeline.begin_step()
        step.device_step.on(inputs, targets, labels, 0.01)
        pipeline.release(index, began)
        tier.synchronize()
    seconds = time.perf_counter() - started
    where = "host" if pipeline.levels is None else "device"
    return (sum(spans(pipeline.timeline, "copy")), sum(spans(pipeline.timeline, "compute")),
            seconds, where)  # fmt: skip


def pipelined_epoch(tier, data, recipe):
    """(overlapped ms, host seconds, timeline rows) of an epoch through the pipeline."""
    model, optimizer = parts(tier, data, recipe)
    pipeline = HostPipeline(tier, data, model.loss, recipe, timed=True)
    step = PipelinedStep(model, optimizer, pipeline)
    order = epoch_order(data, recipe)
    step.start_epoch(0, order)
    progress = Progress()
    tier.synchronize()
    started = time.perf_counter()
    for index in range(pipeline.batches()):
        progress.batch = index
        step.run(order[index * recipe.batch_size :][: recipe.batch_size], progress, 0.01)
    tier.synchronize()
    seconds = time.perf_counter() - started
    first = pipeline.timeline[0][2]
    rows = [{"batch": batch, "kind": kind, "start_ms": first.elapsed_ms(start),
             "end_ms": first.elapsed_ms(end)}
            for batch, kind, start, end in pipeline.timeline]  # fmt: skip
    return max(row["end_ms"] for row in rows), seconds, rows


def host_step_epoch(tier, data, recipe):
    """Host seconds of an epoch of HostStep (pageable copies on the kernels' stream)."""
    model, optimizer = parts(tier, data, recipe)
    step = HostStep(model, optimizer, data, recipe)
    order = epoch_order(data, recipe)
    progress = Progress()
    tier.synchronize()
    started = time.perf_counter()
    for index in range(-(-len(order) // recipe.batch_size)):
        progress.batch = index
        step.run(order[index * recipe.batch_size :][: recipe.batch_size], progress, 0.01)
    tier.synchronize()
    return time.perf_counter() - started


def draw_timeline(rows, path, title, augmented_on):
    """Copies (with the augmentation, when on the device) and steps of the first batches as bars
    on two lanes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [row for row in rows if row["batch"] < TIMELINE_BATCHES]
    figure, axes = plt.subplots(figsize=(10, 2.6))
    lanes = {"copy": (1, "tab:orange"), "compute": (0, "tab:blue")}
    for row in shown:
        lane, colour = lanes[row["kind"]]
        axes.barh(lane, row["end_ms"] - row["start_ms"], left=row["start_ms"], color=colour,
                  edgecolor="black", height=0.6)  # fmt: skip
        axes.text((row["start_ms"] + row["end_ms"]) / 2, lane, str(row["batch"]), ha="center",
                  va="center", fontsize=8)  # fmt: skip
    copy = "copy + augment" if augmented_on == "device" else "copy"
    axes.set_yticks([0, 1], ["compute (default stream)", f"{copy} (copy stream)"])
    axes.set_xlabel("milliseconds since the first copy began (CUDA events)")
    axes.set_title(title)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.host_pipeline",
                                     description=__doc__.split("\n")[0])  # fmt: skip
    parser.add_argument("--sizes-mb", type=int, nargs="+", default=list(SIZES_MB))
    parser.add_argument("--repeats", type=int, default=5, help="copies per size (best counts)")
    parser.add_argument("--batches", type=int, default=40, help="batches in the epoch")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--output", type=Path, help="write OUTPUT.json, OUTPUT.md, OUTPUT.png")
    args = parser.parse_args(argv)
    try:
        tier = nvcc_tier("bench.host_pipeline")
    except TierError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    copies = []
    for megabytes in args.sizes_mb:
        rates = bandwidth(tier, megabytes, args.repeats)
        copies.append({"megabytes": megabytes, **rates})
        print(f"{megabytes} MB: pageable {rates['pageable']:.1f} GB/s, pinned "
              f"{rates['pinned']:.1f} GB/s", flush=True)  # fmt: skip
    recipe = recipe_for("tiny_imagenet_cnn", "tiny-imagenet").with_overrides(
        batch_size=args.batch_size, val_size=0
    )
    data = synthetic_data(args.batches, args.batch_size)
    pipelined_epoch(tier, data, recipe)  # warm-up: the kernels' first launches, the allocator
    copy_ms, compute_ms, serial_seconds, augmented_on = serial_epoch(tier, data, recipe)
    overlapped_ms, pipelined_seconds, rows = pipelined_epoch(tier, data, recipe)
    host_step_seconds = host_step_epoch(tier, data, recipe)
    overlap = max(copy_ms, compute_ms) / overlapped_ms
    epoch = {"images": len(data.train), "batch_size": args.batch_size,
             "augmentation": {"shift": recipe.shift, "flip": recipe.flip},
             "augmented_on": augmented_on,
             "copy_ms": copy_ms, "compute_ms": compute_ms, "overlapped_ms": overlapped_ms,
             "overlap": overlap, "serial_seconds": serial_seconds,
             "pipelined_seconds": pipelined_seconds,
             "host_step_seconds": host_step_seconds}  # fmt: skip
    print(f"epoch of {len(data.train)} synthetic images, augmented on the {augmented_on} by the "
          f"pipeline: copy {copy_ms:.1f} ms, compute "
          f"{compute_ms:.1f} ms, overlapped {overlapped_ms:.1f} ms: overlap {overlap:.2f}; host "
          f"seconds: serial {serial_seconds:.3f}, pipelined {pipelined_seconds:.3f}, HostStep "
          f"{host_step_seconds:.3f}", flush=True)  # fmt: skip
    record = {
        "command": "python -m bench.host_pipeline " + " ".join(sys.argv[1:] if argv is None
                                                                else argv),  # fmt: skip
        "data": "synthetic: random 64x64x3 uint8 images and labels of 200 classes (Tiny-ImageNet's "
        "shapes; the data set itself was not used)",
        "machine": machine(),
        "bandwidth_gb_per_s": copies,
        "epoch": epoch,
        "timeline": rows,
    }
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.with_suffix(".json").write_text(json.dumps(record, indent=2) + "\n")
        args.output.with_suffix(".md").write_text(markdown(record, args.output.name + ".png"))
        title = f"Tiny-ImageNet CNN, batch {args.batch_size}: overlap {overlap:.2f}"
        draw_timeline(rows, args.output.with_suffix(".png"), title, augmented_on)
    return 0


def markdown(record, picture):
    """The record's tables."""
    gpu = record["machine"].get("gpu") or "the GPU"
    epoch = record["epoch"]
    lines = [
        f"# Host-to-device copies and their overlap with training, on {gpu}",
        "",
        f"Command: `{record['command']}`. Times from CUDA events. Data: {record['data']}.",
        "",
        "| size MB | pageable GB/s | pinned GB/s | pinned / pageable |",
        "| ---: | ---: | ---: | ---: |",
    ]
    for row in record["bandwidth_gb_per_s"]:
        lines.append(f"| {row['megabytes']} | {row['pageable']:.1f} | {row['pinned']:.1f} | "
                     f"{row['pinned'] / row['pageable']:.2f} |")  # fmt: skip
    lines += [
        "",
        f"One epoch of the Tiny-ImageNet CNN: {epoch['images']} images in batches of "
        f"{epoch['batch_size']}, shifts of {epoch['augmentation']['shift']} pixels and flips. "
        f"{AUGMENTED_ON[epoch['augmented_on']]} HostStep augments and normalizes on the host.",
        "",
        "| copy ms (sum) | compute ms (sum) | overlapped ms | overlap (target >= 0.8) |",
        "| ---: | ---: | ---: | ---: |",
        f"| {epoch['copy_ms']:.1f} | {epoch['compute_ms']:.1f} | {epoch['overlapped_ms']:.1f} | "
        f"{epoch['overlap']:.2f} |",
        "",
        "| epoch, host seconds | serial (copy, then step) | pipelined | HostStep |",
        "| --- | ---: | ---: | ---: |",
        f"| | {epoch['serial_seconds']:.3f} | {epoch['pipelined_seconds']:.3f} | "
        f"{epoch['host_step_seconds']:.3f} |",
        "",
        f"![The first batches: copies on the copy stream, steps on the default stream]({picture})",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())

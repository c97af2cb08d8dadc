"""Data-parallel scaling: N-GPU throughput against N x the 1-GPU throughput, for the nvcc
variant's data-parallel step (nn/distributed/) and PyTorch's DistributedDataParallel, side by
side on the same model, global batch and GPUs.

    python -m bench.data_parallel --output curriculum/results/data-parallel-h200

Two models: the Tiny-ImageNet CNN (4.39M parameters, global batch 256) and the Fashion CNN (896,522
parameters, a large global batch, 1024), each on synthetic data of its shapes (random pixels and
labels: a step's time does not depend on them), held on the GPU, with SGD and momentum at a
constant learning rate, the Tiny-ImageNet CNN without dropout (a recorded step cannot follow its
seeds). The nvcc variant's steps are recorded (nn/steps/recorded.py, nn/distributed/recorded.py):
launched again without the Python between the kernels, which would otherwise bound a step's time on
each GPU however small its shard. Each configuration runs in fresh processes, one per GPU, started
and watched by nn/distributed/launch.py: one pass over the data warms up, then the median of five
timed passes is taken (host clock, each pass ending in a synchronization). The baseline is one GPU
without any communicator (nn's DeviceStep, PyTorch without DDP), a recorded step for the nvcc
variant; `nvcc x1` is the data-parallel step on one rank (NCCL with one rank: the cost of the
machinery alone). Scaling efficiency = N-GPU images/s / (N x baseline images/s); targets: >= 85% on
2 GPUs, >= 70% on 4. A configuration that needs more GPUs than the machine has is not run, and the
record says so.
"""

import argparse
import contextlib
import json
import os
import socket
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from nn.backend import TierError, load_tier, nvcc_tier
from nn.data import DataSet, Normalizer, Split
from nn.distributed import launch
from nn.distributed.step import shard
from nn.models import build_model
from nn.optimizers import make_optimizer
from nn.progress import Progress
from nn.recipes import Recipe
from nn.report import machine

MODELS = {"tiny_imagenet_cnn": ((3, 64, 64), 200, 256), "fashion_cnn": ((1, 28, 28), 10, 1024)}
# Dropout off: its mask's seed changes at every step, which a recorded step cannot follow.
OPTIONS = {"tiny_imagenet_cnn": {"dropout": 0.0}}
SIDES = ("nvcc", "torch")
TIMEOUT = 120.0  # seconds without a step before a run is stopped
TIMED_PASSES = 5


def synthetic(model_name, batches):
    """Random uint8 images and labels of the model's shapes: `batches` global batches."""
    shape, classes, batch = MODELS[model_name]
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (batches * batch, *shape), dtype=np.uint8)
    labels = rng.integers(0, classes, len(images)).astype(np.int64)
    train = Split(images, labels)
    names = [str(label) for label in range(classes)]
    return DataSet("synthetic", train, None, train, names, Normalizer.fit(images))


def bench_model(model_name, data):
    """The model of `model_name` for `data`'s shapes, with OPTIONS (not built)."""
    return build_model(model_name, data.input_shape, data.num_classes,
                       **OPTIONS.get(model_name, {}))  # fmt: skip


def recipe_for_bench(model_name):
    return Recipe(epochs=1, batch_size=MODELS[model_name][2], optimizer="momentum", lr=0.01,
                  schedule="constant", val_size=0)  # fmt: skip


def median_rate(one_pass, images):
    """Images per second of `one_pass` (which ends synchronized): the median of TIMED_PASSES
    passes after one that warms up (allocations, first launches, clocks)."""
    one_pass()
    seconds = []
    for _ in range(TIMED_PASSES):
        started = time.perf_counter()
        one_pass()
        seconds.append(time.perf_counter() - started)
    return images / float(np.median(seconds))


def nvcc_worker(model_name, batches, data_parallel):
    """Images per second of the nvcc variant on this process's GPU (the whole run's, counted on
    rank 0), through the data-parallel step when `data_parallel`, else DeviceStep."""
    from nn.device_data import device_data
    from nn.steps import make_step

    tier = nvcc_tier("bench.data_parallel")
    data, recipe = synthetic(model_name, batches), recipe_for_bench(model_name)
    model = bench_model(model_name, data).build(tier, recipe.seed)
    optimizer = make_optimizer(recipe.optimizer, tier, model.parameters(), recipe.weight_decay,
                               **recipe.optimizer_options())  # fmt: skip
    communicator = None
    if data_parallel:
        from nn.distributed.communicator import NcclCommunicator

        communicator = NcclCommunicator(tier, *launch.this_rank())
    on_device = device_data(tier, data, model.loss, recipe)
    assert on_device is not None, "the synthetic set is meant to fit on the device"
    step = make_step(model, optimizer, data, recipe, communicator=communicator)
    order = np.random.default_rng([recipe.seed, 0]).permutation(len(data.train))

    def one_pass():
        step.start_epoch(0, order)
        progress = Progress()
        for index in range(batches):
            progress.batch = index
            step.run(order[index * recipe.batch_size :][: recipe.batch_size], progress, recipe.lr)
            launch.beat()
        tier.synchronize()

    with communicator or contextlib.nullcontext():  # freed on every rank before exit
        return median_rate(one_pass, len(order))


def torch_worker(model_name, batches, data_parallel):
    """Images per second of PyTorch on this process's GPU, with DistributedDataParallel when
    `data_parallel` (the process group from the environment: RANK, WORLD_SIZE, MASTER_ADDR)."""
    import torch
    import torch.distributed as dist

    from bench.epoch import to_torch

    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    data, recipe = synthetic(model_name, batches), recipe_for_bench(model_name)
    model = bench_model(model_name, data)
    net = to_torch(model.build(load_tier(2), recipe.seed), torch).to("cuda")
    rank, size = 0, 1
    if data_parallel:
        dist.init_process_group("nccl", init_method="env://")
        rank, size = dist.get_rank(), dist.get_world_size()
        net = torch.nn.parallel.DistributedDataParallel(net, device_ids=[0])
    optimizer = torch.optim.SGD(net.parameters(), lr=recipe.lr, momentum=recipe.momentum)
    inputs = torch.from_numpy(data.normalizer(data.train.inputs)).to("cuda")
    labels = torch.from_numpy(data.train.labels).to("cuda")
    order = np.random.default_rng([recipe.seed, 0]).permutation(len(data.train))
    order = torch.from_numpy(order).to("cuda")

    def one_pass():
        for index in range(batches):
            chosen = order[index * recipe.batch_size :][: recipe.batch_size]
            start, stop = shard(len(chosen), rank, size)
            mine = chosen[start:stop]
            loss = torch.nn.functional.cross_entropy(net(inputs[mine]), labels[mine])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            launch.beat()
        torch.cuda.synchronize()

    rate = median_rate(one_pass, len(order))
    if data_parallel:
        dist.destroy_process_group()
    return rate


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def measure(side, model_name, gpus, batches, data_parallel):
    """Images per second of one configuration, run in `gpus` fresh processes; None if it failed
    (the launcher said why on stderr)."""
    with tempfile.TemporaryDirectory(prefix="s2c-bench-dp-") as folder:
        result = Path(folder) / "result.json"
        command = [sys.executable, "-m", "bench.data_parallel", "--worker", side, "--models",
                   model_name, "--batches", str(batches), "--result", str(result)]  # fmt: skip
        if data_parallel:
            command.append("--data-parallel")
        extra = {}
        if data_parallel and side == "nvcc":
            from nn.distributed import nccl

            extra[launch.NCCL_ID] = nccl.unique_id().hex()
        if data_parallel and side == "torch":
            extra |= {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
        environments = launch.rank_environments(gpus, folder, extra)
        for rank, environment in enumerate(environments):
            environment |= {"RANK": str(rank), "WORLD_SIZE": str(gpus), "LOCAL_RANK": "0"}
            if not data_parallel:  # the baseline: a plain process, not a rank
                for name in (launch.RANK, launch.WORLD_SIZE):
                    environment.pop(name)
        if launch.supervise([command] * gpus, environments, TIMEOUT) != 0:
            return None
        return json.loads(result.read_text())["images_per_second"]


def worker(args):
    """One process of a configuration: rank 0 (or the only process) writes the result."""
    run = nvcc_worker if args.worker == "nvcc" else torch_worker
    rate = run(args.models[0], args.batches, args.data_parallel)
    if int(os.environ.get("RANK", "0")) == 0:
        Path(args.result).write_text(json.dumps({"images_per_second": rate}))
    return 0


def sides_available():
    """The sides this machine can run, and why not for the others."""
    sides, missing = ["nvcc"], {}
    try:
        import torch

        if not torch.cuda.is_available():
            missing["torch"] = "PyTorch sees no CUDA device"
        else:
            sides.append("torch")
    except ImportError:
        missing["torch"] = "PyTorch is not installed (pip install -r requirements-oracle.txt)"
    return sides, missing


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.data_parallel",
                                     description=__doc__.split("\n")[0])  # fmt: skip
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--gpus", type=int, nargs="+", default=[2, 4],
                        help="the GPU counts to scale to (the 1-GPU baseline always runs)")
    parser.add_argument("--batches", type=int, default=20, help="global batches per timed pass")
    parser.add_argument("--output", type=Path, help="write OUTPUT.json, OUTPUT.md and, when "
                        "anything was measured, OUTPUT.png")
    parser.add_argument("--worker", choices=SIDES, help=argparse.SUPPRESS)
    parser.add_argument("--data-parallel", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)
    try:
        nvcc_tier("bench.data_parallel")
    except TierError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    available = launch.gpu_count()
    sides, missing = sides_available()
    rows, not_run = [], []
    for model_name in args.models:
        batch = MODELS[model_name][2]
        baseline = {side: measure(side, model_name, 1, args.batches, False) for side in sides}
        configurations = [(side, 1) for side in sides] + [
            (side, gpus) for gpus in args.gpus for side in sides]  # fmt: skip
        for side, gpus in configurations:
            if gpus > available:
                not_run.append(f"{model_name}, {side} on {gpus} GPUs: this machine has "
                               f"{available} GPU{'' if available == 1 else 's'}")  # fmt: skip
                continue
            rate = measure(side, model_name, gpus, args.batches, True)
            base = baseline[side]
            row = {"model": model_name, "global_batch": batch, "side": side, "gpus": gpus,
                   "images_per_second": rate, "baseline_images_per_second": base,
                   "efficiency": rate / (gpus * base) if rate and base else None}  # fmt: skip
            rows.append(row)
            efficiency = f"{row['efficiency']:.1%}" if row["efficiency"] else "failed"
            print(f"{model_name} (batch {batch}), {side} x{gpus}: {rate or 0:.0f} img/s, 1 GPU "
                  f"{base or 0:.0f} img/s: efficiency {efficiency}", flush=True)  # fmt: skip
    not_run += [f"every {side} configuration: {why}" for side, why in missing.items()]
    for line in not_run:
        print(f"not run: {line}")
    record = {
        "command": "python -m bench.data_parallel " + " ".join(sys.argv[1:] if argv is None
                                                                else argv),  # fmt: skip
        "data": "synthetic: random images and labels of each model's shapes, on the GPU",
        "optimizer": "SGD, momentum 0.9, lr 0.01 constant",
        "machine": machine(),
        "gpus_available": available,
        "results": rows,
        "not_run": not_run,
    }
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.with_suffix(".json").write_text(json.dumps(record, indent=2) + "\n")
        args.output.with_suffix(".md").write_text(markdown(record))
        draw_scaling(record, args.output.with_suffix(".png"))
    return 0


def draw_scaling(record, path):
    """Images/s against GPUs, one panel per model (their rates differ tenfold), a line per side
    beside its perfect scaling (dotted)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rates = [row for row in record["results"] if row["images_per_second"]]
    measured = [name for name in MODELS if any(row["model"] == name for row in rates)]
    if not measured:
        return  # every configuration failed: the record says so, and there is nothing to draw
    figure, panels = plt.subplots(1, len(measured), figsize=(5 * len(measured), 4), squeeze=False)
    panels = panels[0]
    for axes, model_name in zip(panels, measured, strict=True):
        for side, marker in zip(SIDES, ("o", "s"), strict=True):
            rows = [row for row in rates if row["model"] == model_name and row["side"] == side]
            if not rows:
                continue
            gpus = [row["gpus"] for row in rows]
            line = axes.plot(gpus, [row["images_per_second"] for row in rows], marker=marker,
                             label=side)[0]  # fmt: skip
            base = rows[0]["baseline_images_per_second"]
            axes.plot(gpus, [count * base for count in gpus], ":", color=line.get_color())
            axes.set_xticks(sorted(set(gpus)))
        axes.set_ylim(bottom=0)
        axes.set_xlabel("GPUs")
        axes.set_title(f"{model_name} (global batch {MODELS[model_name][2]})")
        axes.legend(fontsize=8)
    panels[0].set_ylabel("images per second (dotted: N x one GPU)")
    figure.suptitle(f"Data-parallel scaling, {record['machine'].get('gpu') or 'GPUs'}")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def markdown(record):
    gpu = record["machine"].get("gpu") or "the GPUs"
    lines = [
        f"# Data-parallel scaling on {gpu} ({record['gpus_available']} available)",
        "",
        f"Command: `{record['command']}`. Data: {record['data']}. {record['optimizer']}. "
        "Efficiency = N-GPU images/s / (N x 1-GPU images/s without a communicator); targets: "
        ">= 85% on 2 GPUs, >= 70% on 4.",
        "",
        "| model | global batch | side | GPUs | images/s | 1-GPU images/s | efficiency |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for row in record["results"]:
        rate = f"{row['images_per_second']:.0f}" if row["images_per_second"] else "failed"
        base = row["baseline_images_per_second"]
        efficiency = f"{row['efficiency']:.1%}" if row["efficiency"] else "-"
        lines.append(f"| {row['model']} | {row['global_batch']} | {row['side']} | {row['gpus']} "
                     f"| {rate} | {base or 0:.0f} | {efficiency} |")  # fmt: skip
    if record["not_run"]:
        lines += ["", "Not run:", ""] + [f"- {line}" for line in record["not_run"]]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())

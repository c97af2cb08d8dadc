"""Time one training epoch on one or more tiers against PyTorch, in the same run.

    python -m bench.epoch --stage 2 --models mlp lenet5 --output curriculum/results/nn-bench-stage2
    python -m bench.epoch --stage 2 3 --models lenet5 fashion_cnn --output ...  (tiers side by side)
    python -m bench.epoch --stage 2 3 --impl workspace   (stage 3 from workspace/, 2 the reference)

Every side trains the same model (PyTorch's copy is translated layer by layer from nn's, with the
same initial weights) on the same mini-batches of MNIST with the same batch size and optimizer
(Adam; no augmentation, so only the training step is measured), with the same number of threads.
When the benchmarked tier (the last --stage) runs on a GPU, PyTorch runs eagerly on that GPU with
the training set on the device, as the tier's trainer keeps it (nn/device_data.py).
Each side runs `--repeats` epochs, the sides taking turns, and keeps its fastest: on a shared
machine the fastest epoch is the one least disturbed by other work. Needs PyTorch, an optional
extra (`pip install -r requirements-oracle.txt`).
"""

import argparse
import gc
import itertools
import json
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from datasets import DatasetError
from nn.backend import STAGES, TierError, load_tier, refuse_simulated, runs_on_gpu
from nn.data import load_data
from nn.exits import DATA
from nn.layers import (
    GELU,
    BatchNorm,
    Conv2d,
    Dropout,
    Flatten,
    LayerNorm,
    Linear,
    MaxPool2d,
    MeanOverTokens,
    MultiHeadAttention,
    PatchEmbedding,
    PositionEmbedding,
    ReLU,
    Residual,
    Sequential,
    Tokenwise,
)
from nn.layers.fusion import MaxPoolReLU
from nn.models import build_model
from nn.recipes import Recipe
from nn.report import machine
from nn.trainer import Trainer

TORCH_NAMES = {"gamma": "weight", "beta": "bias"}  # the norms' parameters as PyTorch names them


def to_torch(model, torch):
    """A torch.nn.Module with the same layers and weights as `model` (built on its tier)."""
    return torch_module(model.net, model.tier, torch)


def torch_module(layer, tier, torch):
    """PyTorch's module for nn layer `layer` (and the layers inside it), with a copy of its
    weights from `tier`."""
    from bench import torch_layers  # PyTorch's own modules: imported only where PyTorch is

    inner = {name: torch_module(child, tier, torch) for name, child in layer.children().items()}
    if isinstance(layer, Sequential):
        module = torch.nn.Sequential(*inner.values())
    elif isinstance(layer, Residual):
        module = torch_layers.Residual(inner["body"], inner.get("shortcut"))
    elif isinstance(layer, Tokenwise):  # torch.nn.Linear maps the last dimension already
        module = inner["layer"]
    elif isinstance(layer, PatchEmbedding):
        module = torch_layers.PatchEmbedding(inner["conv"])
    elif isinstance(layer, MultiHeadAttention):
        module = torch_layers.MultiHeadAttention(*inner.values(), layer.heads, layer.causal)
    elif isinstance(layer, PositionEmbedding):
        module = torch_layers.PositionEmbedding(layer.shape)
    elif isinstance(layer, MeanOverTokens):
        module = torch_layers.MeanOverTokens()
    elif isinstance(layer, Linear):
        module = torch.nn.Linear(layer.in_features, layer.out_features)
    elif isinstance(layer, Conv2d):
        module = torch.nn.Conv2d(
            layer.in_channels, layer.out_channels, layer.kernel_size, layer.stride,
            layer.padding,
        )
    elif isinstance(layer, MaxPoolReLU):  # fused at build time where the tier can
        module = torch.nn.Sequential(
            torch.nn.MaxPool2d(layer.kernel_size, layer.stride), torch.nn.ReLU()
        )
    elif isinstance(layer, MaxPool2d):
        module = torch.nn.MaxPool2d(layer.kernel_size, layer.stride)
    elif isinstance(layer, ReLU):
        module = torch.nn.ReLU()
    elif isinstance(layer, GELU):
        module = torch.nn.GELU(approximate=layer.approximate)
    elif isinstance(layer, Flatten):
        module = torch.nn.Flatten()
    elif isinstance(layer, BatchNorm):  # over channels (images) or features (vectors)
        kind = torch.nn.BatchNorm2d if len(layer.output_shape) == 3 else torch.nn.BatchNorm1d
        module = kind(layer.num_features, eps=layer.eps, momentum=layer.momentum)
    elif isinstance(layer, LayerNorm):
        module = torch.nn.LayerNorm(layer.dim, eps=layer.eps)
    elif isinstance(layer, Dropout):
        module = torch.nn.Dropout(layer.p)
    else:
        raise ValueError(f"to_torch: no translation for {layer.describe()}")
    for name, param in layer.params.items():
        value = torch.from_numpy(np.array(tier.to_numpy(param.value)))
        getattr(module, TORCH_NAMES.get(name, name)).data.copy_(value)
    return module


def torch_optimizer(torch, net, recipe):
    """PyTorch's optimizer for `recipe`: Adam, or SGD with momentum (recipe.optimizer 'adam' or
    'momentum')."""
    if recipe.optimizer == "momentum":
        return torch.optim.SGD(net.parameters(), lr=recipe.lr, momentum=recipe.momentum)
    if recipe.optimizer == "adam":
        return torch.optim.Adam(net.parameters(), lr=recipe.lr)
    raise ValueError(f"no PyTorch translation of optimizer {recipe.optimizer!r}")


@contextmanager
def collector_paused():
    """Python's garbage collector paused meanwhile, as timeit pauses it, after a full collection
    (every side's timed epoch runs in one): a collection that some allocation happens to trigger
    would otherwise land in one side's epoch and not another's. The collection also frees the
    last side's trainer, which its recordings hold in a reference cycle, so that its device
    memory is back in the tier's caching allocator (runtime/allocator.py), as a PyTorch model's
    memory is in PyTorch's as soon as it is dropped."""
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def torch_epoch(torch, net, data, recipe, device="cpu"):
    """Seconds for one epoch of `net` on the batches the nn trainer uses (same order), on
    `device`; on a GPU the training set is uploaded first, outside the timed part."""
    net = net.to(device)
    optimizer = torch_optimizer(torch, net, recipe)
    order = np.random.default_rng([recipe.seed, 0]).permutation(len(data.train))
    inputs = torch.from_numpy(data.normalizer(data.train.inputs)).to(device)
    labels = torch.from_numpy(data.train.labels.astype(np.int64)).to(device)
    order = torch.from_numpy(order).to(device)
    synchronize = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    synchronize()
    with collector_paused():
        started = time.perf_counter()
        for start in range(0, len(order), recipe.batch_size):
            chosen = order[start:start + recipe.batch_size]
            loss = torch.nn.functional.cross_entropy(net(inputs[chosen]), labels[chosen])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        synchronize()
        return time.perf_counter() - started


def tier_epoch(model, data, recipe, untimed_first=False, **steps):
    """Seconds for one epoch of the nn trainer on the model's tier (the training steps only);
    `steps`: the Trainer's `recorded` and `graph`. With `untimed_first`, the epoch is run once
    before it is timed: its first steps record (and capture) the step of each batch size there."""
    trainer = Trainer(model, data, recipe, run_dir="/nonexistent", progress_bar=False, **steps)
    if untimed_first:
        trainer.train_epoch()
        trainer.progress.batch = 0  # the same epoch again, replaying what it captured
    model.tier.synchronize()
    with collector_paused():
        started = time.perf_counter()
        trainer.train_epoch()
        model.tier.synchronize()
        return time.perf_counter() - started


SIMULATED_INSTEAD = ("Time the CPU tiers' epochs here (`make bench STAGE=3`), and stage 4's on a "
                     "machine with an NVIDIA GPU.")


def load_tiers(stages, impl=None):
    """{stage: tier}: the benchmarked tier (the last stage) from folder `impl` when given (the
    rule of `make bench`), the stages before it the repository's, to compare with."""
    return {stage: load_tier(stage, impl if stage == stages[-1] else None) for stage in stages}


def time_sides(torch, name, tiers, data, recipe, args, device):
    """([PyTorch's epoch seconds], {stage: [its epoch seconds]}) of model `name`, the sides taking
    turns `args.repeats` times. Each tier's epoch runs before PyTorch's, so that a tier that stops
    at a stub (NotImplementedError) stops the model before any epoch of PyTorch is spent on it."""
    torch_times, tier_times = [], {stage: [] for stage in tiers}
    for _ in range(args.repeats):
        net = None
        for stage, tier in tiers.items():
            model = build_model(name, data.input_shape, data.num_classes)
            model = model.build(tier, recipe.seed)
            if stage == args.stage[0]:
                net = to_torch(model, torch)  # the baseline's initial weights, before it trains
            tier_times[stage].append(tier_epoch(model, data, recipe))
        torch_times.append(torch_epoch(torch, net, data, recipe, device))
    return torch_times, tier_times


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.epoch",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--stage", type=int, nargs="+", default=[2], choices=STAGES,
                        help="the tiers to time (several: side by side, the first is the baseline)")
    parser.add_argument("--impl", metavar="DIR",
                        help="take the benchmarked tier (the last --stage) from DIR, e.g. your "
                        "workspace; the stages before it, for comparison, are the repository's")
    parser.add_argument("--models", nargs="+", default=["mlp", "lenet5"])
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--data-dir")
    parser.add_argument("--threads", type=int, nargs="+", default=[2],
                        help="thread counts to measure, the same for every side")
    parser.add_argument("--repeats", type=int, default=2, help="epochs per side (fastest counts)")
    parser.add_argument("--output", type=Path, help="write OUTPUT.json and OUTPUT.md")
    args = parser.parse_args(argv)
    try:
        refuse_simulated(args.stage[-1], None, "bench.epoch", SIMULATED_INSTEAD)
    except TierError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:
        print("error: bench.epoch compares with PyTorch: pip install -r requirements-oracle.txt",
              file=sys.stderr)
        return 2
    recipe = Recipe(epochs=1, batch_size=args.batch_size, optimizer="adam", lr=1e-3,
                    schedule="constant")
    try:
        data = load_data("mnist", args.data_dir, recipe.val_size)
    except DatasetError as error:  # not fetched: the error says how, in one line
        print(f"error: bench.epoch: {error}", file=sys.stderr)
        return DATA
    tiers = load_tiers(args.stage, args.impl)
    baseline = args.stage[0]
    # PyTorch runs where the benchmarked tier runs: on the GPU for stage 4.
    device = "cuda" if runs_on_gpu(args.stage[-1]) else "cpu"
    if device == "cuda":
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    for threads, name in itertools.product(args.threads, args.models):
        torch.set_num_threads(threads)
        threadpool_limits(threads)  # BLAS and OpenMP (stage 3's) pools alike
        try:
            torch_times, tier_times = time_sides(torch, name, tiers, data, recipe, args, device)
        except NotImplementedError as error:  # a workspace written up to an earlier week
            print(f"{name}, {threads} thread(s): not benched, not written yet: {error}", flush=True)
            continue
        torch_seconds = min(torch_times)
        for stage, times in tier_times.items():
            row = {
                "model": name,
                "stage": stage,
                "tier": tiers[stage].NAME,
                "threads": threads,
                "images": len(data.train),
                "batch_size": recipe.batch_size,
                "optimizer": "adam",
                "tier_seconds": min(times),
                "torch_seconds": torch_seconds,
                "tier_seconds_all": times,
                "torch_seconds_all": torch_times,
                "ratio": min(times) / torch_seconds,
                "ratio_to_baseline": min(times) / min(tier_times[baseline]),
            }
            rows.append(row)
            print(f"{name}, {threads} thread(s): stage {stage} {row['tier_seconds']:.1f} s, "
                  f"PyTorch {torch_seconds:.1f} s per epoch -> ratio {row['ratio']:.2f}",
                  flush=True)
    if args.output:
        record = {
            "stages": args.stage,
            "tiers": [tier.NAME for tier in tiers.values()],
            "command": "python -m bench.epoch " + " ".join(sys.argv[1:] if argv is None else argv),
            "torch": torch.__version__,
            "torch_device": device,
            "repeats": args.repeats,
            "machine": machine(),
            "results": rows,
        }
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.with_suffix(".json").write_text(json.dumps(record, indent=2) + "\n")
        args.output.with_suffix(".md").write_text(_markdown(record))
    return 0


def _device(record):
    """Where PyTorch ran: 'the CPU', or the GPU by name."""
    if record.get("torch_device", "cpu") == "cpu":
        return "the CPU"
    return record["machine"].get("gpu") or "the GPU"


def _markdown(record):
    stages = record["stages"]
    pairs = zip(stages, record["tiers"], strict=True)
    tiers = ", ".join(f"stage {stage} ({tier})" for stage, tier in pairs)
    lines = [
        f"# One training epoch: {tiers} vs PyTorch {record['torch']} on {_device(record)}",
        "",
        f"Command: `{record['command']}`. Machine: {record['machine']['processor']}, "
        f"{record['machine']['cpu_count']} CPUs. Adam, MNIST training split, no augmentation. "
        "Every side uses the same number of threads; each keeps the fastest of "
        f"{record['repeats']} epoch(s). Ratio: stage seconds / PyTorch seconds.",
        "",
    ]
    several = len(stages) > 1
    header = (
        "| model | threads | stage | images | batch | stage s/epoch | PyTorch s/epoch | ratio |"
    )
    rule = "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    if several:
        header += f" time / stage {stages[0]}'s |"
        rule += " ---: |"
    lines += [header, rule]
    for row in record["results"]:
        line = (
            f"| {row['model']} | {row['threads']} | {row['stage']} | {row['images']} | "
            f"{row['batch_size']} | {row['tier_seconds']:.1f} | {row['torch_seconds']:.1f} | "
            f"{row['ratio']:.2f} |"
        )
        if several:
            line += f" {row['ratio_to_baseline']:.2f} |"
        lines.append(line)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())

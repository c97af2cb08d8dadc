"""The race against PyTorch on one GPU: one training epoch of each model, op by op and as CUDA
graphs, on stage 4's nvcc variant and on PyTorch, side by side in one run.

    python -m bench.race --output curriculum/results/race-h100      (make race)

Every side trains the same model (PyTorch's copy translated layer by layer from nn's, with the
same initial weights) on the same batches of its data set's 60,000 training images, held on the
GPU, with SGD and momentum 0.9 at a constant learning rate, TF32 off. Four sides:
- PyTorch eager: the usual loop (gather the batch, forward, loss, backward, step).
- PyTorch graph: the whole step captured once with torch.cuda.graph and replayed (the batch's
  indices copied into the graph's input first); the warm-up and capture are not timed.
- nvcc recorded: nn's trainer on the nvcc variant, each step launching the first step's
  recording from the host (nn/steps/recorded.py); the recording is inside the timed epoch.
- nvcc graph: the same recording captured as a CUDA graph (`nn.train --graph`); as for PyTorch's
  graph, recording and capture are not timed: they happen in a first, untimed run of the epoch.
Every timed epoch runs with Python's garbage collector paused after a full collection, as timeit
times (bench.epoch.collector_paused). Each side runs `--repeats` epochs and keeps its fastest. The
targets: nvcc recorded <= 0.5x PyTorch eager, nvcc graph <= 1.0x PyTorch graph.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from bench.epoch import collector_paused, tier_epoch, to_torch, torch_epoch, torch_optimizer
from nn.backend import TierError, nvcc_tier
from nn.data import load_data
from nn.models import build_model
from nn.recipes import Recipe
from nn.report import machine

DATA = {"lenet5": "mnist", "fashion_cnn": "fashion-mnist", "vit": "mnist"}
SIDES = ("torch_eager", "torch_graph", "nvcc_recorded", "nvcc_graph")


def torch_graph_epoch(torch, net, data, recipe):
    """Seconds for one epoch of `net` on the GPU, each step a replay of a captured CUDA graph
    (one graph per batch size: the last batch may be smaller)."""
    net = net.to("cuda")
    optimizer = torch_optimizer(torch, net, recipe)
    order = np.random.default_rng([recipe.seed, 0]).permutation(len(data.train))
    inputs = torch.from_numpy(data.normalizer(data.train.inputs)).to("cuda")
    labels = torch.from_numpy(data.train.labels.astype(np.int64)).to("cuda")
    order = torch.from_numpy(order).to("cuda")
    graphs = {}  # batch size -> (graph, the index buffer it reads)

    def step(chosen):
        loss = torch.nn.functional.cross_entropy(net(inputs[chosen]), labels[chosen])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    for size in sorted({recipe.batch_size, len(order) % recipe.batch_size} - {0}):
        chosen = order[:size].clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # PyTorch's recipe: warm up on a side stream
            for _ in range(3):
                step(chosen)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step(chosen)
        graphs[size] = graph, chosen
    torch.cuda.synchronize()
    with collector_paused():
        started = time.perf_counter()
        for start in range(0, len(order), recipe.batch_size):
            batch = order[start:start + recipe.batch_size]
            graph, chosen = graphs[len(batch)]
            chosen.copy_(batch)
            graph.replay()
        torch.cuda.synchronize()
        return time.perf_counter() - started


def race(torch, tier, name, batch_size, repeats, data_dir):
    """{side: [seconds per epoch]} for model `name` at `batch_size`."""
    recipe = Recipe(epochs=1, batch_size=batch_size, optimizer="momentum", lr=0.01,
                    momentum=0.9, schedule="constant", val_size=0)  # fmt: skip
    data = load_data(DATA[name], data_dir, recipe.val_size)
    times = {side: [] for side in SIDES}
    for _ in range(repeats):
        for side in SIDES:
            model = build_model(name, data.input_shape, data.num_classes).build(tier, recipe.seed)
            if side.startswith("torch"):
                net = to_torch(model, torch)
                if side == "torch_eager":
                    times[side].append(torch_epoch(torch, net, data, recipe, device="cuda"))
                else:
                    times[side].append(torch_graph_epoch(torch, net, data, recipe))
            else:
                graph = side == "nvcc_graph"
                epoch = tier_epoch(model, data, recipe, untimed_first=graph, graph=graph)
                times[side].append(epoch)
    return len(data.train), times


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.race",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=list(DATA), choices=list(DATA))
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--repeats", type=int, default=2, help="epochs per side (fastest counts)")
    parser.add_argument("--data-dir")
    parser.add_argument("--output", type=Path, help="write OUTPUT.json and OUTPUT.md")
    args = parser.parse_args(argv)
    try:  # the GPU first: without one, installing PyTorch would not help
        tier = nvcc_tier("the race")
    except TierError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:
        print("error: the race needs PyTorch with CUDA: pip install torch", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("error: the race needs PyTorch built with CUDA (it sees no CUDA device)",
              file=sys.stderr)
        return 2
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    for name in args.models:
        for batch_size in args.batch_sizes:
            images, times = race(torch, tier, name, batch_size, args.repeats, args.data_dir)
            best = {side: min(seconds) for side, seconds in times.items()}
            row = {"model": name, "data": DATA[name], "images": images, "batch_size": batch_size,
                   "seconds": best, "seconds_all": times,
                   "recorded_over_eager": best["nvcc_recorded"] / best["torch_eager"],
                   "graph_over_graph": best["nvcc_graph"] / best["torch_graph"]}  # fmt: skip
            rows.append(row)
            print(f"{name}, batch {batch_size}: " + ", ".join(
                f"{side} {seconds:.3f} s" for side, seconds in best.items()) +
                f" | recorded/eager {row['recorded_over_eager']:.2f}, graph/graph "
                f"{row['graph_over_graph']:.2f}", flush=True)  # fmt: skip
    record = {
        "command": "python -m bench.race " + " ".join(sys.argv[1:] if argv is None else argv),
        "torch": torch.__version__,
        "repeats": args.repeats,
        "machine": machine(),
        "optimizer": "SGD, momentum 0.9, lr 0.01 constant",
        "results": rows,
    }
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.with_suffix(".json").write_text(json.dumps(record, indent=2) + "\n")
        args.output.with_suffix(".md").write_text(markdown(record))
    return 0


def markdown(record):
    """The race's table, from its record."""
    gpu = record["machine"].get("gpu") or "the GPU"
    lines = [
        f"# The race: one training epoch on {gpu}, nvcc variant vs PyTorch {record['torch']}",
        "",
        f"Command: `{record['command']}`. {record['optimizer']}; the training set on the GPU; "
        f"TF32 off; each side keeps the fastest of {record['repeats']} epoch(s). The graph sides "
        "time replays only: PyTorch's warm-up and capture, and nvcc's first run of the epoch "
        "(which records and captures), are not timed. Targets: nvcc recorded <= 0.5x PyTorch "
        "eager, nvcc graph <= 1.0x PyTorch graph.",
        "",
        "| model | batch | images | PyTorch eager s | nvcc recorded s | ratio | PyTorch graph s "
        "| nvcc graph s | ratio |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in record["results"]:
        s = row["seconds"]
        lines.append(
            f"| {row['model']} | {row['batch_size']} | {row['images']} | {s['torch_eager']:.3f} "
            f"| {s['nvcc_recorded']:.3f} | {row['recorded_over_eager']:.2f} | "
            f"{s['torch_graph']:.3f} | {s['nvcc_graph']:.3f} | {row['graph_over_graph']:.2f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())

"""An N-GPU data-parallel run against the 1-GPU run of the same recipe: `nn.train --gpus N` and
`nn.train --gpus 1` on the same model, data, seed and global batch, each in its own processes;
their per-epoch losses and accuracies side by side, and how far apart their final weights are.

    python -m bench.data_parallel_follow --gpus 2 --model fashion_cnn --data fashion-mnist \
        --epochs 2 --output curriculum/results/data-parallel-follow-h200

Both runs see the same batches in the same order. Only the order of the gradient sums differs
(each rank sums over its shard, then NCCL sums the ranks), so they agree up to rounding, which
every later step carries forward. Within the N-GPU run, every rank's weights are compared with
rank 0's at the end: the run prints that they are bit-identical, or fails.
"""

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

from nn.backend import TierError, nvcc_tier
from nn.checkpoint import read_checkpoint
from nn.distributed import launch
from nn.report import machine

IDENTICAL = re.compile(r"data parallel: the weights are bit-identical on all (\d+) ranks")
ACCURACY = re.compile(r"^test_accuracy=([0-9.]+)$", re.MULTILINE)
COLUMNS = ("train_loss", "train_accuracy", "val_loss", "val_accuracy", "images_per_second")


def train(gpus, model, data, epochs, run_dir, extra=()):
    """`nn.train --stage 4 --variant nvcc --gpus GPUS ...` into `run_dir`: the finished process
    (its stdout and stderr as text)."""
    command = [sys.executable, "-m", "nn.train", "--stage", "4", "--variant", "nvcc", "--gpus",
               str(gpus), "--model", model, "--data", data, "--epochs", str(epochs),
               "--no-progress", "--run-dir", str(run_dir), *extra]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, check=False)


def history(run_dir):
    """The per-epoch records of a run (its metrics.jsonl), in order."""
    lines = (Path(run_dir) / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def weight_differences(one_dir, many_dir):
    """{parameter: (max |a - b|, max |a - b| / max |a|)} between the two runs' final weights (the
    param/ arrays of their last.npz)."""
    _, one = read_checkpoint(Path(one_dir) / "last.npz")
    _, many = read_checkpoint(Path(many_dir) / "last.npz")
    one, many = ({name: value for name, value in arrays.items() if name.startswith("param/")}
                 for arrays in (one, many))  # fmt: skip
    if one.keys() != many.keys():
        differing = sorted(one.keys() ^ many.keys())
        raise ValueError(f"the checkpoints hold different parameters: {differing}")
    differences = {}
    for name, value in one.items():
        gap = float(np.max(np.abs(value.astype(np.float64) - many[name]), initial=0.0))
        scale = float(np.max(np.abs(value), initial=0.0))
        differences[name] = (gap, gap / scale if scale else gap)
    return differences


def compare(one, many, one_dir, many_dir):
    """The record of two finished runs (`one` on 1 GPU, `many` on N) written in the two dirs."""
    differences = weight_differences(one_dir, many_dir)
    worst = max(differences, key=lambda name: differences[name][1])
    identical = IDENTICAL.search(many.stdout)
    return {
        "epochs": [{"epoch": a["epoch"], **{f"{key}_1": a.get(key) for key in COLUMNS},
                    **{f"{key}_n": b.get(key) for key in COLUMNS}}
                   for a, b in zip(history(one_dir), history(many_dir), strict=True)],  # fmt: skip
        "test_accuracy_1": float(ACCURACY.search(one.stdout).group(1)),
        "test_accuracy_n": float(ACCURACY.search(many.stdout).group(1)),
        "max_abs_weight_difference": max(gap for gap, _ in differences.values()),
        "max_relative_weight_difference": differences[worst][1],
        "worst_array": worst,
        "ranks_bit_identical": int(identical.group(1)) if identical else None,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.data_parallel_follow",
                                     description=__doc__.split("\n")[0])  # fmt: skip
    parser.add_argument("--gpus", type=int, default=2, help="the data-parallel run's GPUs")
    parser.add_argument("--model", default="fashion_cnn")
    parser.add_argument("--data", default="fashion-mnist")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, help="the global batch (default: the recipe's)")
    parser.add_argument("--output", type=Path, required=True,
                        help="write OUTPUT.json and OUTPUT.md; the runs go in OUTPUT-runs/")
    args = parser.parse_args(argv)
    if args.gpus < 2:
        parser.error(f"--gpus must be at least 2 (it is compared with one GPU), got {args.gpus}")
    try:  # before minutes of training on one GPU
        nvcc_tier("bench.data_parallel_follow")
        launch.check_gpus(args.gpus, launch.gpu_count())
    except TierError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    runs = args.output.parent / f"{args.output.name}-runs"
    finished = {}
    for gpus in (1, args.gpus):
        print(f"training {args.model} on {args.data}, {args.epochs} epochs, on {gpus} GPU(s)",
              flush=True)  # fmt: skip
        extra = ["--batch-size", str(args.batch_size)] if args.batch_size else []
        finished[gpus] = train(gpus, args.model, args.data, args.epochs, runs / f"gpus{gpus}",
                               extra)  # fmt: skip
        if finished[gpus].returncode != 0:
            print(finished[gpus].stderr, file=sys.stderr)
            print(f"error: the run on {gpus} GPU(s) failed (exit status "
                  f"{finished[gpus].returncode})", file=sys.stderr)  # fmt: skip
            return 1
    record = {
        "command": "python -m bench.data_parallel_follow " + " ".join(
            sys.argv[1:] if argv is None else argv),  # fmt: skip
        "model": args.model, "data": args.data, "epochs": args.epochs, "gpus": args.gpus,
        "batch_size": args.batch_size,
        "machine": machine(),
        **compare(finished[1], finished[args.gpus], runs / "gpus1", runs / f"gpus{args.gpus}"),
    }  # fmt: skip
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.with_suffix(".json").write_text(json.dumps(record, indent=2) + "\n")
    args.output.with_suffix(".md").write_text(markdown(record))
    print(markdown(record))
    return 0


def markdown(record):
    n, gpu = record["gpus"], record["machine"].get("gpu") or "GPUs"
    identical = record["ranks_bit_identical"]
    lines = [
        f"# {n} GPUs against 1: {record['model']} on {record['data']}, {gpu}",
        "",
        f"Command: `{record['command']}`. The same recipe, seed and global batch; the {n}-GPU "
        "run splits each batch into shards and sums their gradients with NCCL.",
        "",
        f"| epoch | train loss, 1 GPU | {n} GPUs | train accuracy, 1 GPU | {n} GPUs | "
        f"val accuracy, 1 GPU | {n} GPUs | images/s, 1 GPU | {n} GPUs |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in record["epochs"]:
        cells = [f"{row[f'train_loss_{s}']:.6f}" for s in "1n"]
        cells += [f"{row[f'train_accuracy_{s}']:.4%}" for s in "1n"]
        cells += [f"{row[f'val_accuracy_{s}']:.2%}" if row[f"val_accuracy_{s}"] is not None
                  else "-" for s in "1n"]  # fmt: skip
        cells += [f"{row[f'images_per_second_{s}']:.0f}" for s in "1n"]
        lines.append(f"| {row['epoch']} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"- Test accuracy: {record['test_accuracy_1']:.2%} on 1 GPU, "
        f"{record['test_accuracy_n']:.2%} on {n}.",
        f"- Final weights: largest difference {record['max_abs_weight_difference']:.3g}; "
        f"relative to the array's largest value, {record['max_relative_weight_difference']:.3g} "
        f"(`{record['worst_array']}`).",
        f"- Ranks: {'bit-identical on all ' + str(identical) if identical else 'NOT identical'}.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())

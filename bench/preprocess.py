"""What MNIST-style preprocessing is worth: MNIST test digits pasted at random offsets and scales
into larger canvases, classified through the service (real HTTP on loopback) with nn/preprocess.py's
crop, scale into 20x20 and centring, and with a plain resize; writes OUTPUT.json and OUTPUT.md.

    make train STAGE=3 ARGS='--model lenet5 --data mnist --epochs 5 --run-dir runs/lenet5-mnist-5ep'
    python -m bench.preprocess --checkpoint runs/lenet5-mnist-5ep/best.npz --stage 3 \
        --output curriculum/results/preprocess-cpu

--count test digits are drawn at random (--seed); each is scaled by a factor drawn from
[--min-scale, --max-scale] (bilinear), pasted at a random place on a black square canvas with a
random margin of up to --max-margin pixels around it, and, for every other digit, inverted (dark
ink on white, which both methods detect alike), then sent as a PNG. The same digits sent as they
are (28x28, the network's input unchanged) give the model's own accuracy on the sample, the
ceiling of both methods.
"""

import argparse
import asyncio
import sys
from pathlib import Path

import numpy as np
from PIL import Image

from bench.serve_load import png_bytes, report, send_all
from datasets import load
from nn.report import machine
from nn.serve.launch import running_service

TARGET = 0.98  # accuracy with the crop and centring


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.preprocess",
                                     description=__doc__.split("\n")[0])  # fmt: skip
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--stage", type=int, default=3)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--min-scale", type=float, default=1.0)
    parser.add_argument("--max-scale", type=float, default=5.0)
    parser.add_argument("--max-margin", type=int, default=200)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--data-dir", help="where mnist/ lives (default: NN_DATA_DIR, ...)")
    parser.add_argument("--output", type=Path, help="write OUTPUT.json and OUTPUT.md")
    return parser.parse_args(argv)


def pasted(digit, rng, min_scale, max_scale, max_margin, invert):
    """uint8 [S, S]: `digit` [28, 28] scaled and pasted at random on a black canvas."""
    side = round(28 * rng.uniform(min_scale, max_scale))
    scaled = np.asarray(Image.fromarray(digit).resize((side, side), Image.BILINEAR))
    canvas_side = side + int(rng.integers(0, max_margin + 1))
    canvas = np.zeros((canvas_side, canvas_side), np.uint8)
    top, left = rng.integers(0, canvas_side - side + 1, size=2)
    canvas[top:top + side, left:left + side] = scaled
    return 255 - canvas if invert else canvas


def accuracy(url, bodies, labels, query, clients):
    """(share of `bodies` classified as `labels` through POST /classify?query, errors)."""
    replies, failures, _ = asyncio.run(send_all(url, bodies, len(bodies), clients, 3600,
                                                f"/classify?top_k=1&{query}"))  # fmt: skip
    right = sum(1 for index, status, _, body in replies
                if status == 200 and body["top"][0]["index"] == labels[index])  # fmt: skip
    errors = len(failures) + sum(1 for reply in replies if reply[1] != 200)
    return right / len(bodies), errors


def main(argv=None):
    args = parse_args(argv)
    images, labels = load("mnist", "test", data_dir=args.data_dir)
    rng = np.random.default_rng(args.seed)
    chosen = rng.choice(len(images), args.count, replace=False)
    canvases = [pasted(images[i], rng, args.min_scale, args.max_scale, args.max_margin,
                       invert=n % 2 == 1) for n, i in enumerate(chosen)]  # fmt: skip
    as_they_are = [(png_bytes(images[i]), "image/png") for i in chosen]
    bodies = [(png_bytes(canvas), "image/png") for canvas in canvases]
    expected = labels[chosen]
    flags = ["--checkpoint", args.checkpoint, "--stage", str(args.stage)]
    rows = []
    with running_service(flags) as url:
        for name, sent, query in (
            ("the test digits as they are (28x28, unchanged)", as_they_are, "preprocess=mnist"),
            ("pasted; crop, scale into 20x20, centre of mass (mnist)", bodies, "preprocess=mnist"),
            ("pasted; plain resize to 28x28 (resize)", bodies, "preprocess=resize"),
        ):
            share, errors = accuracy(url, sent, expected, query, args.clients)
            rows.append({"input": name, "query": query, "accuracy": share, "errors": errors})
    sides = [int(canvas.shape[0]) for canvas in canvases]
    record = {
        "command": "python -m bench.preprocess " + " ".join(argv if argv is not None
                                                            else sys.argv[1:]),
        "machine": machine(), "checkpoint": args.checkpoint, "stage": args.stage,
        "count": args.count, "seed": args.seed,
        "scales": [args.min_scale, args.max_scale], "max_margin": args.max_margin,
        "canvas_sides": [min(sides), max(sides)], "rows": rows, "target": TARGET,
    }  # fmt: skip
    report(record, markdown(record), args.output)
    return 0


def markdown(record):
    where = record["machine"]
    low, high = record["scales"]
    lines = [
        "# Preprocessing a drawn digit: MNIST's crop and centring against a plain resize",
        "",
        f"Command: `{record['command']}`. Machine: {where['processor']}, {where['cpu_count']} "
        f"CPUs. Checkpoint `{record['checkpoint']}` served on stage {record['stage']}; every "
        f"image sent as a PNG to POST /classify over loopback HTTP. {record['count']} MNIST test "
        f"digits (seed {record['seed']}), each scaled by {low:g} to {high:g} and pasted at a "
        f"random place on a black canvas of {record['canvas_sides'][0]} to "
        f"{record['canvas_sides'][1]} pixels a side (margin up to {record['max_margin']}); every "
        "other one inverted (dark on white).",
        "",
        "| input | query | accuracy | errors |",
        "| --- | --- | ---: | ---: |",
    ]
    for row in record["rows"]:
        lines.append(f"| {row['input']} | `{row['query']}` | {100 * row['accuracy']:.2f}% | "
                     f"{row['errors']} |")  # fmt: skip
    centred = record["rows"][1]["accuracy"]
    met = "met" if centred >= record["target"] else "NOT met"
    lines += ["", f"With the crop and centring: {100 * centred:.2f}% (target >= "
                  f"{100 * record['target']:g}%: {met}).", ""]  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())

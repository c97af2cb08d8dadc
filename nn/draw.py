"""The network drawn: each layer of a model with its output shape and parameter count.

The figure is generated from the model itself (`Model.layer_rows`, the rows of its summary).

    python -m nn.draw --model lenet5 --out curriculum/results/network-lenet5.svg
    python -m nn.draw --model resnet_mini --out resnet_mini.png

One box per layer from the input down to the logits, coloured by kind (convolution, dense,
pooling, normalization, activation, the rest); a layer inside another (a Residual's body) is drawn
indented under its container, and an arrow joins each of the model's own layers to the next. The
file's format follows the name given to --out (.svg or .png). A bad model or file name is one line
on stderr and exit status 2 (nn/exits.py).
"""

import argparse
import sys
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure  # files only: no pyplot, no backend chosen for the caller
from matplotlib.patches import FancyBboxPatch

from nn.backend import load_tier
from nn.exits import EPILOG, reporting
from nn.layers import AvgPool2d, BatchNorm, Conv2d, Linear, MaxPool2d
from nn.layers.activations import LeakyReLU, ReLU, Sigmoid, Tanh
from nn.models import MODELS

FORMATS = (".svg", ".png")
COLOURS = (  # (kinds of layer, fill colour), the first that matches
    ((Conv2d,), "#9ecae1"),
    ((Linear,), "#fdae6b"),
    ((MaxPool2d, AvgPool2d), "#a1d99b"),
    ((BatchNorm,), "#dadaeb"),
    ((ReLU, LeakyReLU, Sigmoid, Tanh), "#f0f0f0"),
)
OTHER_COLOUR = "#ffffff"
ROW_HEIGHT, BOX_HEIGHT, INDENT = 0.62, 0.46, 0.35  # in inches


def colour_of(layer):
    return next((colour for kinds, colour in COLOURS if isinstance(layer, kinds)), OTHER_COLOUR)


def draw(model, path):
    """Draw `model` (built on a tier) into `path` (.svg or .png)."""
    rows = model.layer_rows()
    count = len(rows) + 1  # the input's row first
    height = count * ROW_HEIGHT + 0.9
    figure = Figure(figsize=(8.0, height))
    axes = figure.add_axes((0, 0, 1, 1))
    axes.set_xlim(0, 8.0)
    axes.set_ylim(height, 0)  # the input at the top
    axes.axis("off")
    axes.text(0.2, 0.35, f"{model.name}: {model.parameter_count():,} parameters",
              fontsize=12, fontweight="bold", va="center")  # fmt: skip
    centres = [0.9 + ROW_HEIGHT * index + ROW_HEIGHT / 2 for index in range(count)]
    _box(axes, 0, centres[0], "input", str(model.input_shape), "", "#ffffff")
    previous = centres[0]  # where the last of the model's own layers sits
    for (depth, layer, shape, parameters), centre in zip(rows, centres[1:], strict=True):
        shape_text = "" if shape is None else str(tuple(shape))
        counted = f"{parameters:,} parameters" if parameters else ""
        _box(axes, depth, centre, layer.describe(), shape_text, counted, colour_of(layer))
        if depth == 0:
            axes.annotate("", xy=(0.5, centre - BOX_HEIGHT / 2),
                          xytext=(0.5, previous + BOX_HEIGHT / 2),
                          arrowprops={"arrowstyle": "->", "color": "#555555"})  # fmt: skip
            previous = centre
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "nn.draw"}):
        # text stays text in an SVG; no date in the file, so the same model gives the same file
        figure.savefig(path, metadata={"Date": None} if path.suffix == ".svg" else None)


def _box(axes, depth, centre, name, shape, parameters, colour):
    """One layer's box at row `centre`, indented by `depth`: its name, output shape, parameters."""
    left = 0.2 + depth * INDENT
    axes.add_patch(FancyBboxPatch(
        (left, centre - BOX_HEIGHT / 2), 7.6 - left, BOX_HEIGHT,
        boxstyle="round,pad=0,rounding_size=0.06", facecolor=colour, edgecolor="#444444",
    ))  # fmt: skip
    axes.text(left + 0.12, centre, name, va="center", fontsize=9, family="monospace")
    axes.text(5.2, centre, shape, va="center", ha="right", fontsize=9, family="monospace")
    axes.text(7.5, centre, parameters, va="center", ha="right", fontsize=8, color="#333333")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m nn.draw", description=__doc__.split("\n")[0], epilog=EPILOG
    )
    parser.add_argument("--model", required=True, choices=sorted(MODELS))
    parser.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help="the figure to write, .svg or .png (default: network-MODEL.svg)",
    )
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    return reporting(lambda: draw_command(args))


def draw_command(args):
    path = args.out or Path(f"network-{args.model}.svg")
    if path.suffix not in FORMATS:
        raise ValueError(f"--out must end in {' or '.join(FORMATS)}, got {str(path)!r}")
    model = MODELS[args.model]().build(load_tier(2), seed=0)  # shapes and counts only
    path.parent.mkdir(parents=True, exist_ok=True)
    draw(model, path)
    print(
        f"{model.name} ({len(model.layer_rows())} layers, {model.parameter_count():,} "
        f"parameters): {path}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

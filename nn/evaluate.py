"""Test accuracy of a checkpoint on a tier: `python -m nn.evaluate --checkpoint CKPT [--stage N]`.

    python -m nn.evaluate --checkpoint runs/lenet5-mnist-stage2/best.npz --stage 3

The model runs in evaluation mode on the whole test split of the data set it was trained on,
normalized as in training. The last line printed is `test_accuracy=0.XXXX`, as nn.train ends. Any
failure is one line on stderr and an exit status of its kind (nn/exits.py, listed by --help).
"""

import argparse
import sys
from pathlib import Path

import numpy as np

from nn.backend import STAGES, VARIANTS, load_tier, refuse_simulated
from nn.data import Normalizer, load_data
from nn.exits import EPILOG, reporting
from nn.predict import load_model
from nn.recipes import Recipe

BATCH = 500  # test images per forward pass

SIMULATED_INSTEAD = (
    "Evaluate on stage 3 (`python -m nn.evaluate --stage 3 ...`) here, and on stage 4 on a "
    "machine with an NVIDIA GPU."
)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m nn.evaluate", description=__doc__.split("\n")[0], epilog=EPILOG
    )
    parser.add_argument("--checkpoint", type=Path, required=True)
    add_tier_arguments(parser)
    add_data_dir_argument(parser)
    return parser.parse_args(argv)


def add_tier_arguments(parser):
    """--stage, --variant and --impl: where a model runs (nn.evaluate, nn.import_onnx, nn.serve)."""
    parser.add_argument("--stage", type=int, default=2, choices=STAGES)
    parser.add_argument("--variant", choices=VARIANTS,
                        help="stage 4's variant (default: numba, the first)")
    parser.add_argument("--impl", metavar="DIR",
                        help="run on the tier in DIR (default: the reference)")


def add_data_dir_argument(parser):
    parser.add_argument("--data-dir", help="where the data set lives (default: NN_DATA_DIR, ...)")


def tier_for_evaluation(args):
    """The tier the arguments name; TierError at once on numba's CUDA simulator."""
    refuse_simulated(args.stage, args.variant, "evaluating the test set", SIMULATED_INSTEAD)
    return load_tier(args.stage, args.impl, args.variant)


def logits_of(model, normalizer, inputs, batch=BATCH):
    """The model's outputs, a NumPy array [N, outputs], for raw `inputs` (uint8 images [N, C, H, W]
    or points [N, F]), normalized by `normalizer`, `batch` at a time, in evaluation mode."""
    tier = model.tier
    model.eval()
    return np.concatenate([
        tier.to_numpy(model.forward(tier.from_numpy(normalizer(inputs[start:start + batch]))))
        for start in range(0, len(inputs), batch)
    ])


def test_split(meta, data_dir):
    """The test split of the data set a checkpoint's (or an ONNX file's) record names."""
    recipe = Recipe.from_json(meta["recipe"]) if "recipe" in meta else Recipe()
    return load_data(meta["data"], data_dir, 0, recipe.synthetic_size).test


def report_accuracy(model, normalizer, test, title):
    """Print `title`, then the test accuracy as `test_accuracy=0.XXXX`; returns it."""
    predictions = model.loss.predict(logits_of(model, normalizer, test.inputs))
    accuracy = float((predictions == test.labels).mean())
    print(f"{title}: {int((predictions == test.labels).sum())} of {len(test)} test examples right")
    print(f"test_accuracy={accuracy:.4f}")
    return accuracy


def main(argv=None):
    args = parse_args(argv)
    return reporting(lambda: evaluate(args))


def evaluate(args):
    tier = tier_for_evaluation(args)
    model, meta = load_model(args.checkpoint, tier)
    test = test_split(meta, args.data_dir)
    title = f"{model.name} on {meta['data']}, stage {args.stage} ({tier.NAME})"
    report_accuracy(model, Normalizer.from_json(meta["normalizer"]), test, title)
    return 0


if __name__ == "__main__":
    sys.exit(main())

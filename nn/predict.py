"""Classify one image with a trained model: the top-K classes and their probabilities.

    python -m nn.predict --checkpoint runs/lenet5-mnist-stage2/best.npz digit.png
    python -m nn.predict --checkpoint runs/lenet5-mnist-stage2/best.npz --index 7

An image file is converted to the model's channels and size by nn/preprocess.py: a digit is
cropped, scaled into 20x20 and centred by its centre of mass as MNIST was made (--preprocess
resize: a plain resize), and made white on black, as MNIST's digits are (a light background is
detected; --invert or --no-invert decide instead). An image of the model's own size is taken as
it is. --index takes example i of the test split of
the data set the model was trained on. The model runs in inference mode (nn/inference.py: its
BatchNorms folded, each conv + ReLU + max-pool one op). Any failure is one line on stderr and an
exit status of its kind (nn/exits.py, listed by --help).
"""

import argparse
import sys
from pathlib import Path

import numpy as np

from nn.backend import STAGES, load_tier
from nn.checkpoint import CheckpointError, meta_field, read_checkpoint, restore
from nn.data import DATA_NAMES, Normalizer, load_data
from nn.exits import EPILOG, INTERRUPTED, REPORTED, exit_status
from nn.inference import prepare_for_inference
from nn.models import build_model
from nn.preprocess import METHODS, as_gray_or_rgb, to_model_input
from nn.quantized import quantized_layers, restore_quantized
from nn.recipes import Recipe
from nn.setting_checks import is_int, is_number


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m nn.predict", description=__doc__.split("\n")[0], epilog=EPILOG
    )
    add_input_arguments(parser)
    parser.add_argument("--top-k", type=int, default=3)
    return parser.parse_args(argv)


def add_input_arguments(parser):
    """The arguments that choose a checkpoint, a tier and one input (nn.predict, nn.explain)."""
    parser.add_argument("--checkpoint", type=Path, required=True)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("image", nargs="?", type=Path, help="an image file (PNG, JPEG, ...)")
    source.add_argument("--index", type=int, help="example i of the test split")
    parser.add_argument("--stage", type=int, default=2, choices=STAGES)
    parser.add_argument("--impl", metavar="DIR",
                        help="run on the tier in DIR (default: the reference)")
    parser.add_argument("--data-dir", help="where the data set lives (for --index)")
    brightness = parser.add_mutually_exclusive_group()
    brightness.add_argument("--invert", action="store_const", const=True, dest="invert",
                            help="invert the image's brightness (default: detected)")
    brightness.add_argument("--no-invert", action="store_const", const=False, dest="invert",
                            help="never invert it")
    parser.add_argument("--preprocess", choices=list(METHODS), default="mnist",
                        help="bring an image to the model's size by cropping, scaling into 20x20 "
                             "and centring as MNIST was made (mnist, the default) or by a plain "
                             "resize (nn/preprocess.py)")


def read_input(args, meta):
    """The input that `args` (add_input_arguments') choose, [1, C, H, W] in [0, 255]: example
    --index of the checkpoint's test split (its true class printed), or the image file."""
    if args.index is None:
        return read_image(args.image, meta["input_shape"], args.invert, args.preprocess)
    recipe = Recipe.from_json(meta["recipe"])
    test = load_data(meta["data"], args.data_dir, 0, recipe.synthetic_size).test
    if not 0 <= args.index < len(test):
        raise ValueError(f"--index must be in [0, {len(test)}), got {args.index}")
    print(f"{meta['data']} test example {args.index}: true class "
          f"{meta['class_names'][test.labels[args.index]]}")
    return test.inputs[args.index:args.index + 1]


def load_model(path, tier, chained=True, fused=True):
    """(model in evaluation mode with the checkpoint's weights, the checkpoint's meta); an int8
    checkpoint's layers pass int8 codes to each other where they can, unless not `chained`, and
    its convolutions pool their codes themselves where the tier can, unless not `fused`
    (nn/quantized.py)."""
    meta, arrays = read_checkpoint(path)
    check_record(path, meta)
    try:
        model = build_model(
            meta["model"], meta["input_shape"], meta["num_classes"], **meta["model_options"]
        )
        model.build(tier, seed=0)  # initial weights are replaced by the checkpoint's
    except ValueError as error:
        raise CheckpointError(f"checkpoint {path}: its model cannot be built: {error}") from None
    if "quantization" in meta:  # an int8 checkpoint of nn.quantize
        restore_quantized(path, arrays, model, chained, fused)
    else:
        restore(path, meta, arrays, model)
    model.eval()
    return model, meta


def check_record(path, meta):
    """CheckpointError unless `meta` holds the record nn.train writes, as prediction uses it."""
    meta_field(path, meta, "input_shape",
               lambda v: isinstance(v, list) and 1 <= len(v) <= 3 and all(is_int(n, 1) for n in v),
               "a list of 1 to 3 sizes >= 1")
    classes = meta_field(path, meta, "num_classes", lambda v: is_int(v, 1), "an integer >= 1")
    meta_field(path, meta, "model_options", lambda v: isinstance(v, dict), "a JSON object")
    meta_field(path, meta, "class_names",
               lambda v: isinstance(v, list) and len(v) == classes
               and all(isinstance(name, str) for name in v), f"a list of {classes} names")
    meta_field(path, meta, "data", lambda v: v in DATA_NAMES, f"one of {list(DATA_NAMES)}")
    channels = meta["input_shape"][0] if len(meta["input_shape"]) == 3 else meta["input_shape"][-1]
    meta_field(path, meta, "normalizer",
               lambda v: isinstance(v["is_image"], bool) and all(
                   isinstance(v[key], list) and len(v[key]) == channels
                   and all(map(is_number, v[key])) for key in ("mean", "std")),
               f"mean and std of {channels} values and is_image")
    try:
        Recipe.from_json(meta.get("recipe"))
    except (ValueError, TypeError) as error:
        raise CheckpointError(f"checkpoint {path}: bad recipe: {error}") from None


def read_image(path, input_shape, invert=None, method="mnist"):
    """An image file as float32 [1, C, H, W] in [0, 255], the model's channels and size, through
    nn/preprocess.py (an MNIST-like crop and centring by `method`; `invert` None: detected)."""
    from PIL import Image  # Pillow comes with matplotlib

    if len(input_shape) != 3:
        raise ValueError(f"the model takes points of shape {tuple(input_shape)}, not images: "
                         "use --index")
    try:
        with Image.open(path) as image:
            pixels = as_gray_or_rgb(image, input_shape[0])
    except OSError as error:
        raise ValueError(f"cannot read image {path}: {error}") from None
    return to_model_input(pixels, input_shape, method, invert)[None] * np.float32(255)


def inference_runner(model):
    """What predicts with `model`: an int8 model its own int8 layers, a float one its inference
    mode (nn/inference.py: folded and fused)."""
    return model if quantized_layers(model) else prepare_for_inference(model)


def top_classes(probabilities, k):
    """The indices of the `k` highest of `probabilities` [C], highest first."""
    return np.argsort(-probabilities, kind="stable")[:k]


def main(argv=None):
    args = parse_args(argv)
    try:
        if args.top_k < 1:
            raise ValueError(f"--top-k must be an integer >= 1, got {args.top_k}")
        tier = load_tier(args.stage, args.impl)
        model, meta = load_model(args.checkpoint, tier)
        inputs = read_input(args, meta)
    except REPORTED as error:
        print(f"error: {error}", file=sys.stderr)
        return exit_status(error)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return INTERRUPTED
    normalized = Normalizer.from_json(meta["normalizer"])(inputs)
    logits = inference_runner(model).forward(tier.from_numpy(normalized))
    probabilities = model.loss.probabilities(tier, logits)[0]
    for rank, label in enumerate(top_classes(probabilities, args.top_k), start=1):
        print(f"{rank}. {meta['class_names'][label]:<12} {probabilities[label]:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

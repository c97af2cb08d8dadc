"""Quantize a trained model to INT8: calibrate its activations on training images, write an int8
checkpoint that nn.predict (and every command loading a model through it) runs.

    python -m nn.quantize --checkpoint runs/lenet5-mnist-stage2/best.npz --out lenet5-int8.npz
    python -m nn.quantize --checkpoint CKPT --out QCKPT --calibration 1000 --method percentile \
        --stage 3 --compare

Weights: int8 symmetric per output channel (nn/quantized.py). Activations: the input of every
Linear and Conv2d, int8 asymmetric per tensor, its range calibrated on `--calibration` images drawn
(seeded) from the training split (never the test split) by `--method`:
- minmax: the smallest and largest value seen. Exact for what it saw, but one outlier stretches
  the range and coarsens every other value's code.
- percentile: the 0.01th and 99.99th percentiles of the values seen: the rare outliers clip to the
  ends, and the codes are finer for the rest.
- entropy: the upper end that keeps the code's distribution closest to the values' in
  Kullback-Leibler divergence (TensorRT's calibrator): search over candidate ends.
--compare then prints both models' test accuracy and how often they agree, and ends with the int8
model's `test_accuracy=...` line. Failures are one line and an exit status (nn/exits.py).
"""

import argparse
import sys
from pathlib import Path

import numpy as np

from nn.backend import STAGES, load_tier
from nn.checkpoint import write_arrays
from nn.data import Normalizer, load_data
from nn.exits import EPILOG, reporting
from nn.predict import load_model
from nn.quantized import (
    QuantizedLayer,
    activation_range,
    quantizable_layers,
    quantize_model,
    quantized_arrays,
    quantized_layers,
)
from nn.recipes import Recipe

METHODS = ("minmax", "percentile", "entropy")
PERCENTILE = 99.99  # and 100 - PERCENTILE at the low end
SAMPLES_PER_BATCH = 1 << 16  # values a batch adds to a layer's sample (percentile, entropy)
BATCH = 256
CALIBRATION_SEED = 0


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m nn.quantize", description=__doc__.split("\n")[0], epilog=EPILOG
    )
    parser.add_argument("--checkpoint", type=Path, required=True, help="a float checkpoint")
    parser.add_argument("--out", type=Path, required=True, help="the int8 checkpoint to write")
    parser.add_argument("--calibration", type=int, default=1000,
                        help="training images to calibrate on (default 1000)")
    parser.add_argument("--method", choices=METHODS, default="percentile")
    parser.add_argument("--stage", type=int, default=3, choices=STAGES)
    parser.add_argument("--impl", metavar="DIR", help="the tier in DIR (default: the reference)")
    parser.add_argument("--data-dir", help="where the data set lives")
    parser.add_argument("--compare", action="store_true",
                        help="then the test accuracy of both models and their agreement")
    return parser.parse_args(argv)


class RangeObserver:
    """The range of the values a layer's input takes over the calibration batches."""

    def __init__(self, method, rng):
        self.method, self.rng = method, rng
        self.low, self.high, self.samples = np.inf, -np.inf, []

    def observe(self, values):
        values = values.ravel()
        self.low, self.high = min(self.low, values.min()), max(self.high, values.max())
        if self.method != "minmax":
            take = min(values.size, SAMPLES_PER_BATCH)
            self.samples.append(self.rng.choice(values, take, replace=False))

    def range(self):
        """(low, high) by the observer's method."""
        if self.method == "minmax":
            return float(self.low), float(self.high)
        sample = np.concatenate(self.samples).astype(np.float64)
        if self.method == "percentile":
            low, high = np.percentile(sample, [100 - PERCENTILE, PERCENTILE])
            return float(low), float(high)
        return float(self.low), entropy_high(sample, self.low)


def entropy_high(sample, low, bins=2048, levels=255):
    """The upper end t in (low, max] whose int8 code over [min(low, 0), t] loses least: the
    Kullback-Leibler divergence between P, the histogram of the values up to t with those beyond
    added to the last bin (they clip there), and Q, the values up to t alone merged into
    `levels` codes and spread back over the bins (so Q pays for both the clipping and the
    merging; a Q made from P would pay nothing for the clipping).

    Values no upper end clips are left out: 0.0 (ReLU's zeros, exact in every range) and the low
    end itself (MNIST's background: 81% of the first layer's inputs). Left in, their spike
    outweighs the tail the divergence is meant to weigh, and the end chosen clips the strokes'
    brightest pixels (a 10% error on the first layer, against 0.6% without them)."""
    sample = sample[(sample != 0.0) & (sample != low)]
    low = min(float(low), 0.0)
    if sample.size == 0:
        return 0.0
    counts, edges = np.histogram(sample, bins=bins, range=(low, float(sample.max())))
    best, best_end = np.inf, edges[-1]
    for end in range(levels, bins + 1, 16):
        reference = counts[:end].astype(np.float64)
        reference[-1] += counts[end:].sum()
        kept_counts = counts[:end].astype(np.float64)
        quantized = np.zeros(end)
        for group in np.array_split(np.arange(end), levels):
            used = kept_counts[group] > 0
            if used.any():
                quantized[group[used]] = kept_counts[group].sum() / used.sum()
        p, q = reference / reference.sum(), quantized / quantized.sum()
        kept = p > 0
        divergence = float(np.sum(p[kept] * np.log(p[kept] / np.maximum(q[kept], 1e-12))))
        if divergence < best:
            best, best_end = divergence, edges[end]
    return float(best_end)


def calibration_images(data, count, normalizer):
    """`count` normalized training images, a seeded draw without replacement."""
    train = data.train
    if not 1 <= count <= len(train):
        raise ValueError(f"--calibration must be in [1, {len(train)}] (the training split's "
                         f"size), got {count}")  # fmt: skip
    chosen = np.random.default_rng(CALIBRATION_SEED).choice(len(train), count, replace=False)
    return normalizer(train.inputs[np.sort(chosen)])


def calibrate(model, images, method):
    """{layer path: (low, high)}: the ranges of each Linear's and Conv2d's input over `images`."""
    tier = model.tier
    rng = np.random.default_rng(CALIBRATION_SEED)
    observers = {}
    for path, layer in quantizable_layers(model.net).items():
        observer = observers[path] = RangeObserver(method, rng)

        def observed(x, layer=layer, observer=observer):
            observer.observe(tier.to_numpy(x))
            return type(layer).forward(layer, x)

        layer.forward = observed
    try:
        for start in range(0, len(images), BATCH):
            model.forward(tier.from_numpy(images[start : start + BATCH]))
    finally:
        for layer in quantizable_layers(model.net).values():
            del layer.forward
    return {path: observer.range() for path, observer in observers.items()}


def predictions(model, images):
    """Each image's predicted class (argmax of the logits), batch by batch."""
    tier = model.tier
    labels = [np.argmax(tier.to_numpy(model.forward(tier.from_numpy(images[i : i + BATCH]))),
                        axis=1) for i in range(0, len(images), BATCH)]  # fmt: skip
    return np.concatenate(labels)


def quantize_checkpoint(checkpoint, out, calibration, method, stage, impl=None, data_dir=None):
    """Quantize the model in `checkpoint` and write it to `out`; returns (float model, int8
    model, meta, data)."""
    if Path(out).resolve() == Path(checkpoint).resolve():
        raise ValueError("--out must differ from --checkpoint: the float model is kept")
    tier = load_tier(stage, impl)
    model, meta = load_model(checkpoint, tier)
    if "quantization" in meta:
        raise ValueError(f"checkpoint {checkpoint} is already quantized: give a float one")
    recipe = Recipe.from_json(meta["recipe"])
    data = load_data(meta["data"], data_dir, recipe.val_size, recipe.synthetic_size)
    normalizer = Normalizer.from_json(meta["normalizer"])
    ranges = calibrate(model, calibration_images(data, calibration, normalizer), method)
    float_model, _ = load_model(checkpoint, tier)
    quantize_model(model, ranges)
    layers = {path: {"input_scale": layer.input_scale, "input_zero_point": layer.input_zero_point,
                     "range": list(ranges[path])}
              for path, layer in quantized_layers(model).items()}  # fmt: skip
    record = {key: value for key, value in meta.items() if key != "optimizer_steps"}
    record["quantization"] = {"method": method, "calibration": calibration,
                              "from": str(checkpoint), "layers": layers}  # fmt: skip
    write_arrays(out, quantized_arrays(model), record)
    return float_model, model, record, data


def main(argv=None):
    args = parse_args(argv)
    return reporting(lambda: quantize_and_report(args))


def quantize_and_report(args):
    """Quantize as `args` say and print each layer's calibration (and with --compare the
    accuracies); the exit status."""
    float_model, model, meta, data = quantize_checkpoint(
        args.checkpoint, args.out, args.calibration, args.method, args.stage, args.impl,
        args.data_dir,
    )
    for path, layer in quantized_layers(model).items():
        low, high = meta["quantization"]["layers"][path]["range"]
        print(f"{path:<10} {layer.describe():<34} input [{low:9.4f}, {high:9.4f}] -> "
              f"scale {layer.input_scale:.3g}, zero point {layer.input_zero_point}")
    print(f"wrote {args.out} ({args.method}, {args.calibration} calibration images)")
    if args.compare:
        images = Normalizer.from_json(meta["normalizer"])(data.test.inputs)
        expected = predictions(float_model, images)
        found = predictions(model, images)
        labels = data.test.labels
        print(f"float32 test accuracy {np.mean(expected == labels):.4f}; int8 agrees with it "
              f"on {np.mean(found == expected):.4%} of {len(labels)} test images")
        print(f"test_accuracy={np.mean(found == labels):.4f}")
    return 0


__all__ = ["QuantizedLayer", "activation_range", "calibrate", "main", "quantize_checkpoint"]

if __name__ == "__main__":
    sys.exit(main())

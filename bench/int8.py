"""INT8 against float32: accuracy, agreement and error per layer for each calibrator, and batch-256
inference time on the CPU tiers side by side, in one run; writes OUTPUT.json and OUTPUT.md.

    python -m bench.int8 --model lenet5=runs/lenet5-mnist-stage3/best.npz \
        --model fashion_cnn=runs/fashion_cnn-fashion-mnist-stage3/best.npz \
        --stages 2 3 --output curriculum/results/int8-cpu

For every model and calibrator (nn/quantize.py's methods) the int8 model is written to --int8-dir
and evaluated on the whole test split on the last of --stages (the C tier by default): the test
accuracy of both, the share of test images where both predict the same class, and each quantized
layer's output error relative to the float model's (root mean square of the difference over that
of the float output, on one batch). Then each stage runs the float and the int8 model (the
--time-method's) on the same batch of 256 test images, in turn, on one thread (NumPy's BLAS
limited by threadpoolctl, C's set_num_threads(1)), best of --repeats by the process's CPU time,
which a shared machine's load does not lengthen.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

import stage3_c
from nn.backend import load_tier
from nn.data import Normalizer, load_data
from nn.predict import load_model
from nn.quantize import METHODS, predictions, quantize_checkpoint
from nn.quantized import quantizable_layers, quantized_layers
from nn.recipes import Recipe
from nn.report import machine

BATCH = 256
TARGET_AGREEMENT = 0.995
TARGET_ACCURACY_DROP = 0.003


def layer_outputs(model, layers, images, value=None):
    """{path: the output of the layer at path} for one forward pass of `images`, as floats
    (`value(layer, y)`, by default the tier's array as it is)."""
    tier, outputs = model.tier, {}
    for path, layer in layers.items():

        def recorded(x, layer=layer, path=path):
            y = type(layer).forward(layer, x)
            found = value(layer, y) if value else tier.to_numpy(y)
            outputs[path] = found.astype(np.float64)
            return y

        layer.forward = recorded
    try:
        model.forward(tier.from_numpy(images))
    finally:
        for layer in layers.values():
            del layer.forward
    return outputs


def layer_errors(float_model, int8_model, images):
    """{path: RMS(int8 output - float output) / RMS(float output)} per quantized layer. A layer
    chained to the next (nn.quantized.chain_int8) writes codes: their values are compared with the
    float output after the ReLU the codes include."""
    expected = layer_outputs(float_model, quantizable_layers(float_model.net), images)
    layers = quantized_layers(int8_model)
    found = layer_outputs(int8_model, layers, images, lambda layer, y: layer.dequantize(y))
    errors = {}
    for path, want in expected.items():
        if layers[path].output_code and layers[path].output_code[2]:  # the ReLU is in the codes
            want = np.maximum(want, 0.0)
        errors[path] = float(np.sqrt(np.mean((found[path] - want) ** 2) / np.mean(want**2)))
    return errors


def accuracy_rows(name, checkpoint, stage, calibration, out_dir, data_dir):
    """One row per calibrator: accuracies, agreement and the layers' errors."""
    rows = []
    for method in METHODS:
        out = Path(out_dir) / f"{name}-int8-{method}.npz"
        float_model, int8_model, meta, data = quantize_checkpoint(
            checkpoint, out, calibration, method, stage, data_dir=data_dir
        )
        images = Normalizer.from_json(meta["normalizer"])(data.test.inputs)
        expected, found = predictions(float_model, images), predictions(int8_model, images)
        labels = data.test.labels
        rows.append({
            "model": name, "data": meta["data"], "method": method, "calibration": calibration,
            "stage": stage, "checkpoint": str(checkpoint), "int8_checkpoint": str(out),
            "test_images": len(labels),
            "float32_accuracy": float(np.mean(expected == labels)),
            "int8_accuracy": float(np.mean(found == labels)),
            "agreement": float(np.mean(found == expected)),
            "layer_errors": layer_errors(float_model, int8_model, images[:BATCH]),
        })  # fmt: skip
    return rows


def timed(forward):
    """(CPU seconds, wall seconds) of one call of `forward`."""
    started_cpu, started = time.process_time(), time.perf_counter()
    forward()
    return time.process_time() - started_cpu, time.perf_counter() - started


def speed_rows(name, checkpoint, int8_checkpoint, stages, repeats, data_dir):
    """Per stage: the float and int8 models' forward pass on one batch of 256, in turn."""
    rows = []
    for stage in stages:
        tier = load_tier(stage)
        float_model, meta = load_model(checkpoint, tier)
        int8_model, _ = load_model(int8_checkpoint, tier)
        recipe = Recipe.from_json(meta["recipe"])
        test = load_data(meta["data"], data_dir, recipe.val_size, recipe.synthetic_size).test
        images = tier.from_numpy(Normalizer.from_json(meta["normalizer"])(test.inputs[:BATCH]))
        if hasattr(tier, "set_num_threads"):
            tier.set_num_threads(1)
        timings = {"float32": [], "int8": []}
        with threadpool_limits(1):
            for _ in range(repeats):  # the two models take turns: the same load weighs on both
                for label, model in (("float32", float_model), ("int8", int8_model)):
                    timings[label].append(timed(lambda m=model, x=images: m.forward(x)))
        best = {label: min(found) for label, found in timings.items()}  # by CPU time
        rows.append({
            "model": name, "stage": stage, "tier": tier.NAME, "batch": BATCH, "threads": 1,
            "float32_cpu_s": best["float32"][0], "int8_cpu_s": best["int8"][0],
            "float32_wall_s": best["float32"][1], "int8_wall_s": best["int8"][1],
            "speedup": best["float32"][0] / best["int8"][0],
            "int8_kernel": stage3_c.quantized.int8_kernel() if tier is stage3_c else None,
        })  # fmt: skip
    return rows


def _markdown(record):
    lines = [
        "# INT8 post-training quantization against float32",
        "",
        f"Generated by `python -m bench.int8` on {record['machine']['processor']} "
        f"({record['machine']['cpu_count']} cores), {record['date']}; not typed.",
        "",
        f"Targets: int8 accuracy within {100 * TARGET_ACCURACY_DROP:.1f} points of float32, the "
        f"same prediction on at least {100 * TARGET_AGREEMENT:.1f}% of test images; batch "
        f"{BATCH} faster than float32 on the same tier.",
        "",
        "| model | calibrator | images | float32 acc. | int8 acc. | drop (points) | agreement "
        "| targets met |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for row in record["accuracy"]:
        drop = 100 * (row["float32_accuracy"] - row["int8_accuracy"])
        met = drop <= 100 * TARGET_ACCURACY_DROP and row["agreement"] >= TARGET_AGREEMENT
        lines.append(
            f"| {row['model']} ({row['data']}) | {row['method']} | {row['calibration']} | "
            f"{row['float32_accuracy']:.4f} | {row['int8_accuracy']:.4f} | {drop:+.2f} | "
            f"{100 * row['agreement']:.2f}% | {'yes' if met else 'no'} |"
        )
    lines += ["", "Each quantized layer's output error (RMS of int8 - float32 over RMS of "
              "float32, one batch of test images; errors accumulate through the layers):", "",
              "| model | calibrator | " + "layer errors |", "| --- | --- | --- |"]  # fmt: skip
    for row in record["accuracy"]:
        errors = ", ".join(f"{path}: {100 * e:.2f}%" for path, e in row["layer_errors"].items())
        lines.append(f"| {row['model']} | {row['method']} | {errors} |")
    lines += ["", f"Batch {BATCH} inference, one thread, best of {record['repeats']} "
              "(CPU time; the two models in turn):", "",
              "| model | stage | float32 ms | int8 ms | int8 speedup | int8 kernel |",
              "| --- | --- | ---: | ---: | ---: | --- |"]  # fmt: skip
    for row in record["speed"]:
        lines.append(
            f"| {row['model']} | {row['stage']} ({row['tier']}) | {1e3 * row['float32_cpu_s']:.1f} "
            f"| {1e3 * row['int8_cpu_s']:.1f} | {row['speedup']:.2f}x | "
            f"{row['int8_kernel'] or '-'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.int8", description=__doc__)
    parser.add_argument("--model", action="append", required=True, metavar="NAME=CHECKPOINT")
    parser.add_argument("--stages", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--calibration", type=int, default=1000)
    parser.add_argument("--time-method", choices=METHODS, default="percentile")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--data-dir")
    parser.add_argument("--int8-dir", type=Path, default=Path("runs/int8"))
    parser.add_argument("--output", type=Path, required=True, help="writes OUTPUT.json, .md")
    args = parser.parse_args(argv)
    record = {"machine": machine(), "date": time.strftime("%Y-%m-%d"), "batch": BATCH,
              "repeats": args.repeats, "accuracy": [], "speed": []}  # fmt: skip
    for entry in args.model:
        name, _, checkpoint = entry.partition("=")
        record["accuracy"] += accuracy_rows(name, checkpoint, args.stages[-1], args.calibration,
                                            args.int8_dir, args.data_dir)  # fmt: skip
        int8_checkpoint = args.int8_dir / f"{name}-int8-{args.time_method}.npz"
        record["speed"] += speed_rows(name, checkpoint, int8_checkpoint, args.stages,
                                      args.repeats, args.data_dir)  # fmt: skip
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.with_suffix(".json").write_text(json.dumps(record, indent=2) + "\n")
    args.output.with_suffix(".md").write_text(_markdown(record))
    print(_markdown(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())

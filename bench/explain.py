"""Grad-CAM from our tiers (nn/explain.py) against the `grad-cam` package, and the randomization
sanity check of Adebayo et al. (2018).

    python -m bench.explain --checkpoint runs/lenet5-mnist-stage2/best.npz

1. Agreement: the checkpoint's weights go into an equivalent PyTorch model (bench/epoch.py's
   `to_torch`, layer by layer); on the first --count test images, each tier of --stages computes
   the map of the predicted class through the default layer (the last conv) with its own forward
   and backward, and pytorch_grad_cam.GradCAM computes it with PyTorch's autograd. Per image: the
   Pearson correlation of the two maps (target >= 0.99). A map that is nowhere positive is all
   zeros in both (counted apart: a correlation with a constant is undefined); one flat and the
   other not is a disagreement.
2. Sanity: a map that explains the model must change when the model does. The trained weights of
   the convolutions are re-initialized at random, cascading from the top (the last conv, then
   every conv), several seeds each; per image, the correlation of the map with the trained
   model's (expected to fall well below 0.5 for most images).

Writes OUTPUT.json (every correlation), OUTPUT.md (the tables, generated from the JSON) and
OUTPUT.png (a few images: our maps, grad-cam's, and with every conv re-initialized). Needs
PyTorch and grad-cam, optional extras (`pip install -r requirements-oracle.txt`).
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from bench.epoch import to_torch
from nn.backend import STAGES, load_tier, refuse_simulated
from nn.data import Normalizer, load_data
from nn.exits import reporting
from nn.explain import default_layer, grad_cam, save_overlays
from nn.layers import Conv2d
from nn.models import build_model
from nn.predict import load_model
from nn.recipes import Recipe
from nn.report import machine

GRID_IMAGES = 8  # images shown in OUTPUT.png


def pearson(first, second):
    """Per image, the Pearson correlation of maps [N, H, W]; NaN where either map is flat."""
    first = first.reshape(len(first), -1).astype(np.float64)
    second = second.reshape(len(second), -1).astype(np.float64)
    first = first - first.mean(axis=1, keepdims=True)
    second = second - second.mean(axis=1, keepdims=True)
    norms = np.linalg.norm(first, axis=1) * np.linalg.norm(second, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norms > 0, (first * second).sum(axis=1) / norms, np.nan)


def flat(maps):
    """Per map [N, H, W]: True where it is constant (nowhere positive before scaling)."""
    return np.ptp(maps.reshape(len(maps), -1), axis=1) == 0


def distribution(values):
    """Summary figures of correlations (NaNs, the undefined ones, counted apart)."""
    defined = values[~np.isnan(values)]
    if not len(defined):
        return {"defined": 0, "undefined": int(len(values))}
    return {
        "defined": int(len(defined)),
        "undefined": int(np.isnan(values).sum()),
        "mean": float(defined.mean()),
        "min": float(defined.min()),
        "p10": float(np.percentile(defined, 10)),
        "median": float(np.median(defined)),
        "p90": float(np.percentile(defined, 90)),
        "max": float(defined.max()),
        "below_0.5": float((defined < 0.5).mean()),
    }


def theirs(torch, model, images, classes, layer):
    """grad-cam's maps [N, H, W] for `model`'s weights copied into PyTorch."""
    from pytorch_grad_cam import GradCAM
    from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget

    net = to_torch(model, torch)
    position = list(model.net.children()).index(layer)
    with GradCAM(net, [net[position]]) as cam:
        targets = [ClassifierOutputTarget(int(c)) for c in classes]
        return cam(torch.from_numpy(images), targets)


def agreement_row(stage, ours, reference, seconds):
    """One tier's maps against grad-cam's: correlations and flat maps."""
    ours_flat, their_flat = flat(ours), flat(reference)
    correlations = pearson(ours, reference)
    return {
        "stage": stage,
        "seconds": seconds,
        "both_flat": int((ours_flat & their_flat).sum()),
        "one_flat": int((ours_flat ^ their_flat).sum()),
        "correlation": distribution(correlations),
        "below_0.99": int((correlations[~np.isnan(correlations)] < 0.99).sum()),
        "largest_difference": float(np.abs(ours - reference).max()),
        "per_image": [None if np.isnan(r) else float(r) for r in correlations],
    }


def randomized(checkpoint, tier, conv_names, seed):
    """The checkpoint's model with the weights and biases of the layers `conv_names` drawn afresh
    from the model's initializer with `seed` (every other parameter trained)."""
    model, meta = load_model(checkpoint, tier)
    fresh = build_model(meta["model"], meta["input_shape"], meta["num_classes"],
                        **meta["model_options"]).build(tier, seed)  # fmt: skip
    fresh_parameters = fresh.parameters()
    for name, parameter in model.parameters().items():
        if name.partition(".")[0] in conv_names:
            parameter.value = fresh_parameters[name].value
    return model


def sanity_rows(checkpoint, tier, images, classes, layer, trained_maps, seeds):
    """Cascading randomization of the convolutions, from the top: per step and seed, the
    correlation of each image's map with the trained model's."""
    model, _ = load_model(checkpoint, tier)
    convs = [name for name, child in model.net.children().items() if isinstance(child, Conv2d)]
    rows = []
    for depth in range(1, len(convs) + 1):
        names = convs[-depth:]
        correlations, flat_maps = [], 0
        for seed in seeds:
            maps = grad_cam(randomized(checkpoint, tier, names, seed), images, classes, layer)
            correlations.append(pearson(trained_maps, maps))
            flat_maps += int(flat(maps).sum())
        values = np.concatenate(correlations)
        rows.append({"randomized": names, "seeds": list(seeds), "flat_maps": flat_maps,
                     "described": [model.net.children()[name].describe() for name in names],
                     "correlation": distribution(values)})  # fmt: skip
    return rows


def run(args):
    try:
        import pytorch_grad_cam  # noqa: F401
        import torch
    except ImportError:
        raise ValueError("bench.explain compares with the grad-cam package (PyTorch): "
                         "pip install -r requirements-oracle.txt") from None
    if 4 in args.stages:  # at once, before the CPU tiers' work
        refuse_simulated(4, None, "bench.explain's stage 4 side",
                         "run --stages 1 2 3 here and --stages 2 4 on a machine with a GPU")
    torch.set_num_threads(1)
    started = time.strftime("%Y-%m-%d")
    model, meta = load_model(args.checkpoint, load_tier(2))
    test = load_data(meta["data"], args.data_dir, 0,
                     Recipe.from_json(meta["recipe"]).synthetic_size).test  # fmt: skip
    if not 1 <= args.count <= len(test):
        raise ValueError(f"--count must be in [1, {len(test)}], got {args.count}")
    pixels = test.inputs[:args.count]
    images = Normalizer.from_json(meta["normalizer"])(pixels)
    logits = model.tier.to_numpy(model.forward(model.tier.from_numpy(images)))
    classes = model.loss.predict(logits)
    layer = default_layer(model)
    reference = theirs(torch, model, images, classes, layer)
    record = {
        "command": args.command, "date": started, "machine": machine(),
        "checkpoint": str(args.checkpoint), "model": meta["model"], "data": meta["data"],
        "checkpoint_epochs": meta.get("progress", {}).get("epoch"),
        "images": args.count, "layer": layer,
        "layer_described": model.net.children()[layer].describe(),
        "test_accuracy_of_these": float((classes == test.labels[:args.count]).mean()),
        "agreement": [], "sanity": [],
    }  # fmt: skip
    maps = {}
    for stage in args.stages:
        tier = load_tier(stage)
        staged, _ = load_model(args.checkpoint, tier)
        clock = time.perf_counter()
        maps[stage] = grad_cam(staged, images, classes, layer)
        seconds = time.perf_counter() - clock
        record["agreement"].append(agreement_row(stage, maps[stage], reference, seconds))
        print(_agreement_line(record["agreement"][-1]))
    trained = maps[args.stages[-1]]
    record["sanity"] = sanity_rows(args.checkpoint, load_tier(args.stages[-1]), images, classes,
                                   layer, trained, args.seeds)  # fmt: skip
    shown = slice(0, min(GRID_IMAGES, args.count))
    everything = randomized(args.checkpoint, load_tier(args.stages[-1]),
                            record["sanity"][-1]["randomized"], args.seeds[0])  # fmt: skip
    random_maps = grad_cam(everything, images[shown], classes[shown], layer)
    names = meta["class_names"]
    titles = ([f"ours (stage {args.stages[-1]}): {names[c]}" for c in classes[shown]]
              + [f"grad-cam: {names[c]}" for c in classes[shown]]
              + ["convs re-initialized"] * len(random_maps))  # fmt: skip
    grid_pixels = np.concatenate([pixels[shown]] * 3)
    grid_maps = np.concatenate([trained[shown], reference[shown], random_maps])
    args.output.parent.mkdir(parents=True, exist_ok=True)
    save_overlays(grid_pixels, grid_maps, titles, args.output.with_suffix(".png"),
                  columns=len(random_maps))  # fmt: skip
    args.output.with_suffix(".json").write_text(json.dumps(record, indent=2) + "\n")
    args.output.with_suffix(".md").write_text(markdown(record, args.output.name))
    print(markdown(record, args.output.name))
    return 0


def _agreement_line(row):
    figures = row["correlation"]
    return (f"stage {row['stage']}: correlation with grad-cam mean {figures.get('mean', 'n/a')}, "
            f"min {figures.get('min', 'n/a')} over {figures['defined']} maps "
            f"({row['both_flat']} flat in both, {row['one_flat']} flat in one)")


def markdown(record, stem):
    """The record's tables."""
    lines = [
        f"# Grad-CAM of {record['model']} on {record['data']}: our tiers against grad-cam",
        "",
        f"`{record['command']}` on {record['machine']['processor']}, {record['date']}: a "
        f"checkpoint of {record['checkpoint_epochs']} epoch(s) of nn.train. "
        f"The first {record['images']} test images, each explained for its predicted class "
        f"(right on {record['test_accuracy_of_these']:.0%} of them) through layer "
        f"{record['layer']}, {record['layer_described']}.",
        "",
        "## Agreement with pytorch_grad_cam.GradCAM (same weights, PyTorch's autograd)",
        "",
        "Pearson correlation per image between our map and grad-cam's (target >= 0.99). A map "
        "nowhere positive is all zeros (a correlation with a constant is undefined): counted "
        "apart, in both or in one.",
        "",
        "| stage | mean | min | 1 - min | images < 0.99 | flat in both | flat in one "
        "| largest difference | seconds |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in record["agreement"]:
        figures = row["correlation"]
        lines.append(
            f"| {row['stage']} | {figures['mean']:.6f} | {figures['min']:.6f} | "
            f"{1 - figures['min']:.1e} | "
            f"{row['below_0.99']} | {row['both_flat']} | {row['one_flat']} | "
            f"{row['largest_difference']:.1e} | {row['seconds']:.3f} |"
        )
    lines += [
        "",
        "## Sanity check (Adebayo et al., 2018): convolutions re-initialized",
        "",
        "The convolutions' weights and biases drawn afresh from the model's initializer, "
        "cascading from the top; per image and seed, the correlation of the map with the "
        "trained model's. A map that explains the model must change with it.",
        "",
        "| re-initialized | seeds | maps | mean | p10 | median | p90 | max | share < 0.5 "
        "| flat maps |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in record["sanity"]:
        figures = row["correlation"]
        layers = zip(row["randomized"], row["described"], strict=True)
        lines.append(
            f"| {', '.join(f'{name} {described}' for name, described in layers)} | "
            f"{len(row['seeds'])} | "
            f"{figures['defined']} | {figures['mean']:.3f} | {figures['p10']:.3f} | "
            f"{figures['median']:.3f} | {figures['p90']:.3f} | {figures['max']:.3f} | "
            f"{figures['below_0.5']:.0%} | {row['flat_maps']} |"
        )
    lines += ["", f"![our maps, grad-cam's, and with every conv re-initialized]({stem}.png)"]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.explain", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--stages", type=int, nargs="+", default=[1, 2, 3], choices=STAGES,
                        help="tiers computing the maps (the last one also runs the sanity check)")
    parser.add_argument("--count", type=int, default=100, help="test images (default 100)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3],
                        help="seeds of the re-initialized convolutions")
    parser.add_argument("--data-dir")
    parser.add_argument("--output", type=Path, default=Path("curriculum/results/explain-cpu"),
                        help="writes OUTPUT.json, .md, .png")
    args = parser.parse_args(argv)
    args.command = " ".join(["python -m bench.explain", *(sys.argv[1:] if argv is None else argv)])
    return reporting(lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())

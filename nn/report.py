"""What a finished run leaves behind: pictures in the run folder, and on request a results record
(JSON + Markdown + curves) under curriculum/results/ for the README and notebooks."""

import json
import os
import platform
import sys
from pathlib import Path

import numpy as np

from nn.plots import confusion_matrix, plot_confusion, plot_curves, plot_filters
from tiers.machine import cpu_model, gpu_name


def first_layer_weights(model):
    """The weight array of the first conv or linear layer, as NumPy, or None."""
    for name, param in model.parameters().items():
        if name.endswith("weight"):
            return model.tier.to_numpy(param.value)
    return None


def save_pictures(run_dir, model, data, history, test_labels, test_predictions, title):
    """curves.png, confusion.png and filters.png (when the first layer is image-like)."""
    run_dir = Path(run_dir)
    plot_curves(history, run_dir / "curves.png", title)
    counts = confusion_matrix(test_labels, test_predictions, data.num_classes)
    plot_confusion(counts, data.class_names, run_dir / "confusion.png", f"{title}: test set")
    weights = first_layer_weights(model)
    if weights is not None:
        plot_filters(weights, data.input_shape, run_dir / "filters.png", f"{title}: first layer")
    return counts


def machine():
    """Where the run happened, for the record."""
    return {
        "platform": platform.platform(),
        "processor": cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "gpu": gpu_name(),
    }


def write_results(results_dir, stem, record, run_dir):
    """results_dir/stem.json (the record), stem.md (a summary table), stem.png (the curves),
    stem-confusion.png and stem-filters.png (when the run drew them)."""
    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / f"{stem}.json").write_text(json.dumps(record, indent=2) + "\n")
    (results_dir / f"{stem}.md").write_text(_markdown(record))
    for picture, suffix in (("curves", ""), ("confusion", "-confusion"), ("filters", "-filters")):
        source = Path(run_dir) / f"{picture}.png"
        if source.is_file():
            (results_dir / f"{stem}{suffix}.png").write_bytes(source.read_bytes())


def _markdown(record):
    rows = [
        "| epoch | train loss | train acc | val loss | val acc | lr | seconds | images/s |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for m in record["history"]:
        rows.append(
            f"| {m['epoch']} | {m['train_loss']:.4f} | {m['train_accuracy']:.4f} | "
            f"{m.get('val_loss', float('nan')):.4f} | {m.get('val_accuracy', float('nan')):.4f} | "
            f"{m['lr']:.2e} | {m['seconds']:.1f} | {m['images_per_second']:.0f} |"
        )
    return "\n".join(
        [
            f"# {record['model']} on {record['data']}, stage {record['stage']} ({record['tier']})",
            "",
            f"**test accuracy {record['test_accuracy']:.4f}** (official test split, "
            f"{record['test_examples']} images; final weights after {record['epochs_run']} "
            f"epochs; best validation loss at epoch {record['best_val_epoch']})",
            "",
            f"Command: `{record['command']}`",
            "",
            f"Machine: {record['machine']['processor']}, {record['machine']['cpu_count']} CPUs, "
            + (f"GPU {record['machine']['gpu']}, " if record["machine"].get("gpu") else "")
            + f"numpy {record['machine']['numpy']}, BLAS threads {record['blas_threads']}. "
            f"Parameters: {record['parameters']:,}.",
            "",
            f"![training curves]({record['stem']}.png)",
            "",
            *rows,
            "",
        ]
    )


def command_line():
    return "python -m nn.train " + " ".join(sys.argv[1:])

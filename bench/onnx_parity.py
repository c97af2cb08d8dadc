"""ONNX Runtime against our tiers on the whole test set: the same logits, argmax and accuracy.

    python -m bench.onnx_parity --checkpoint runs/lenet5-mnist-stage2/best.npz --stages 2,3
    python -m bench.onnx_parity --checkpoint CKPT --stages 4 --variant nvcc     (a GPU machine)

The checkpoint is exported (nn/export.py; or --onnx FILE, a file exported from it) and run by ONNX
Runtime's CPUExecutionProvider on every test image as a user feeds it (bytes / 255, float32),
and the checkpoint runs on each tier named. Per tier: the largest |our logit - ONNX Runtime's|,
the error bound of every logit (bench/logit_bound.py: derived from the lengths of the network's
sums and the magnitudes of its values, per example) and how many logits exceed it, the images
whose argmax differs, and both accuracies to the image. Writes OUTPUT.json and OUTPUT.md (the
table generated from the record); exits 1 when a tier is outside the bound or disagrees anywhere.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime

from bench.logit_bound import logit_bound
from nn.backend import STAGES, VARIANTS, load_tier, refuse_simulated
from nn.data import Normalizer
from nn.evaluate import logits_of, test_split
from nn.exits import reporting
from nn.export import export_model
from nn.import_onnx import load_onnx
from nn.onnx_format import INPUT, LOGITS, OPSET
from nn.predict import load_model
from nn.report import machine

ORT_BATCH = 1000
PROVIDER = "CPUExecutionProvider"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.onnx_parity",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--onnx", type=Path, metavar="FILE",
                        help="an ONNX file exported from the checkpoint (default: export it now)")
    parser.add_argument("--stages", default="2,3", help="comma-separated, e.g. 2,3 or 2,3,4")
    parser.add_argument("--variant", choices=VARIANTS, help="stage 4's variant")
    parser.add_argument("--data-dir")
    parser.add_argument("--output", type=Path,
                        help="write OUTPUT.json and OUTPUT.md (default: runs/onnx-parity-MODEL)")
    return parser.parse_args(argv)


def stages_of(text):
    try:
        stages = [int(stage) for stage in text.split(",")]
    except ValueError:
        stages = None
    if not stages or any(stage not in STAGES for stage in stages):
        raise ValueError(f"--stages must be a comma-separated list of {list(STAGES)}, got {text!r}")
    return stages


def runtime_logits(proto_bytes, pixels):
    """ONNX Runtime's logits [N, outputs] for float32 inputs, ORT_BATCH at a time."""
    session = onnxruntime.InferenceSession(proto_bytes, providers=[PROVIDER])
    return np.concatenate([
        session.run([LOGITS], {INPUT: pixels[start:start + ORT_BATCH]})[0]
        for start in range(0, len(pixels), ORT_BATCH)
    ])


def user_inputs(inputs, normalizer):
    """What a user feeds the graph: float32 pixels in [0, 1] (an image's bytes / 255), or points."""
    values = inputs.astype(np.float32)
    return values / np.float32(255) if normalizer.is_image else values


def compare(model, ours, theirs, bound, labels):
    """The parity record of one tier's logits `ours` against ONNX Runtime's `theirs`."""
    difference = np.abs(ours.astype(np.float64) - theirs.astype(np.float64))
    finite = np.isfinite(ours) & np.isfinite(theirs)
    outside = int(np.sum(~finite | ~(difference <= bound)))
    ours_predicted, theirs_predicted = model.loss.predict(ours), model.loss.predict(theirs)
    disagreements = int(np.sum(ours_predicted != theirs_predicted))
    right, right_theirs = (int(np.sum(p == labels)) for p in (ours_predicted, theirs_predicted))
    return {
        "max_abs_difference": float(np.max(np.where(finite, difference, np.inf))),
        "max_bound": float(np.max(bound)),
        "median_bound": float(np.median(bound)),
        "max_difference_over_bound": float(np.max(np.where(finite, difference / bound, np.inf))),
        "logits_outside_bound": outside,
        "argmax_disagreements": disagreements,
        "right": right,
        "right_onnxruntime": right_theirs,
        "accuracy": right / len(labels),
        "accuracy_onnxruntime": right_theirs / len(labels),
        "passed": outside == 0 and disagreements == 0 and right == right_theirs,
    }


def run(args):
    stages = stages_of(args.stages)
    reference, meta = load_model(args.checkpoint, load_tier(2))
    normalizer = Normalizer.from_json(meta["normalizer"])
    proto = load_onnx(args.onnx) if args.onnx else export_model(reference, meta)
    test = test_split(meta, args.data_dir)

    started = time.perf_counter()
    theirs = runtime_logits(proto.SerializeToString(), user_inputs(test.inputs, normalizer))
    runtime_seconds = time.perf_counter() - started
    bound = logit_bound(reference, normalizer, test.inputs)
    tiers = []
    for stage in stages:
        if stage == 4:
            refuse_simulated(4, args.variant, "running the test set",
                             "run this stage on a machine with an NVIDIA GPU")
        tier = load_tier(stage, None, args.variant if stage == 4 else None)
        model = reference if stage == 2 else load_model(args.checkpoint, tier)[0]
        started = time.perf_counter()
        ours = logits_of(model, normalizer, test.inputs)
        seconds = time.perf_counter() - started
        row = compare(model, ours, theirs, bound, test.labels)
        tiers.append({"stage": stage, "tier": tier.NAME, "seconds": seconds, **row})
        print(f"stage {stage} ({tier.NAME}): max |diff| {row['max_abs_difference']:.3g}, bound "
              f"{row['max_bound']:.3g} (max diff/bound {row['max_difference_over_bound']:.3g}), "
              f"{row['logits_outside_bound']} logits outside, {row['argmax_disagreements']} "
              f"argmax disagreements, accuracy {row['accuracy']:.4f} vs ONNX Runtime "
              f"{row['accuracy_onnxruntime']:.4f}")
    opsets = {entry.domain: entry.version for entry in proto.opset_import}
    return {
        "model": reference.name,
        "data": meta["data"],
        "checkpoint": str(args.checkpoint),
        "trained_epochs": (meta.get("progress") or {}).get("epoch"),
        "recipe": meta.get("recipe"),
        "onnx_file": str(args.onnx) if args.onnx else None,
        "command": "python -m bench.onnx_parity " + " ".join(sys.argv[1:]),
        "opset": opsets.get("", opsets.get("ai.onnx", OPSET)),
        "onnx": onnx.__version__,
        "onnxruntime": onnxruntime.__version__,
        "provider": PROVIDER,
        "onnxruntime_seconds": runtime_seconds,
        "test_examples": len(test),
        "bound": "per logit, SUM_DRIFT (8) standard deviations of the difference of two "
                 "float32 runs (bench/logit_bound.py): each sum of n products adds the variance "
                 "2 ((sqrt(n) + 1) u a)^2, a the sum of its products' magnitudes, and carries "
                 "the variance before it through W^2",
        "machine": machine(),
        "tiers": tiers,
        "passed": all(row["passed"] for row in tiers),
    }


def markdown(record):
    """The table of a record, for the pages."""
    lines = [
        f"# ONNX Runtime against our tiers: {record['model']} on {record['data']}",
        "",
        f"{record['test_examples']:,} test images; ONNX Runtime {record['onnxruntime']} "
        f"({record['provider']}), opset {record['opset']}; "
        f"{record['machine']['processor']} ({record['machine']['cpu_count']} CPUs)"
        + (f", {record['machine']['gpu']}" if record["machine"].get("gpu") else "") + ".",
        f"Checkpoint: `{record['checkpoint']}`, trained for {record['trained_epochs']} "
        f"epoch{'' if record['trained_epochs'] == 1 else 's'}."
        if record.get("onnx_file") is None else
        f"ONNX file: `{record['onnx_file']}`, exported from `{record['checkpoint']}`.",
        "Bound: " + record["bound"] + ".",
        "",
        "| stage | tier | max abs logit diff | max bound | max diff / bound | logits outside "
        "| argmax differs | accuracy (ours) | accuracy (ONNX Runtime) | verdict |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in record["tiers"]:
        lines.append(
            f"| {row['stage']} | {row['tier']} | {row['max_abs_difference']:.2e} "
            f"| {row['max_bound']:.2e} | {row['max_difference_over_bound']:.3f} "
            f"| {row['logits_outside_bound']} | {row['argmax_disagreements']} "
            f"| {row['accuracy']:.4f} ({row['right']}) "
            f"| {row['accuracy_onnxruntime']:.4f} ({row['right_onnxruntime']}) "
            f"| {'same' if row['passed'] else 'DIFFERENT'} |"
        )
    lines += ["", f"Command: `{record['command']}`", ""]
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    return reporting(lambda: measure(args))


def measure(args):
    """Run the comparison, write its record and table; 0 when every tier agrees, else 1."""
    record = run(args)
    output = args.output or Path("runs") / f"onnx-parity-{record['model']}"
    output.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{output}.json").write_text(json.dumps(record, indent=2) + "\n")
    Path(f"{output}.md").write_text(markdown(record))
    print(f"wrote {output}.json and {output}.md")
    return 0 if record["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())

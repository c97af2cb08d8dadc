"""INT8 against float32: accuracy, agreement and error per layer for each calibrator, batch-256
inference time side by side, our int8 model's QDQ export in ONNX Runtime, and ONNX Runtime's own
static quantizer, in one run; writes OUTPUT.json and OUTPUT.md.

The checkpoints of the committed record (curriculum/results/int8-cpu), trained briefly here:

    NN_DATA_DIR=/work/shared/datasets make train STAGE=3 \
        ARGS='--model lenet5 --data mnist --epochs 2 --run-dir runs/lenet5-mnist-2ep'
    make train STAGE=3 ARGS='--model fashion_cnn --data fashion-mnist --epochs 3 \
        --run-dir runs/fashion_cnn-fashion-mnist-3ep'
    python -m bench.int8 --model lenet5=runs/lenet5-mnist-2ep/best.npz \
        --model fashion_cnn=runs/fashion_cnn-fashion-mnist-3ep/best.npz \
        --stages 2 3 --output curriculum/results/int8-cpu

On a machine with an NVIDIA GPU (the nvcc library built: python -m stage4_cuda.nvcc_build), the
stage 4 side: both variants, float32 against int8 at batch 256, the int8 model on each rung of the
variant's INT8_KERNELS (nvcc: dp4a, mma; numba has one, its int32 tiles). On nvcc each rung also
runs with the convolutions fused with their pooling (nn.quantized.fuse_int8: a kernel of their
own on __dp4a, the rung then the linear layers' GEMM), beside the unfused path.

    python -m bench.int8 --model lenet5=runs/lenet5-mnist-2ep/best.npz \
        --model fashion_cnn=runs/fashion_cnn-fashion-mnist-3ep/best.npz \
        --stages 4 --output curriculum/results/int8-gpu

For every model and calibrator (nn/quantize.py's methods) the int8 model is written to --int8-dir
and evaluated on the whole test split on the last of --stages (the C tier by default): the test
accuracy of both, the share of test images where both predict the same class, and each quantized
layer's output error relative to the float model's (root mean square of the difference over that
of the float output, on one batch). Then each stage runs the float and the int8 model (the
--time-method's) on the same batch of 256 test images, in turn, on one thread (NumPy's BLAS
limited by threadpoolctl, C's set_num_threads(1)), best of --repeats by the process's CPU time,
which a shared machine's load does not lengthen. Stage 4 is timed by the wall clock around the
forward pass, the GPU synchronized before and after (its time is the GPU's, not the host's load):
the float model's forward, its inference mode and the int8 forward launched from Python, and, on
the variant that captures CUDA graphs (nvcc), the inference mode and the int8 forward as one graph
each, whose ratio is the kernels' (eager, a batch-256 pass of LeNet-5 is mostly host launches).

With a CPU stage in --stages, two ONNX Runtime comparisons (CPU provider):
- our int8 model (the --time-method's) exported as a QDQ graph (nn.export) and run by ONNX
  Runtime on the whole test split against our int8 forward: codes, logits and argmax
  (bench/qdq_parity.py says what agrees and why a handful of images may not);
- ONNX Runtime's quantize_static on our exported float32 graph, fed the same calibration images,
  for each of its calibrators (bench/ort_quantize.py): its accuracy and agreement with its float32
  run, and its int8/float32 speed ratio at batch 256, its sessions on one thread as ours.
"""

import argparse
import functools
import importlib
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime
from threadpoolctl import threadpool_limits

from bench.onnx_parity import user_inputs
from bench.ort_quantize import (
    CALIBRATORS,
    quantize_with_runtime,
    runtime_predictions,
    runtime_speed,
)
from bench.qdq_parity import compare_qdq
from nn.backend import VARIANTS, load_tier, refuse_simulated
from nn.data import Normalizer, load_data
from nn.evaluate import test_split
from nn.exits import reporting
from nn.export import export_model, save_onnx
from nn.inference import prepare_for_inference
from nn.predict import load_model
from nn.quantize import METHODS, calibration_images, predictions, quantize_checkpoint
from nn.quantized import FUSED_OPS, quantizable_layers, quantized_layers
from nn.recipes import Recipe
from nn.report import machine

BATCH = 256
GPU_WARMUP = 3  # forward passes before timing: numba compiles its kernels on the first
GPU_INSTEAD = (
    "Run bench.int8's stage 4 side on a machine with an NVIDIA GPU: python -m "
    "stage4_cuda.nvcc_build && python -m bench.int8 --model lenet5=runs/lenet5-mnist-2ep/best.npz "
    "--model fashion_cnn=runs/fashion_cnn-fashion-mnist-3ep/best.npz --stages 4 "
    "--output curriculum/results/int8-gpu; here, --stages 2 3."
)
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
    float output after the ReLU the codes include, and after the max-pooling too where the layer's
    kernel pools them (nn.quantized.fuse_int8)."""
    expected = layer_outputs(float_model, quantizable_layers(float_model.net), images)
    layers = quantized_layers(int8_model)
    found = layer_outputs(int8_model, layers, images, lambda layer, y: layer.dequantize(y))
    errors = {}
    for path, want in expected.items():
        if layers[path].output_code and layers[path].output_code[2]:  # the ReLU is in the codes
            want = np.maximum(want, 0.0)
        if layers[path].pool > 1:
            want = max_pooled(want, layers[path].pool)
        errors[path] = float(np.sqrt(np.mean((found[path] - want) ** 2) / np.mean(want**2)))
    return errors


def max_pooled(x, pool):
    """x [N, C, H, W] max-pooled over pool x pool windows at stride pool (NumPy)."""
    n, c, h, w = x.shape
    windows = x[:, :, : h // pool * pool, : w // pool * pool]
    return windows.reshape(n, c, h // pool, pool, w // pool, pool).max(axis=(3, 5))


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
        test = test_split(meta, data_dir)
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
            # the rung the C tier chose at run time (stage 2 has one path)
            "int8_kernel": getattr(tier.quantized, "int8_kernel", lambda: None)(),
        })  # fmt: skip
    return rows


class RungTier:
    """`tier` with its int8 GEMMs (RUNG_OPS) on rung `kernel` of its INT8_KERNELS: a model's int8
    layers given one, timed on that rung. (The nvcc variant's fused int8_conv2d_pool_to_int8 has
    one kernel of its own, on __dp4a, whatever the rung.)"""

    RUNG_OPS = ("int8_linear", "int8_conv2d", "int8_linear_to_int8", "int8_conv2d_to_int8",
                "int8_linear_packed")  # fmt: skip

    def __init__(self, tier, kernel):
        self.tier, self.kernel = tier, kernel

    def __getattr__(self, name):
        op = getattr(self.tier, name)
        if name in self.RUNG_OPS:
            return functools.partial(op, kernel=self.kernel)
        return op


def int8_rungs(tier):
    """The rungs of the tier's INT8_KERNELS (its quantized module's), or [None]: one int8 path."""
    module = importlib.import_module(f"{tier.__name__}.quantized")
    return list(getattr(module, "INT8_KERNELS", ())) or [None]


def conv_paths(tier):
    """Whether the int8 convolutions run fused with their pooling (nn.quantized.fuse_int8): both
    where the tier has the fused kernels, side by side; else the unfused path only."""
    return (False, True) if all(hasattr(tier, op) for op in FUSED_OPS) else (False,)


def gpu_timed(tier, forward):
    """The wall time of one call of `forward`, the GPU synchronized before and after."""
    tier.synchronize()
    started = time.perf_counter()
    forward()
    tier.synchronize()
    return time.perf_counter() - started


def graph_launch(tier, forward):
    """forward() captured as one CUDA graph where the tier records its calls (the nvcc variant:
    record_step and capture_graph, as bench.inference captures the inference mode): the graph's
    launch; None for a tier that captures none."""
    if not all(hasattr(tier, hook) for hook in ("record_step", "capture_graph")):
        return None
    _, recording = tier.record_step(forward)
    return tier.capture_graph(recording).launch


def gpu_speed_rows(name, checkpoint, int8_checkpoint, repeats, data_dir):
    """Per stage-4 variant and int8 rung, the passes on one batch of 256, in turn, by the
    GPU-synchronized wall clock: eager, the float model's forward, its inference mode
    (nn/inference.py: folded, fused) and the int8 model's forward; and where the tier captures
    CUDA graphs, the inference mode and the int8 forward each as one graph, where the host's
    launches (most of an eager batch-256 pass of LeNet-5) no longer hide the kernels' times."""
    rows = []
    for variant in VARIANTS:
        tier = load_tier(4, None, variant)
        float_model, meta = load_model(checkpoint, tier)
        inference = prepare_for_inference(float_model)
        test = test_split(meta, data_dir)
        images = tier.from_numpy(Normalizer.from_json(meta["normalizer"])(test.inputs[:BATCH]))
        for rung, fused in itertools.product(int8_rungs(tier), conv_paths(tier)):
            int8_model, _ = load_model(int8_checkpoint, tier, fused=fused)
            if rung is not None:
                for layer in quantized_layers(int8_model).values():
                    layer.tier = RungTier(tier, rung)
            passes = {"float32": float_model.forward, "float32_inference": inference.forward,
                      "int8": int8_model.forward}  # fmt: skip
            best = best_times(tier, passes, images, repeats)
            graphed = "int8_graph" in best
            rows.append({
                "model": name, "stage": 4, "variant": variant, "tier": tier.NAME, "batch": BATCH,
                "int8_kernel": (rung or "int32 tiles") + (", fused conv" if fused else ""),
                "float32_s": best["float32"],
                "float32_inference_s": best["float32_inference"], "int8_s": best["int8"],
                "speedup": best["float32"] / best["int8"],
                "float32_graph_s": best.get("float32_graph"),
                "int8_graph_s": best.get("int8_graph"),
                "graph_speedup": best["float32_graph"] / best["int8_graph"] if graphed else None,
            })  # fmt: skip
    return rows


def best_times(tier, passes, images, repeats):
    """The best of `repeats` GPU-synchronized wall times of each forward of `passes` (label:
    forward) on `images`, and of the float32 inference mode and the int8 forward as CUDA graphs
    (labels float32_graph, int8_graph) where the tier captures them; all in turn, as on the CPU."""
    calls = {label: functools.partial(forward, images) for label, forward in passes.items()}
    graphs = {"float32_graph": graph_launch(tier, calls["float32_inference"]),
              "int8_graph": graph_launch(tier, calls["int8"])}  # fmt: skip
    calls.update((label, launch) for label, launch in graphs.items() if launch)
    for call in calls.values():
        for _ in range(GPU_WARMUP):
            call()
    timings = {label: [] for label in calls}
    for _ in range(repeats):
        for label, call in calls.items():
            timings[label].append(gpu_timed(tier, call))
    return {label: min(found) for label, found in timings.items()}


def qdq_row(name, int8_checkpoint, stage, out_dir, data_dir):
    """Our int8 model's QDQ export (written beside its checkpoint) in ONNX Runtime against our
    int8 forward on stage `stage`, on the whole test split."""
    # unchained: the QDQ graph quantizes floats at each layer's input, as the unchained model does
    model, meta = load_model(int8_checkpoint, load_tier(stage), chained=False)
    proto = export_model(model, meta)
    path = Path(out_dir) / f"{Path(int8_checkpoint).stem}.onnx"
    save_onnx(proto, path)
    test = test_split(meta, data_dir)
    row = compare_qdq(model, proto, test.inputs, Normalizer.from_json(meta["normalizer"]))
    return {"model": name, "method": meta["quantization"]["method"], "stage": stage,
            "onnx": str(path), **row}  # fmt: skip


def runtime_rows(name, checkpoint, calibration, out_dir, repeats, data_dir):
    """ONNX Runtime's quantize_static on our float32 export, per calibrator: accuracy, agreement
    with its float32 run, and int8/float32 speed at batch 256 on one thread."""
    model, meta = load_model(checkpoint, load_tier(2))
    normalizer = Normalizer.from_json(meta["normalizer"])
    float_path = Path(out_dir) / f"{name}-float32.onnx"
    save_onnx(export_model(model, meta), float_path)
    recipe = Recipe.from_json(meta["recipe"])
    data = load_data(meta["data"], data_dir, recipe.val_size, recipe.synthetic_size)
    pixels = calibration_images(data, calibration, lambda raw: user_inputs(raw, normalizer))
    test_pixels = user_inputs(data.test.inputs, normalizer)
    labels = data.test.labels
    float_predictions = runtime_predictions(float_path, test_pixels)
    rows = []
    for method in CALIBRATORS:
        int8_path = Path(out_dir) / f"{name}-ort-int8-{method}.onnx"
        quantize_with_runtime(float_path, int8_path, pixels, method)
        found = runtime_predictions(int8_path, test_pixels)
        speed = runtime_speed(float_path, int8_path, test_pixels[:BATCH], repeats)
        rows.append({
            "model": name, "data": meta["data"], "method": method, "calibration": calibration,
            "onnxruntime": onnxruntime.__version__, "format": "QDQ, per-channel int8 weights, "
            "int8 activations per tensor (S8S8)", "int8_onnx": str(int8_path),
            "float32_accuracy": float(np.mean(float_predictions == labels)),
            "int8_accuracy": float(np.mean(found == labels)),
            "agreement": float(np.mean(found == float_predictions)),
            "batch": BATCH, "threads": 1,
            "float32_cpu_s": speed["float32"][0], "int8_cpu_s": speed["int8"][0],
            "float32_wall_s": speed["float32"][1], "int8_wall_s": speed["int8"][1],
            "speedup": speed["float32"][0] / speed["int8"][0],
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
    if record["speed"]:
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
    if record.get("qdq"):
        lines += ["", "Our int8 model (the timed calibrator's) exported as a QDQ graph "
                  "(`python -m nn.export`) and run by ONNX Runtime (CPU) against our int8 forward "
                  "on the whole test split. ONNX Runtime fuses the QDQ pairs into its int8 kernels "
                  "(QLinearConv, QGemm), which requantize a layer's output in their own float "
                  "steps: a code differs where a value lies within float32 rounding of a tie "
                  "(x / scale = k + 0.5), and the image's later layers then see other inputs "
                  "(bench/qdq_parity.py):", "",
                  "| model | calibrator | images | same argmax | images with another code | "
                  "their first differences all one code at a tie | argmax differing with every "
                  "code ours | largest relative logit difference, every code ours |",
                  "| --- | --- | ---: | ---: | ---: | --- | ---: | ---: |"]  # fmt: skip
        for row in record["qdq"]:
            lines.append(
                f"| {row['model']} | {row['method']} | {row['images']} | "
                f"{100 * row['argmax_agreement']:.2f}% ({row['argmax_disagreements']} differ) | "
                f"{row['images_with_other_codes']} | "
                f"{'yes' if row['other_codes_only_at_ties'] else 'no'} | "
                f"{row['disagreements_with_same_codes']} | "
                f"{row['max_relative_difference_same_codes']:.1e} |"
            )
    if record.get("onnxruntime"):
        first = record["onnxruntime"][0]
        lines += ["", f"ONNX Runtime {first['onnxruntime']}'s own static quantizer "
                  "(`quantize_static`, QDQ, per-channel int8 weights, int8 activations per "
                  "tensor) on our exported float32 graph, calibrated on the same "
                  f"{first['calibration']} training images; its sessions on one thread "
                  "(intra_op_num_threads=1), float32 and int8 in turn, best of "
                  f"{record['repeats']} by CPU time, batch {BATCH}; ours beside it (the table "
                  "above):", "",
                  "| model | quantizer | calibrator | float32 acc. | int8 acc. | agreement | "
                  "float32 ms | int8 ms | int8 speedup |",
                  "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
        for row in record["onnxruntime"]:
            lines.append(
                f"| {row['model']} | ONNX Runtime | {row['method']} | "
                f"{row['float32_accuracy']:.4f} | {row['int8_accuracy']:.4f} | "
                f"{100 * row['agreement']:.2f}% | {1e3 * row['float32_cpu_s']:.1f} | "
                f"{1e3 * row['int8_cpu_s']:.1f} | {row['speedup']:.2f}x |"
            )
        ours = {(row["model"], row["method"]): row for row in record["accuracy"]}
        for row in record["speed"]:
            mine = ours[(row["model"], record["time_method"])]
            lines.append(
                f"| {row['model']} | ours, stage {row['stage']} ({row['tier']}) | "
                f"{record['time_method']} | {mine['float32_accuracy']:.4f} | "
                f"{mine['int8_accuracy']:.4f} | {100 * mine['agreement']:.2f}% | "
                f"{1e3 * row['float32_cpu_s']:.1f} | {1e3 * row['int8_cpu_s']:.1f} | "
                f"{row['speedup']:.2f}x |"
            )
    if record.get("gpu_speed"):
        lines += ["", f"Stage 4 on {record['machine']['gpu']}: batch {BATCH}, best of "
                  f"{record['repeats']} by the wall clock with the GPU synchronized around each "
                  "pass, the passes in turn, the int8 model on each rung (`fused conv`: its "
                  "convolutions and their pooling as one kernel each). Eager: the float "
                  "model's forward, its inference mode (BatchNorm folded, conv + bias + ReLU + "
                  "pool fused) and the int8 forward, each launched kernel by kernel from Python; "
                  "the `eager speedup` is the forward's time over the int8 one's. As a CUDA graph "
                  "(where the tier captures one): the inference mode and the int8 forward, each "
                  "one launch, so the kernels' time, not the host's; the `graph speedup` is the "
                  "first over the second.", "",
                  "| model | variant | int8 rung | float32 ms | float32 inference ms | int8 ms | "
                  "eager speedup | float32 graph ms | int8 graph ms | graph speedup |",
                  "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
                  ]  # fmt: skip
        for row in record["gpu_speed"]:
            graphed = row["graph_speedup"] is not None
            graph = (
                f"{1e3 * row['float32_graph_s']:.3f} | {1e3 * row['int8_graph_s']:.3f} | "
                f"{row['graph_speedup']:.2f}x"
                if graphed
                else "not captured | | "
            )
            lines.append(
                f"| {row['model']} | {row['variant']} | {row['int8_kernel']} | "
                f"{1e3 * row['float32_s']:.3f} | {1e3 * row['float32_inference_s']:.3f} | "
                f"{1e3 * row['int8_s']:.3f} | {row['speedup']:.2f}x | {graph} |"
            )
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.int8", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", action="append", required=True, metavar="NAME=CHECKPOINT")
    parser.add_argument("--stages", type=int, nargs="+", default=[2, 3], choices=[2, 3, 4])
    parser.add_argument("--calibration", type=int, default=1000)
    parser.add_argument("--time-method", choices=METHODS, default="percentile")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--data-dir")
    parser.add_argument("--int8-dir", type=Path, default=Path("runs/int8"))
    parser.add_argument("--output", type=Path, required=True, help="writes OUTPUT.json, .md")
    args = parser.parse_args(argv)
    return reporting(lambda: run(args))


def run(args):
    cpu_stages = [stage for stage in args.stages if stage != 4]
    if 4 in args.stages:  # at once, before minutes of CPU work
        for variant in VARIANTS:
            refuse_simulated(4, variant, "bench.int8's stage 4 side", GPU_INSTEAD)
    record = {"machine": machine(), "date": time.strftime("%Y-%m-%d"), "batch": BATCH,
              "repeats": args.repeats, "time_method": args.time_method, "accuracy": [],
              "speed": [], "qdq": [], "onnxruntime": [], "gpu_speed": []}  # fmt: skip
    for entry in args.model:
        name, _, checkpoint = entry.partition("=")
        record["accuracy"] += accuracy_rows(name, checkpoint, args.stages[-1], args.calibration,
                                            args.int8_dir, args.data_dir)  # fmt: skip
        int8_checkpoint = args.int8_dir / f"{name}-int8-{args.time_method}.npz"
        if cpu_stages:
            record["speed"] += speed_rows(name, checkpoint, int8_checkpoint, cpu_stages,
                                          args.repeats, args.data_dir)  # fmt: skip
            record["qdq"].append(qdq_row(name, int8_checkpoint, cpu_stages[-1], args.int8_dir,
                                         args.data_dir))  # fmt: skip
            record["onnxruntime"] += runtime_rows(name, checkpoint, args.calibration,
                                                  args.int8_dir, args.repeats, args.data_dir)
        if 4 in args.stages:
            record["gpu_speed"] += gpu_speed_rows(name, checkpoint, int8_checkpoint,
                                                  args.repeats, args.data_dir)  # fmt: skip
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.with_suffix(".json").write_text(json.dumps(record, indent=2) + "\n")
    args.output.with_suffix(".md").write_text(_markdown(record))
    print(_markdown(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())

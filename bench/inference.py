"""Inference speed: latency at batch 1 and throughput at batch 256, per model and tier, against
the production runtimes, side by side in one run on one machine.

    python -m bench.inference                          (stages 2 and 3 on the CPU)
    python -m bench.inference --stage 4                (on a GPU; both variants unless --variants)
    python -m bench.inference --output curriculum/results/inference-cpu

Every side runs the same model with the same weights (LeNet-5 and the Fashion CNN, freshly
initialized: speed does not depend on training) on the same random images:

- each tier's training-mode forward (what nn's trainer calls: every layer keeps what its
  backward needs) and its inference mode (nn/inference.py: BatchNorm folded, conv + bias + ReLU
  + max-pool as one op, nothing kept); on stage 4 also the inference mode recorded once and
  launched as a CUDA graph where the tier captures one (the nvcc variant);
- on the CPU: ONNX Runtime (the CPU execution provider, all graph optimizations) and PyTorch
  eager under torch.inference_mode();
- on a GPU: PyTorch eager, the same as a CUDA graph (torch.cuda.graphs), and torch.compile, with
  TF32 off (the tiers compute in float32).
TensorRT, the GPU's production runtime, is not installed on the GPU machines here and cannot be
brought there: no TensorRT row is measured (the ONNX file `--onnx PATH` writes is what
`trtexec --onnx=PATH` would take).

Before it is timed, each side's logits are compared with the tier's inference mode (the
largest difference is recorded). Each side on the CPU uses the same number of threads
(`--threads`, default 1: this machine's cores are shared). A measurement runs calls for at least
`--seconds` and gives the mean time per call, by the process's CPU time on the CPU with one
thread (every side then runs on the calling thread, and a shared machine's other work does not
lengthen it, as in the grader's speed checks), else by the wall clock; each side keeps the
fastest of `--repeats` measurements, taken in turns with the other sides. Writes OUTPUT.json and
OUTPUT.md (the table, generated from the JSON).
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from bench.epoch import collector_paused, to_torch
from nn.backend import TierError, load_tier, refuse_simulated, runs_on_gpu
from nn.inference import prepare_for_inference
from nn.layers import Conv2d, Dropout, Flatten, Linear, MaxPool2d, ReLU
from nn.models import build_model
from nn.report import machine
from tiers import VARIANTS

MODELS = ("lenet5", "fashion_cnn")
BATCHES = (1, 256)
INPUT = (1, 28, 28)
OPSET = 17
IR_VERSION = 8  # what opset 17 came with: ONNX Runtime 1.31 reads IR versions up to 13


def onnx_graph(model):
    """The model as an ONNX ModelProto (input "x" [N, 1, 28, 28] float32, output "logits"), built
    with the onnx package's helpers from the layers of LeNet-5 and the Fashion CNN: a stand-in for
    nn's exporter, enough for this benchmark."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes, weights, previous = [], [], "x"
    for index, layer in enumerate(model.net.layers):
        name = f"layer{index}"
        params = {key: np.asarray(model.tier.to_numpy(p.value), np.float32)
                  for key, p in layer.params.items()}  # fmt: skip
        inputs = [previous] + [f"{name}.{key}" for key in params]
        weights += [numpy_helper.from_array(value, f"{name}.{key}")
                    for key, value in params.items()]  # fmt: skip
        if type(layer) is Conv2d:
            pads = [layer.padding] * 4
            node = helper.make_node("Conv", inputs, [name], pads=pads,
                                    strides=[layer.stride] * 2)  # fmt: skip
        elif type(layer) is Linear:
            node = helper.make_node("Gemm", inputs, [name], transB=1)
        elif type(layer) is MaxPool2d:
            node = helper.make_node("MaxPool", [previous], [name],
                                    kernel_shape=[layer.kernel_size] * 2,
                                    strides=[layer.stride] * 2)  # fmt: skip
        elif type(layer) is ReLU:
            node = helper.make_node("Relu", [previous], [name])
        elif type(layer) is Flatten:
            node = helper.make_node("Flatten", [previous], [name], axis=1)
        elif type(layer) is Dropout:
            continue  # the identity at inference
        else:
            raise ValueError(f"onnx_graph: no ONNX node for {layer.describe()}")
        nodes.append(node)
        previous = name
    nodes.append(helper.make_node("Identity", [previous], ["logits"]))
    graph = helper.make_graph(
        nodes, model.name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", *INPUT])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", model.num_classes])],
        weights)  # fmt: skip
    proto = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION
    )
    onnx.checker.check_model(proto, full_check=True)
    return proto


# The clocks a measurement may read: on the CPU with one thread, the process's CPU time, which a
# shared machine's other work does not lengthen (the grader's choice, grader/speed.py: every side
# here runs on the calling thread then); else the wall clock.
CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}
CLOCK_NAMES = {"cpu": "process's CPU time", "wall": "wall clock"}


def seconds_per_call(call, synchronize, minimum, clock):
    """Mean seconds of call() (then synchronize()) by `clock`, over calls lasting at least
    `minimum` s of it."""
    call()
    synchronize()  # a first call outside the timing: allocations, compilation, caches
    with collector_paused():
        calls, started = 0, clock()
        while True:
            call()
            synchronize()
            calls += 1
            elapsed = clock() - started
            if elapsed >= minimum:
                return elapsed / calls


class Side:
    """One way of running a model: `call()` runs it on the side's input, `logits()` returns its
    output as NumPy (for the check before timing)."""

    def __init__(self, name, call, logits, synchronize=lambda: None):
        self.name, self.call, self.logits, self.synchronize = name, call, logits, synchronize


def tier_sides(stage, tier, model, images):
    """The tier's training-mode forward, its inference mode, and (where the tier captures CUDA
    graphs) the inference mode as one graph."""
    x = tier.from_numpy(images)
    inference = prepare_for_inference(model)

    def training():
        model.train()
        return model.forward(x)

    def to_numpy(run):
        return lambda: np.asarray(tier.to_numpy(run()))

    sides = [
        Side(
            f"stage {stage} ({tier.NAME}), training-mode forward",
            training,
            to_numpy(training),
            tier.synchronize,
        ),
        Side(
            f"stage {stage} ({tier.NAME}), inference mode",
            lambda: inference.forward(x),
            to_numpy(lambda: inference.forward(x)),
            tier.synchronize,
        ),
    ]
    if all(hasattr(tier, hook) for hook in ("record_step", "capture_graph")):
        logits, recording = tier.record_step(lambda: inference.forward(x))
        graph = tier.capture_graph(recording)
        sides.append(Side(f"stage {stage} ({tier.NAME}), inference mode as a CUDA graph",
                          graph.launch, lambda: (graph.launch(), np.asarray(tier.to_numpy(
                              logits)))[1], tier.synchronize))  # fmt: skip
    return sides


def onnxruntime_side(model, images, threads):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = threads
    session = onnxruntime.InferenceSession(onnx_graph(model).SerializeToString(), options,
                                           providers=["CPUExecutionProvider"])  # fmt: skip
    run = lambda: session.run(["logits"], {"x": images})[0]  # noqa: E731
    return Side(f"ONNX Runtime {onnxruntime.__version__} (CPU)", run, run)


def torch_sides(torch, model, images, device):
    """PyTorch eager, and on a GPU also as a CUDA graph and through torch.compile."""
    net = to_torch(model, torch).to(device).eval()
    x = torch.from_numpy(images).to(device)
    synchronize = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def eager():
        with torch.inference_mode():
            return net(x)

    def as_numpy(run):
        return lambda: run().float().cpu().numpy()

    where = "CPU" if device == "cpu" else "GPU"
    sides = [Side(f"PyTorch {torch.__version__} eager ({where})", eager, as_numpy(eager),
                  synchronize)]  # fmt: skip
    if device == "cuda":
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream), torch.inference_mode():
            for _ in range(3):  # warm-up on a side stream, as torch.cuda.graphs asks
                net(x)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph), torch.inference_mode():
            captured = net(x)
        sides.append(
            Side(
                "PyTorch CUDA graph (GPU)",
                graph.replay,
                as_numpy(lambda: (graph.replay(), captured)[1]),
                synchronize,
            )
        )
        compiled = torch.compile(net)

        def compiled_call():
            with torch.inference_mode():
                return compiled(x)

        sides.append(Side("PyTorch torch.compile (GPU)", compiled_call, as_numpy(compiled_call),
                          synchronize))  # fmt: skip
    return sides


def measure(sides, repeats, minimum, clock):
    """{side name: seconds per call of each measurement}, the sides taking turns `repeats` times."""
    times = {side.name: [] for side in sides}
    for _ in range(repeats):
        for side in sides:
            times[side.name].append(seconds_per_call(side.call, side.synchronize, minimum, clock))
    return times


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.inference",
                                     description=__doc__.split("\n")[0])  # fmt: skip
    parser.add_argument(
        "--stage",
        type=int,
        nargs="+",
        default=[2, 3],
        choices=(2, 3, 4),
        help="the tiers to time (4: on a GPU, against PyTorch on it)",
    )
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS,
                        help="stage 4's variants to time (default: both)")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--threads", type=int, default=1, help="CPU threads of every side")
    parser.add_argument("--repeats", type=int, default=3, help="measurements per side")
    parser.add_argument("--seconds", type=float, default=0.3, help="least time of a measurement")
    parser.add_argument("--onnx", type=Path, help="also write each model's ONNX graph, PATH-MODEL")
    parser.add_argument(
        "--output",
        type=Path,
        default=Path("runs/inference/inference"),
        help="write OUTPUT.json and OUTPUT.md",
    )
    args = parser.parse_args(argv)
    gpu = any(runs_on_gpu(stage) for stage in args.stage)
    try:
        if gpu and args.stage != [4]:
            raise TierError("--stage 4 runs alone (the GPU side); the CPU tiers run without it")
        refuse_simulated(
            args.stage[-1],
            None,
            "bench.inference",
            "Time the CPU tiers here; stage 4 on a machine with an NVIDIA GPU.",
        )
        tiers = [(stage, load_tier(stage, variant=variant)) for stage in args.stage
                 for variant in (args.variants if runs_on_gpu(stage) else [None])]
    except TierError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:
        torch = None
    skipped = [] if torch else ["PyTorch: not installed (pip install -r requirements-oracle.txt)"]
    if gpu and torch is None:
        print("error: bench.inference --stage 4 compares with PyTorch on the GPU: "
              "pip install -r requirements-oracle.txt", file=sys.stderr)  # fmt: skip
        return 2
    if torch:
        torch.set_num_threads(args.threads)
        if gpu:
            torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    threadpool_limits(args.threads)  # NumPy's BLAS
    for _, tier in tiers:
        if hasattr(tier, "set_num_threads"):  # stage 3's OpenMP, which threadpoolctl leaves alone
            tier.set_num_threads(args.threads)
    if gpu:
        skipped.append("TensorRT: not installed on the GPU machines here")
    clock = "cpu" if not gpu and args.threads == 1 else "wall"
    rows = []
    for name in args.models:
        for batch in BATCHES:
            images = np.random.default_rng(batch).random((batch, *INPUT), dtype=np.float32)
            sides, reference = [], None
            for stage, tier in tiers:
                model = build_model(name, INPUT, 10).build(tier, seed=0)
                sides += tier_sides(stage, tier, model, images)
                reference = reference or model
            if args.onnx and batch == BATCHES[0]:
                path = args.onnx.with_name(f"{args.onnx.name}-{name}.onnx")
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(onnx_graph(reference).SerializeToString())
            if not gpu:
                sides.append(onnxruntime_side(reference, images, args.threads))
            if torch:
                sides += torch_sides(torch, reference, images, "cuda" if gpu else "cpu")
            expected = sides[1].logits()  # the first tier's inference mode
            differences = {side.name: float(np.max(np.abs(side.logits() - expected)))
                           for side in sides}  # fmt: skip
            times = measure(sides, args.repeats, args.seconds, CLOCKS[clock])
            for side in sides:
                seconds = min(times[side.name])
                rows.append({"model": name, "batch": batch, "side": side.name,
                             "seconds": seconds, "seconds_all": times[side.name],
                             "images_per_second": batch / seconds,
                             "max_abs_difference": differences[side.name]})  # fmt: skip
                print(
                    f"{name}, batch {batch}: {side.name}: {seconds * 1e3:.3f} ms, "
                    f"{batch / seconds:,.0f} images/s",
                    flush=True,
                )
    record = {
        "command": "python -m bench.inference " + " ".join(sys.argv[1:] if argv is None else argv),
        "stages": args.stage,
        "threads": args.threads,
        "repeats": args.repeats,
        "seconds": args.seconds,
        "clock": clock,
        "torch": torch.__version__ if torch else None,
        "skipped": skipped,
        "machine": machine(),
        "results": rows,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.with_suffix(".json").write_text(json.dumps(record, indent=2) + "\n")
    args.output.with_suffix(".md").write_text(markdown(record))
    print(f"wrote {args.output.with_suffix('.json')} and {args.output.with_suffix('.md')}")
    return 0


def markdown(record):
    """The record's table: per model and batch, each side's time and its ratio to the fastest
    production runtime of the run (ONNX Runtime on the CPU, PyTorch's CUDA graph on a GPU)."""
    where = record["machine"].get("gpu") if 4 in record["stages"] else None
    threads = f"{record['threads']} thread" + ("s" if record["threads"] > 1 else "")
    device = where or f"{record['machine']['processor']}, {threads}"
    lines = [
        f"# Inference: latency at batch 1, throughput at batch 256 ({device})",
        "",
        f"Command: `{record['command']}`. Machine: {record['machine']['processor']}, "
        f"{record['machine']['cpu_count']} CPUs" + (f", {where}" if where else "") + ". "
        f"Each side: the fastest of {record['repeats']} measurements of at least "
        f"{record['seconds']} s each by the {CLOCK_NAMES[record['clock']]}, the sides taking "
        "turns. Same weights and images on every "
        "side; `difference`: the largest |logit - the first tier's inference-mode logit|. "
        "`vs runtime`: the time of the production runtime's row over this row's (above 1: "
        "faster than it).",
        "",
    ]
    lines += [f"Not measured: {reason}." for reason in record["skipped"]]
    lines += [""] if record["skipped"] else []
    lines += ["| model | batch | side | ms per batch | images/s | vs runtime | difference |",
              "| --- | ---: | --- | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for row in record["results"]:
        runtime = _runtime_seconds(record, row["model"], row["batch"])
        ratio = f"{runtime / row['seconds']:.2f}" if runtime else ""
        lines.append(f"| {row['model']} | {row['batch']} | {row['side']} | "
                     f"{row['seconds'] * 1e3:.3f} | {row['images_per_second']:,.0f} | {ratio} | "
                     f"{row['max_abs_difference']:.1e} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def _runtime_seconds(record, model, batch):
    """The production runtime's time for (model, batch): ONNX Runtime, or PyTorch's CUDA graph."""
    for row in record["results"]:
        if (row["model"], row["batch"]) == (model, batch) and (
            row["side"].startswith("ONNX Runtime") or row["side"] == "PyTorch CUDA graph (GPU)"
        ):
            return row["seconds"]
    return None


if __name__ == "__main__":
    sys.exit(main())

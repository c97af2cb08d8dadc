"""Time the nvcc variant's memory-bound ops at large sizes against the copy bandwidth measured in
the same run (the target: elementwise ops, optimizer steps and batchnorm at >= 90% of it).

    python -m bench.memory_bound [--ops relu,adam_step,...] [--quick] [--write]
        times each op (CUDA events, a cold L2 before every repeat: grader/gpu_timing.py), prints
        the table; --write also writes curriculum/results/memory-cuda-h100.json and .md
    python -m bench.memory_bound --table curriculum/results/memory-cuda-h100.json
        prints the table of a record written before

An op's bytes are those its kernels must move between the GPU and its memory: each array read
and each array written once per pass the kernels make over it (a reduction that must see all of
x before it can normalize x reads x twice: batchnorm's 3 and 5 passes). GB/s is those bytes over
the median time, and `of copy` that over the copy bandwidth the grader measures
(grader/ceilings.py: the best of the driver's and PyTorch's device-to-device copy, read plus
written bytes), so 100% is a copy's speed. The time is the whole op as a user calls it, checks
included: the ops taking labels or argmax read their range back (a host round trip, and for
maxpool2d_backward a second read of the argmax), which the bytes do not count.

The epilogue rung: relu(x + b) as two ops (add with a broadcast row, then relu) against the fused
kernel (nvcc_impl.bias_relu), the same result in half the bytes.
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

RESULTS = Path("curriculum/results/memory-cuda-h100")  # .json and .md, from the repository root
TARGET = 0.90  # a share of the measured copy bandwidth
# Large sizes (the target is "at large sizes"): 256 MiB an array, so that a launch's few
# microseconds of ramp and tail weigh little beside a pass (at 64 MiB they already cost a
# memory-bound op a noticeable share, against a copy measured over 1 GiB).
SIDE = (8192, 8192)
ELEMENTS = SIDE[0] * SIDE[1]
PARAMETERS = ELEMENTS  # the optimizer steps' size
ROW_LABEL = "[{}x{}] + row [{}]".format(*SIDE, SIDE[1])  # a matrix and a broadcast row
POOL_X = (256, 128, 64, 64)  # k = stride = 2 (the grader's GPU pooling size)
NORM_X = (128, 128, 64, 64)
HINGE = (16384, 100)


def _cases(gpu, rng):
    """[(op, size label, make)], make() -> (call, bytes moved). Inputs are made on first use."""

    def normal(*shape):
        return gpu.from_numpy(rng.standard_normal(shape, dtype=np.float32))

    def labels(rows, classes):
        return gpu.from_numpy(rng.integers(0, classes, rows).astype(np.int64))

    four = 4 * ELEMENTS  # bytes of one SIDE array
    side = SIDE

    def unary(name, *extra):
        return lambda: ((lambda x: lambda: getattr(gpu, name)(x, *extra))(normal(*side)), 2 * four)

    def binary(name, *extra):
        def make():
            a, b = normal(*side), normal(*side)
            return (lambda: getattr(gpu, name)(a, b, *extra)), 3 * four

        return make

    def broadcast(name):
        def make():
            a, b = normal(*side), normal(side[1])
            return (lambda: getattr(gpu, name)(a, b)), 2 * four + 4 * side[1]

        return make

    def pool(kind, backward):
        x_size = int(np.prod(POOL_X))
        y_size = x_size // 4

        def make():
            x = normal(*POOL_X)
            if kind == "max":
                _, argmax = gpu.maxpool2d_forward(x, 2, 2)
                if backward:
                    dy = normal(*POOL_X[:2], POOL_X[2] // 2, POOL_X[3] // 2)
                    return (lambda: gpu.maxpool2d_backward(dy, argmax, POOL_X, 2, 2)), (
                        4 * y_size + 8 * y_size + 4 * x_size)
                return (lambda: gpu.maxpool2d_forward(x, 2, 2)), 4 * x_size + 12 * y_size
            if backward:
                dy = normal(*POOL_X[:2], POOL_X[2] // 2, POOL_X[3] // 2)
                return (lambda: gpu.avgpool2d_backward(dy, POOL_X, 2, 2)), 4 * (y_size + x_size)
            return (lambda: gpu.avgpool2d_forward(x, 2, 2)), 4 * (x_size + y_size)

        return make

    def batchnorm(backward):
        size, c = int(np.prod(NORM_X)), NORM_X[1]

        def make():
            x, gamma, beta = normal(*NORM_X), normal(c), normal(c)
            mean, var = normal(c), gpu.from_numpy(np.ones(c, np.float32))
            if backward:
                dy = normal(*NORM_X)
                _, saved = gpu.batchnorm_forward(x, gamma, beta, mean, var, True)
                return (lambda: gpu.batchnorm_backward(dy, x, gamma, saved)), 20 * size
            return (lambda: gpu.batchnorm_forward(x, gamma, beta, mean, var, True)), 12 * size

        return make

    def optimizer(name, states, *extra):
        def make():
            p, g = normal(PARAMETERS), normal(PARAMETERS)
            state = [gpu.from_numpy(np.zeros(PARAMETERS, np.float32)) for _ in range(states)]
            return (lambda: getattr(gpu, name)(p, g, *state, *extra)), 4 * PARAMETERS * (
                3 + 2 * states)

        return make

    def loss(name, backward):
        def make():
            a, b = normal(*side), gpu.from_numpy(rng.random(side, dtype=np.float32))
            return (lambda: getattr(gpu, name)(a, b)), (3 if backward else 2) * four

        return make

    def hinge(backward):
        rows, cols = HINGE

        def make():
            scores, y = normal(rows, cols), labels(rows, cols)
            op = gpu.hinge_loss_backward if backward else gpu.hinge_loss
            return (lambda: op(scores, y)), 4 * rows * cols * (2 if backward else 1) + 8 * rows

        return make

    def dropout(backward):
        def make():
            x = normal(*side)
            if backward:
                _, mask = gpu.dropout_forward(x, 0.5, 7)
                return (lambda: gpu.dropout_backward(x, mask, 0.5)), 3 * four
            return (lambda: gpu.dropout_forward(x, 0.5, 7)), 3 * four

        return make

    def transpose():
        x = normal(8000, 6000)
        return (lambda: gpu.transpose(x)), 2 * 4 * 8000 * 6000

    def sum_rows():
        x = normal(16384, 4096)
        return (lambda: gpu.sum_rows(x)), 4 * (16384 * 4096 + 4096)

    label = "[{}x{}]".format(*SIDE)
    norm_label = "[" + "x".join(map(str, NORM_X)) + "]"
    parameters_label = f"2^{PARAMETERS.bit_length() - 1}"
    alpha = {"leaky_relu": (0.01,)}  # the one activation with an argument besides its arrays
    names = ("relu", "leaky_relu", "sigmoid", "tanh")
    cases = [(name, label, unary(name, *alpha.get(name, ()))) for name in names]
    cases += [(f"{name}_backward", label, binary(f"{name}_backward", *alpha.get(name, ())))
              for name in names]  # fmt: skip
    cases += [
        ("add", label, binary("add")), ("mul", label, binary("mul")),
        ("add", ROW_LABEL, broadcast("add")),
        ("mul", f"{label} * row [{SIDE[1]}]", broadcast("mul")),
        ("scale", label, lambda: ((lambda x: lambda: gpu.scale(x, 0.5))(normal(*side)), 2 * four)),
        ("transpose", "[8000x6000]", transpose), ("sum_rows", "[16384x4096]", sum_rows),
        ("mse_loss", label, loss("mse_loss", False)),
        ("mse_loss_backward", label, loss("mse_loss_backward", True)),
        ("bce_with_logits_loss", label, loss("bce_with_logits_loss", False)),
        ("bce_with_logits_loss_backward", label, loss("bce_with_logits_loss_backward", True)),
        ("hinge_loss", "[16384x100]", hinge(False)),
        ("hinge_loss_backward", "[16384x100]", hinge(True)),
        ("maxpool2d_forward", "x[256x128x64x64], k=s=2", pool("max", False)),
        ("maxpool2d_backward", "x[256x128x64x64], k=s=2", pool("max", True)),
        ("avgpool2d_forward", "x[256x128x64x64], k=s=2", pool("avg", False)),
        ("avgpool2d_backward", "x[256x128x64x64], k=s=2", pool("avg", True)),
        ("batchnorm_forward", f"x{norm_label}, 3 passes", batchnorm(False)),
        ("batchnorm_backward", f"x{norm_label}, 5 passes", batchnorm(True)),
        ("dropout_forward", label, dropout(False)),
        ("dropout_backward", label, dropout(True)),
        ("sgd_step", parameters_label, optimizer("sgd_step", 0, 0.01)),
        ("momentum_step", parameters_label, optimizer("momentum_step", 1, 0.01, 0.9)),
        ("rmsprop_step", parameters_label, optimizer("rmsprop_step", 1, 0.01)),
        ("adam_step", parameters_label, optimizer("adam_step", 2, 1, 0.01)),
        ("xavier_uniform", label, lambda: ((lambda: gpu.xavier_uniform(side, 1)), four)),
        ("he_normal", label, lambda: ((lambda: gpu.he_normal(side, 1)), four)),
    ]  # fmt: skip
    return cases


def _epilogue(gpu, rng):
    """(bytes, {rung: call}) of relu(x + b) over SIDE: two ops, then the fused kernel."""
    x = gpu.from_numpy(rng.standard_normal(SIDE, dtype=np.float32))
    b = gpu.from_numpy(rng.standard_normal(SIDE[1], dtype=np.float32))
    return {
        "add + relu (two ops)": (lambda: gpu.relu(gpu.add(x, b)), 4 * 4 * ELEMENTS),
        "bias_relu (fused)": (lambda: gpu.bias_relu(x, b), 2 * 4 * ELEMENTS),
    }


def _row(op, size, nbytes, timing, copy):
    rate = nbytes / timing.median
    return {
        "op": op, "size": size, "bytes": nbytes, "median_s": timing.median, "q1_s": timing.q1,
        "q3_s": timing.q3, "repeats": timing.repeats, "host_s": timing.host, "gb_per_s": rate / 1e9,
        "of_copy": rate / copy,
    }  # fmt: skip


def measure(ops=None, quick=False):
    """The record: device, copy bandwidth, a row per op case, the epilogue rungs."""
    import stage4_cuda.nvcc_impl as gpu
    from grader.ceilings import measure_ceilings
    from grader.gpu_timing import l2_flush, measure_gpu

    ready, why = gpu.available()
    if not ready:
        raise SystemExit(f"memory_bound: the nvcc variant is unavailable: {why}")
    ceilings = measure_ceilings()
    copy = ceilings.bandwidth
    rng = np.random.default_rng(0)
    rows = []
    for op, size, make in _cases(gpu, rng):
        if ops and op not in ops:
            continue
        call, nbytes = make()
        timing, _ = measure_gpu(call, quick=quick, flush=l2_flush())
        rows.append(_row(op, size, nbytes, timing, copy))
        print(_line(rows[-1]), flush=True)
    epilogue = []
    if not ops or "bias_relu" in ops:
        for rung, (call, nbytes) in _epilogue(gpu, rng).items():
            timing, _ = measure_gpu(call, quick=quick, flush=l2_flush())
            epilogue.append(_row(rung, ROW_LABEL, nbytes, timing, copy))
            print(_line(epilogue[-1]), flush=True)
    return {
        "device": ceilings.device,
        "copy_bandwidth_gb_per_s": copy / 1e9,
        "target_of_copy": TARGET,
        "command": "python -m bench.memory_bound --write",
        "rows": rows,
        "epilogue": epilogue,
    }


def _line(row):
    return (f"{row['op']:32s} {row['size']:28s} {row['median_s'] * 1e6:9.1f} us "
            f"{row['gb_per_s']:7.0f} GB/s {100 * row['of_copy']:5.1f}% of copy")  # fmt: skip


def table(record):
    """The Markdown page of a record."""
    lines = [
        f"# Memory-bound ops of the nvcc variant on {record['device']}",
        "",
        f"Generated by `{record['command']}` (bench/memory_bound.py says how bytes are "
        "counted); do not edit. Copy bandwidth measured in the same run: "
        f"{record['copy_bandwidth_gb_per_s']:.0f} GB/s (read + written). Target: "
        f">= {100 * record['target_of_copy']:.0f}% of it for the elementwise ops, optimizer "
        "steps and batchnorm at large sizes.",
        "",
        "| op | size | median | bytes moved | GB/s | of copy |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for row in record["rows"]:
        lines.append(_table_row(row))
    if record["epilogue"]:
        lines += ["", "Fused bias + activation epilogue, relu(x + b):", "",
                  "| rung | size | median | bytes moved | GB/s | of copy |",
                  "| --- | --- | ---: | ---: | ---: | ---: |"]  # fmt: skip
        lines += [_table_row(row) for row in record["epilogue"]]
        two, fused = (row["median_s"] for row in record["epilogue"])
        lines += ["", f"The fused kernel takes {fused / two:.2f}x the two ops' time."]
    return "\n".join(lines) + "\n"


def _table_row(row):
    return (f"| {row['op']} | {row['size']} | {row['median_s'] * 1e6:.1f} us | "
            f"{row['bytes'] / 1e6:.0f} MB | {row['gb_per_s']:.0f} | "
            f"{100 * row['of_copy']:.1f}% |")  # fmt: skip


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", help="comma-separated op names (default: all; bias_relu: the "
                        "epilogue rungs)")  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--write", action="store_true", help=f"write {RESULTS}.json and .md")
    parser.add_argument("--out", type=Path, help="also write memory-bench.json and .md here")
    parser.add_argument("--table", type=Path, help="print the table of a record written before")
    args = parser.parse_args(argv)
    if args.table:
        print(table(json.loads(args.table.read_text())), end="")
        return 0
    record = measure(set(args.ops.split(",")) if args.ops else None, args.quick)
    page = table(record)
    print(page, end="")
    targets = [(RESULTS, args.write), (args.out / "memory-bench" if args.out else None, args.out)]
    for stem, wanted in targets:
        if wanted:
            stem.parent.mkdir(parents=True, exist_ok=True)
            stem.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")
            stem.with_suffix(".md").write_text(page)
            print(f"wrote {stem}.json and .md")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The figures of the week pages (curriculum/weekNN.md) are the committed records' figures.

Each claim below is a phrase of a page with its figures formatted from where they come from: a
record under curriculum/results/, or the code that states them (a target, a threshold, a model's
parameter count). The page must hold the phrase word for word (line breaks, blockquote marks and
repeated spaces aside), so a record regenerated with other figures fails here until its page says
what the record says. A figure with a unit (%, x, TFLOP/s, GB/s, MB, GB, us, ms, s, parameters)
that lies in no claim fails too, unless NOT_MEASURED says why it needs no record."""

import json
import re
import sys
from pathlib import Path

import pytest
from conftest import load_tier

from bench.speedrun import TARGET_ACCURACY
from grader import policy
from nn.models import build_model

REPO = Path(__file__).resolve().parent.parent
CURRICULUM = REPO / "curriculum"
RESULTS = CURRICULUM / "results"
WEEK_PAGES = sorted(CURRICULUM.glob("week*.md"))
FIGURE = re.compile(
    r"(?<![\w.\[/-])\d[\d,]*(?:\.\d+)?(?:-\d+(?:\.\d+)?)?"
    r"(?:%|x\b| (?:TFLOP/s|GFLOP/s|GB/s|MB|GB|KB|us|ms|s|parameters)\b)"
)

# Figures that are not measurements, each with why (page, phrase, reason).
NOT_MEASURED = [
    ("week05.md", "(about 9x)", "arithmetic: a 3x3 kernel copies each pixel 9 times"),
    ("week09.md", "0.95% error", "LeCun et al.'s published figure, cited as theirs"),
    ("week14.md", "4 parameters a thread", "what the code does, not a measurement"),
    ("week18.md", "50 MB L2", "the H100's specification"),
    ("week18.md", "248 MB zip", "the archive's size, checked by datasets/tiny_imagenet.py"),
    ("week18.md", "(4.7 GB as float32)",
     "arithmetic: 95,000 training images x 3 x 64 x 64 x 4 bytes (nn/device_data.py)"),
    ("week18.md", "as uint8 (1.2 GB)", "arithmetic: 100,000 x 3 x 64 x 64 bytes"),
    ("week19.md", "on at least 99% of the test images", "the week's target for the learner's "
     "own int8 model, not a measurement"),
    ("week23.md", "at least 98% on MNIST and 88% on Fashion-MNIST", "the course's targets for "
     "the learner's ViT, not measurements"),
]  # fmt: skip


def record(name):
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def percent(share, digits=1):
    return f"{100 * share:.{digits}f}%"


def text_of(page):
    """The page as one line: blockquote marks dropped, every run of spaces one space."""
    lines = page.read_text(encoding="utf-8").splitlines()
    lines = (re.sub(r"^\s*>\s?", "", line) for line in lines)
    return " ".join(" ".join(lines).split())


def speed_rows(name):
    """(op, size, timing) of every speed row of a grade record."""
    rows = record(name)["runs"][0]["results"]
    return [(row["op"], row["size"], row["timing"]) for row in rows if row["check"] == "speed"]


def parameters(model, shape, classes):
    count = build_model(model, shape, classes).build(load_tier("numpy"), seed=0).parameter_count()
    return f"{count:,} parameters"


# --- the claims: page -> functions returning the phrases the page must hold -----------------------


def week09():
    accuracy = {model: record(f"train-{model}-mnist-stage2.json")["test_accuracy"]
                for model in ("mlp", "lenet5")}  # fmt: skip
    checks = (REPO / "tests" / "nn_exercise_checks.py").read_text(encoding="utf-8")
    minimums = set(re.findall(r"train_on_mnist\(impl, \"\w+\", \d+, minimum=([\d.]+)", checks))
    assert len(minimums) == 1, minimums  # the page gives one threshold for both models
    return [
        parameters("lenet5", (1, 28, 28), 10),
        f"at least {percent(float(minimums.pop()), 0)} test accuracy each",
        f"about {percent(accuracy['mlp'], 0)} and {percent(accuracy['lenet5'], 0)} test accuracy "
        f"(the project's own stage 2 runs: {percent(accuracy['mlp'], 2)} and "
        f"{percent(accuracy['lenet5'], 2)},",
    ]


def week10():
    accuracy = record("train-fashion_cnn-fashion-mnist-stage2.json")["test_accuracy"]
    return [parameters("fashion_cnn", (1, 28, 28), 10),
            f"about {percent(accuracy, 1)} test accuracy (the project's own stage 2 run: "
            f"{percent(accuracy, 2)},"]  # fmt: skip


def week11():
    kernels = {row["size"]: row["timing"]["gflops"] for row in record("bench-stage3.json")["runs"]
               [0]["results"] if row["check"] in ("kernel", "library")}  # fmt: skip
    naive = kernels["naive, 1 thread, 1024x1024x1024"]
    openblas = kernels["NumPy/OpenBLAS, 1 thread, 1024x1024x1024"]
    asked = policy.STAGE3_OVER_STAGE2["matmul"]
    return [f"(about {naive / openblas:.3f}x of OpenBLAS on one thread; {asked:g}x is asked)"]


def week14():
    relu = [t for op, size, t in speed_rows("grade-stage4-numba.json") if op == "relu"][-1]
    return [f"relu on x[4096x4096] reaches {percent(relu['roofline_share'])} of its roofline, the "
            "copy bandwidth"]  # fmt: skip


def week15():
    ladder = record("matmul-numba-h100.json")["sizes"]
    large, small = ladder["4096"], ladder["1024"]

    def tflops(rung, size=large):
        return f"{size[rung]['gflops'] / 1000:.1f}"

    kernels = [name for name in large if not name.startswith("cuBLAS")]
    best = max(kernels, key=lambda name: large[name]["gflops"])
    return [
        f"cuBLAS runs 4096^3 at {tflops('cuBLAS (torch.matmul)')} TFLOP/s and the shared-memory "
        f"`tiled` rung at {tflops('tiled')} TFLOP/s, {percent(large['tiled']['share_of_cublas'])} "
        "of it.",
        f"`\"best\"` is `{best}`, the fastest measured on an H100 "
        f"({percent(large[best]['share_of_cublas'])} of cuBLAS at 4096^3, {tflops(best)} TFLOP/s; "
        f"`register_2d_prefetch` {percent(large['register_2d_prefetch']['share_of_cublas'])}:",
        f"`register_1d` ran 4096^3 at {tflops('register_1d')} TFLOP/s against `tiled`'s "
        f"{tflops('tiled')}, and `register_2d` ran 1024^3 at {tflops('register_2d', small)} "
        f"TFLOP/s against `register_1d`'s {tflops('register_1d', small)};",
        f"(`register_2d_prefetch`, {tflops('register_2d_prefetch')} TFLOP/s at 4096^3)",
    ]


def week17():
    def accuracy(model, data, tier):
        return percent(record(f"train-{model}-{data}-{tier}.json")["test_accuracy"], 2)

    bench = [row["ratio"] for row in record("nn-bench-stage4.json")["results"]]
    race = {(row["model"], row["batch_size"]): row for row in record("race-h100.json")["results"]}
    graphs = [row["graph_over_graph"] for row in race.values()]
    target = re.search(r"nvcc recorded <= ([\d.]+)x PyTorch eager",
                       (RESULTS / "race-h100.md").read_text(encoding="utf-8"))[1]  # fmt: skip
    speedrun = record("speedrun-h100.json")
    lowest = min(run["test_accuracy"] for run in speedrun["runs"])
    assert speedrun["reached"] and lowest >= TARGET_ACCURACY

    def ratio(model, batch):
        return f"{race[(model, batch)]['recorded_over_eager']:.2f}x"

    return [
        f"numba: LeNet-5 {accuracy('lenet5', 'mnist', 'stage4-numba')}, the Fashion-MNIST CNN "
        f"{accuracy('fashion_cnn', 'fashion-mnist', 'stage4-numba')}, one epoch "
        f"{min(bench):.0f}-{max(bench):.0f}x PyTorch eager's time",
        f"nvcc, on an H100: LeNet-5 {accuracy('lenet5', 'mnist', 'stage4-nvcc')} (`--graph`), the "
        f"CNN {accuracy('fashion_cnn', 'fashion-mnist', 'stage4-nvcc')};",
        f"recorded steps take {ratio('lenet5', 64)} and {ratio('lenet5', 256)} PyTorch eager's "
        f"epoch for LeNet-5 at batch 64 and 256, {ratio('fashion_cnn', 64)} and "
        f"{ratio('fashion_cnn', 256)} for the CNN (the target is {target}x;",
        f"CUDA graphs {min(graphs):.2f}x to {max(graphs):.2f}x PyTorch's own graphs",
        f"reaches {percent(lowest, 2)} or more on every seed in "
        f"{speedrun['mean_seconds']:.3f} s on average",
        parameters("fashion_cnn", (1, 28, 28), 10),
        f"trains MNIST to {percent(TARGET_ACCURACY)} test accuracy",
        f"every seed must still reach {percent(TARGET_ACCURACY)}",
        f"(the committed runs: {accuracy('fashion_cnn', 'fashion-mnist', 'stage2')} on stage 2, "
        f"{accuracy('fashion_cnn', 'fashion-mnist', 'stage4-numba')} on the numba variant, "
        f"{accuracy('fashion_cnn', 'fashion-mnist', 'stage4-nvcc')} on the nvcc one)",
    ]


def under_one_percent():
    """The ops of the H100 grade with a speed row under 1% of the roofline, as week 18 lists them:
    `op` (share), or `op` (layer: share; ...) where the size names a layer."""
    found = {}
    for op, size, timing in speed_rows("grade-stage4-numba.json"):
        if timing.get("roofline_share") is not None and timing["roofline_share"] < 0.01:
            layer = size.split(" (")[0] + ": " if " (" in size else ""
            found.setdefault(op, []).append(layer + percent(timing["roofline_share"], 2))
    return ", ".join(f"`{op}` ({'; '.join(shares)})" for op, shares in found.items())


def week18():
    rows = speed_rows("grade-stage4-numba.json")
    maxpool = [t["roofline_share"] for op, _, t in rows if op == "maxpool2d_backward"]
    im2col = [t["roofline_share"] for op, _, t in rows if op == "im2col"]
    relu_bytes = [t["bytes"] for op, _, t in rows if op == "relu"][-1]
    relu = (RESULTS / "ncu-relu-numba-h100.txt").read_text(encoding="utf-8")
    def metrics(name):
        return [float(x) for x in re.findall(rf"{name}\s+\S+\s+([\d.]+)", relu)]

    times, writes = metrics(r"gpu__time_duration\.sum"), metrics(r"dram__bytes_write\.sum")
    reads = {f"{x:.1f}" for x in metrics(r"dram__bytes_read\.sum")}
    pool = (RESULTS / "ncu-maxpool2d-backward-numba-h100.txt").read_text(encoding="utf-8")

    def metric(name, unit):
        return float(re.search(rf"{name}\s+{re.escape(unit)}\s+([\d.]+)", pool)[1])

    return [
        parameters("tiny_imagenet_cnn", (3, 64, 64), 200),
        f"(on that grade, under 1% of it: {under_one_percent()}; further up, `maxpool2d_backward` "
        f"at {percent(max(maxpool), 2)} and `im2col` at {percent(min(im2col), 2)} to "
        f"{percent(max(im2col), 2)})",
        f"`relu` on 16M floats: {min(times):.0f}-{max(times):.0f} us a launch, "
        f"{'/'.join(sorted(reads))} MB read from DRAM and "
        f"{min(writes):.0f}-{max(writes):.0f} MB written, where the grader's speed row assumes "
        f"{relu_bytes / 1e6:.0f} MB",
        f"{metric('Duration', 'ms'):.2f} ms with DRAM at {metric('DRAM Throughput', '%'):.1f}% of "
        f"its peak ({metric('Memory Throughput', 'Gbyte/s'):.0f} GB/s) and the SMs "
        f"{metric('SM Busy', '%'):.0f}% busy",
        f"{metric('Registers Per Thread', 'register/thread'):.0f} registers a thread hold "
        f"occupancy to {metric('Achieved Occupancy', '%'):.0f}%",
    ]


def week19():
    lenet5 = next(row for row in record("int8-cpu.json")["accuracy"]
                  if row["model"] == "lenet5" and row["method"] == "minmax")  # fmt: skip
    return [f"`curriculum/results/int8-cpu.md`: {percent(lenet5['agreement'], 2)} with min-max "
            "calibration"]


def week20():
    load = record("serve-load-gpu-nvcc-wait1.json")
    return [f"dynamic batching answered {load['speedup']:.2f}x as many requests a second as "
            "batch-1 serving"]


def week23():
    mnist = record("train-vit-mnist-stage2.json")["test_accuracy"]
    mnist_c = record("train-vit-mnist-stage3.json")["test_accuracy"]
    gpu = record("train-vit-mnist-stage4-nvcc.json")
    epochs = gpu["seconds_per_epoch"]
    fashion = record("train-vit-fashion-mnist-stage3.json")["test_accuracy"]
    fashion_numpy = record("train-vit-fashion-mnist-stage2.json")["test_accuracy"]
    fashion_gpu = record("train-vit-fashion-mnist-stage4-nvcc.json")["test_accuracy"]
    return [parameters("vit", (1, 28, 28), 10),
            f"the project's own stage 2 run: {percent(mnist, 2)} on MNIST,",
            f"stage 3: {percent(mnist_c, 2)},",
            f"(nvcc): {percent(gpu['test_accuracy'], 2)}, {min(epochs):.1f} to "
            f"{max(epochs):.1f} s an epoch,",
            f"4x4 patches: {percent(fashion, 2)} on Fashion-MNIST,",
            f"stage 2: {percent(fashion_numpy, 2)},",
            f"stage 4 on the H200 (nvcc): {percent(fashion_gpu, 2)},"]


def week24():
    epoch = record("host-pipeline-h200.json")["epoch"]
    rows = record("data-parallel-h200.json")["results"]
    scaling = {(row["model"], row["side"]): row["efficiency"] for row in rows if row["gpus"] == 2}
    batch = {row["model"]: row["global_batch"] for row in rows}
    follow = record("data-parallel-follow-h200.json")
    return [f"overlaps its copies with its steps at {epoch['overlap']:.2f}",
            f"HostStep spends {epoch['host_step_seconds']:.3f} s of host time on the epoch and the "
            f"pipeline {epoch['pipelined_seconds']:.3f} s;",
            f"Tiny-ImageNet CNN (global batch {batch['tiny_imagenet_cnn']}) at "
            f"{percent(scaling['tiny_imagenet_cnn', 'nvcc'], 1)} and the Fashion CNN (global batch "
            f"{batch['fashion_cnn']}) at {percent(scaling['fashion_cnn', 'nvcc'], 1)} of",
            f"at {percent(scaling['tiny_imagenet_cnn', 'torch'], 1)} and "
            f"{percent(scaling['fashion_cnn', 'torch'], 1)}.",
            f"ends at {percent(follow['test_accuracy_n'], 2)} test accuracy against "
            f"{percent(follow['test_accuracy_1'], 2)} on one"]


CLAIMS = {"week09.md": week09, "week10.md": week10, "week11.md": week11, "week14.md": week14,
          "week15.md": week15, "week17.md": week17, "week18.md": week18, "week19.md": week19,
          "week20.md": week20, "week23.md": week23, "week24.md": week24}  # fmt: skip


@pytest.mark.parametrize("page", sorted(CLAIMS))
def test_the_page_gives_the_records_figures(page):
    text = text_of(CURRICULUM / page)
    missing = [phrase for phrase in CLAIMS[page]() if " ".join(phrase.split()) not in text]
    assert not missing, f"{page} should say, as its record does:\n" + "\n".join(missing)


def loose_figures(name, text):
    """The figures of page `name` (its text as text_of gives it) that lie in no claim and no
    NOT_MEASURED phrase, each with the text around it."""
    phrases = [" ".join(phrase.split()) for phrase in (CLAIMS[name]() if name in CLAIMS else [])]
    phrases += [phrase for page, phrase, _why in NOT_MEASURED if page == name]
    covered = [(m.start(), m.end()) for phrase in phrases
               for m in re.finditer(re.escape(phrase), text)]  # fmt: skip
    loose = [m for m in FIGURE.finditer(text)
             if not any(start <= m.start() and m.end() <= end for start, end in covered)]
    return [f"{m.group()!r} in ...{text[max(0, m.start() - 60):m.end() + 20]}..." for m in loose]


@pytest.mark.parametrize("page", WEEK_PAGES, ids=lambda page: page.name)
def test_every_figure_is_checked_or_says_why_not(page):
    loose = loose_figures(page.name, text_of(page))
    assert not loose, (f"{page.name}: figures no record checks (add a claim to "
                       "tests/test_page_figures.py, or a reason to NOT_MEASURED):\n"
                       + "\n".join(loose))  # fmt: skip


def test_a_figure_typed_beside_the_checked_ones_is_found():
    """Planted: week 15's page with a figure added after its checked phrase."""
    text = text_of(CURRICULUM / "week15.md")
    assert loose_figures("week15.md", text) == []
    planted = text.replace("15.3% of it.", "15.3% of it. Rung 2 reaches about 3% of it.")
    assert [line.split(" in ")[0] for line in loose_figures("week15.md", planted)] == ["'3%'"]


def test_a_figure_out_of_step_with_its_record_fails(tmp_path, monkeypatch):
    """Planted: the H100 ladder as if `tiled` had run 4096^3 at 9.9 TFLOP/s."""
    ladder = record("matmul-numba-h100.json")
    ladder["sizes"]["4096"]["tiled"]["gflops"] = 9900.0
    for name in RESULTS.iterdir():
        (tmp_path / name.name).symlink_to(name)
    (tmp_path / "matmul-numba-h100.json").unlink()
    (tmp_path / "matmul-numba-h100.json").write_text(json.dumps(ladder), encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "RESULTS", tmp_path)
    with pytest.raises(AssertionError, match="tiled` rung at 9.9 TFLOP/s"):
        test_the_page_gives_the_records_figures("week15.md")


def test_a_figure_without_a_claim_is_found():
    text = "the kernel ran at 81.2% of its roofline (5.4 TFLOP/s), 0.37x PyTorch's time, in 2.5 ms"
    assert [m.group() for m in FIGURE.finditer(text)] == ["81.2%", "5.4 TFLOP/s", "0.37x", "2.5 ms"]
    assert not FIGURE.search("a 3x3 kernel, sm_90, 4096^3, x[64x1x28x28], 32 x 32 tiles, week 14")

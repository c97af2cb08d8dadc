"""The library bench (bench/ops_vs_pytorch.py): PyTorch's side of every op computes the contract's
result, the glue runs end to end, and the table and plot come out of a record. No GPU: PyTorch
runs on the CPU, stage 4 on numba's CUDA simulator, at tiny sizes."""

import io
import json

import numpy as np
import pytest

from bench import ops_vs_pytorch, ops_vs_pytorch_report
from bench.ops_vs_pytorch import Case, cases
from grader.correctness import compare_outputs
from grader.ops import OPS
from grader.records import Setup
from grader.session import Session
from grader.timing import measure
from grader.tolerance import tolerance
from grader.torch_ops import TORCH_OPS, Counterpart, outputs_to_numpy, tensors


def test_every_op_has_its_pytorch_counterpart_and_its_shapes():
    assert list(TORCH_OPS) == list(OPS)
    for name, counterpart in TORCH_OPS.items():
        assert counterpart.expression and counterpart.how in ops_vs_pytorch_report.HOW, name
        kinds = {case.large for case in cases(name)}
        assert kinds == {False, True}, f"{name}: a network shape and a large one"


@pytest.mark.oracle
@pytest.mark.parametrize("name", list(OPS))
def test_pytorch_computes_the_contract(name):
    """At the op's first correctness cases, PyTorch's side (on the CPU) matches stage 2 to the
    bench's own tolerance; a random op (PyTorch's own stream) gives outputs of our shapes."""
    torch = pytest.importorskip("torch")
    session = Session(Setup(2, quick=True, bench=True))
    op, counterpart = OPS[name], TORCH_OPS[name]
    for index, size in enumerate(op.cases[:3]):
        if name in ("xavier_uniform", "he_normal") and len(size) < 2:
            continue  # PyTorch's init has no fans for a 1-D tensor; the bench times 2-D and up
        rng = np.random.default_rng([7, index])
        args, _ = session.arguments(op, size, rng, session.graded, "reference")
        expected = session.call(session.graded, op, args, "reference")
        call = counterpart.call(torch, tensors(torch, args, "cpu"), args, "cpu")
        received = outputs_to_numpy(call())
        if counterpart.same_numbers:
            tol = tolerance(op, 32, 32, args, gpu=True)
            assert compare_outputs(session, op, received, expected, tol, bits=32) is None
        else:
            shapes = {k: np.shape(v) for k, v in expected.items()}
            assert {k: np.shape(v) for k, v in received.items()} == shapes


@pytest.mark.oracle
def test_the_bench_runs_end_to_end_and_names_a_wrong_op(monkeypatch, tmp_path):
    """Stage 4's numba variant (simulator) against PyTorch on the CPU, at tiny cases, timed by
    the host clock; a planted wrong PyTorch answer makes ours look wrong and leaves it untimed."""
    torch = pytest.importorskip("torch")
    tiny = {  # forward ops' cases (a backward op takes its forward's)
        "relu": (Case("tiny", ((2, 3), 1.0), False), Case("large", ((4, 5), 1.0), True)),
        "cross_entropy_loss": (Case("tiny", (3, 5, 1.0, 0.0), False),),
        "dropout_forward": (Case("tiny", ((3, 4), 0.5), False),),
        "sgd_step": (Case("tiny", ((7,), 0), False),),
    }
    monkeypatch.setattr(ops_vs_pytorch, "BY_OP", tiny)
    ops = "relu,cross_entropy_loss_backward,dropout_forward,sgd_step"
    options = ops_vs_pytorch.parse(["--variant", "numba", "--ops", ops])
    timer = lambda call: measure(call, lambda: None, quick=True)  # noqa: E731
    record = ops_vs_pytorch.run(options, torch, "", timer, out=io.StringIO(), device="cpu")
    rows = {(row["op"], row["label"]): row for row in record["rows"]}
    assert len(rows) == 5 and record["complete"]
    for row in rows.values():
        ours = row["ours"]["numba"]
        assert "problem" not in ours, ours
        assert ours["ratio"] == ours["timing"]["median"] / row["pytorch"]["timing"]["median"]
    assert rows[("dropout_forward", "tiny")]["checked_against"] == "stage 2 (NumPy)"
    assert rows[("relu", "tiny")]["checked_against"] == "PyTorch"

    wrong = Counterpart(
        "relu plus one", "op", lambda torch, t, a, device: lambda: {"y": torch.relu(t["x"]) + 1}
    )
    monkeypatch.setitem(TORCH_OPS, "relu", wrong)
    record = ops_vs_pytorch.run(options, torch, "", timer, out=io.StringIO(), device="cpu")
    problems = ops_vs_pytorch.wrong_rows(record)
    assert [(op, variant) for op, _, variant, _ in problems] == [("relu", "numba")] * 2
    assert all("timing" not in row["ours"]["numba"] for row in record["rows"][:2])

    def raising(torch, t, a, device):
        raise RuntimeError("no such kernel")

    monkeypatch.setitem(TORCH_OPS, "relu", Counterpart("relu", "op", raising))
    record = ops_vs_pytorch.run(options, torch, "", timer, out=io.StringIO(), device="cpu")
    relu = record["rows"][0]
    assert "PyTorch raised RuntimeError: no such kernel" in relu["pytorch"]["problem"]
    assert relu["checked_against"] == "stage 2 (NumPy)"
    assert "timing" in relu["ours"]["numba"] and "ratio" not in relu["ours"]["numba"]


def synthetic_record(with_torch=True):
    timing = {"median": 2e-5, "q1": 1.9e-5, "q3": 2.1e-5, "min": 1.8e-5, "max": 3e-5}

    def row(op, label, large, ratios):
        ours = {v: {"timing": {**timing, "median": 2e-5 * r}, "ratio": r} for v, r in ratios}
        return {
            "op": op, "group": OPS[op].group, "label": label, "size": f"{label} (x[2x3])",
            "large": large, "flops": None, "bytes": 48, "checked_against": "PyTorch",
            "pytorch": {"expression": TORCH_OPS[op].expression, "how": TORCH_OPS[op].how,
                        "timing": timing},
            "ours": ours,
        }

    rows = [
        row("relu", "LeNet-5 relu1 input, batch 64", False, [("numba", 0.5), ("nvcc", 0.25)]),
        row("relu", "large", True, [("numba", 1.25), ("nvcc", 1.0)]),
        row("conv2d_backward", "LeNet-5 conv1, batch 64", False, [("numba", 8.0), ("nvcc", 2.0)]),
    ]
    rows[-1]["ours"]["nvcc"] = {"problem": "dx[0, 1] is 3.0, expected 2.0 | dw: NaN"}
    library = {"name": "PyTorch", "version": "2.11.0", "cuda": "12.8", "cudnn": 91000,
               "gpu": "NVIDIA H100 80GB HBM3", "tf32": False, "cudnn_benchmark": True}
    if not with_torch:
        library = {"missing": "PyTorch is not installed"}
        for each in rows:
            each["pytorch"].pop("timing")
            for ours in each["ours"].values():
                ours.pop("ratio", None)
    return {
        "kind": "library-bench", "command": "python -m bench.ops_vs_pytorch",
        "created": "2026-11-23T12:00:00+00:00",
        "machine": {"cpu": "CPU", "cores": 16, "os": "Linux", "python": "3.12", "numpy": "2.4",
                    "blas": [], "gpu": "NVIDIA H100 80GB HBM3"},
        "library": library, "options": {},
        "variants": {v: {"label": f"stage 4 ({v})", "ok": True, "reason": "", "origin": "."}
                     for v in ("numba", "nvcc")},
        "rows": rows,
    }


def test_the_table_and_plot_come_from_the_record(tmp_path):
    record = synthetic_record()
    path = tmp_path / "bench-stage4-libraries.json"
    path.write_text(json.dumps(record))
    table, picture = ops_vs_pytorch_report.write(record, path)
    text = table.read_text()
    assert "PyTorch 2.11.0 (CUDA 12.8, cuDNN 91000) on NVIDIA H100 80GB HBM3; TF32 off" in text
    assert "| numba | numba / PyTorch | nvcc | nvcc / PyTorch |" in text
    relu = "| relu | LeNet-5 relu1 input, batch 64 (x[2x3]) | `torch.relu` | 20 us | 10 us |"
    assert relu + " 0.5x | 5 us | 0.25x |" in text
    assert "not timed: dx[0, 1] is 3.0, expected 2.0 / dw: NaN" in text  # no | inside a cell
    assert "`aten.convolution_backward (cuDNN)` (b)" in text
    # the summary: the wrong case counts nowhere; geometric mean of 0.25 and 2 ... of nvcc
    assert "| nvcc | the networks' layers | 1 | 1 | 0.25x |" in text
    assert "| numba | the networks' layers | 2 | 1 | 2x |" in text
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_without_pytorch_the_table_says_why(tmp_path):
    record = synthetic_record(with_torch=False)
    text = ops_vs_pytorch_report.markdown(record)
    assert "PyTorch: none (PyTorch is not installed)." in text
    assert "## Summary" not in text
    ops_vs_pytorch_report.plot(record, tmp_path / "plot.png")  # an empty plot, not a crash


def test_without_pytorch_the_command_says_so(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "torch", None)  # import torch fails
    torch, why = ops_vs_pytorch.load_pytorch()
    assert torch is None and "PyTorch is not installed" in why


def test_without_a_gpu_it_times_nothing_and_says_why():
    out = io.StringIO()
    assert ops_vs_pytorch.main([], out=out) == 0
    assert "skipped" in out.getvalue() and "simulator" in out.getvalue()


def test_committed_results_only_when_asked():
    assert ops_vs_pytorch.record_path(ops_vs_pytorch.parse([])).parts[-3:] == (
        "runs", "grader", "bench-stage4-libraries.json")
    committed = ops_vs_pytorch.record_path(ops_vs_pytorch.parse(["--results"]))
    assert committed.parts[-3:] == ("curriculum", "results", "bench-stage4-libraries.json")
    mine = ops_vs_pytorch.record_path(ops_vs_pytorch.parse(["--impl", "ws", "--variant", "nvcc"]))
    assert mine.parts[-3:] == ("ws", "results", "bench-stage4-libraries-nvcc.json")
    with pytest.raises(SystemExit):
        ops_vs_pytorch.parse(["--results", "--quick"])


def test_the_notebooks_leave_the_library_record_to_its_own_table(monkeypatch, tmp_path):
    """curriculum/notebooks/_course.py reads grade-*.json and bench-*.json as grader records
    (with "runs"); bench-stage4-libraries.json, of another kind, is not one of them."""
    import importlib.util

    from tests.page_commands import ROOT

    spec = importlib.util.spec_from_file_location(
        "_course", ROOT / "curriculum" / "notebooks" / "_course.py"
    )
    course = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(course)
    (tmp_path / "bench-stage4-libraries.json").write_text(json.dumps(synthetic_record()))
    (tmp_path / "bench-stage3.json").write_text(json.dumps({"kind": "bench", "runs": []}))
    monkeypatch.setattr(course, "RESULTS", tmp_path)
    assert list(course.grader_records()) == ["bench-stage3.json"]

"""`python -m bench.inference` end to end at tiny timings: every side agrees with the tier's
inference mode before it is timed (ONNX Runtime on the benchmark's ONNX graph included), and the
table is generated from the record it writes."""

import json

import numpy as np
import pytest

from bench import inference


def test_the_bench_writes_a_record_and_its_table(tmp_path):
    pytest.importorskip("onnxruntime")
    output = tmp_path / "inference"
    argv = ["--stage", "2", "--models", "lenet5", "--repeats", "1", "--seconds", "0.001",
            "--output", str(output), "--onnx", str(tmp_path / "model")]  # fmt: skip
    assert inference.main(argv) == 0
    record = json.loads(output.with_suffix(".json").read_text())
    assert output.with_suffix(".md").read_text() == inference.markdown(record)
    sides = {row["side"] for row in record["results"]}
    assert {"stage 2 (numpy), training-mode forward", "stage 2 (numpy), inference mode"} <= sides
    assert any(side.startswith("ONNX Runtime") for side in sides)
    assert {row["batch"] for row in record["results"]} == set(inference.BATCHES)
    for row in record["results"]:
        assert np.isfinite(row["seconds"]) and row["seconds"] > 0
        assert row["max_abs_difference"] < 1e-4, row  # LeNet-5's logits are of order 1
    assert (tmp_path / "model-lenet5.onnx").stat().st_size > 200_000  # 61,706 float32 weights


def test_stage_4_is_refused_beside_the_cpu_tiers(capsys):
    assert inference.main(["--stage", "3", "4"]) == 2
    assert "--stage 4 runs alone" in capsys.readouterr().err

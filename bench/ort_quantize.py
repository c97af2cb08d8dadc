"""ONNX Runtime's own int8: its static quantizer on our exported float32 graph, beside ours.

`onnxruntime.quantization.quantize_static` calibrates the graph on the images a
CalibrationDataReader feeds it (here nn.quantize's own calibration images, as a user feeds the
graph: bytes / 255) and writes a QDQ graph: per-channel symmetric int8 weights, int8 activations
per tensor (its S8S8 default), with its calibrators MinMax, Percentile (at nn.quantize's
percentile) and Entropy. ONNX Runtime then fuses the QDQ pairs into its int8 kernels. Its choice
of what to quantize is its own: every op of its QDQ registry (Conv, Gemm, MaxPool, ...), not only
the products as nn.quantize does.

Timing: ONNX Runtime sessions on one thread (intra_op_num_threads=1, inter_op_num_threads=1,
sequential), to match the one-thread timing of our tiers, on one batch of test images, the float32
and the int8 session in turn, best of `repeats` by the process's CPU time.
"""

import time

import numpy as np
import onnxruntime
from onnxruntime.quantization import (
    CalibrationDataReader,
    CalibrationMethod,
    QuantFormat,
    QuantType,
    quantize_static,
)

from bench.onnx_parity import PROVIDER
from nn.onnx_format import INPUT, LOGITS
from nn.quantize import PERCENTILE

CALIBRATORS = {"minmax": CalibrationMethod.MinMax, "percentile": CalibrationMethod.Percentile,
               "entropy": CalibrationMethod.Entropy}  # fmt: skip
CALIBRATION_BATCH = 100
PREDICTION_BATCH = 1000


class CalibrationImages(CalibrationDataReader):
    """Feeds float32 `pixels` [N, ...] to the quantizer, CALIBRATION_BATCH at a time."""

    def __init__(self, pixels):
        self.batches = iter([{INPUT: pixels[start:start + CALIBRATION_BATCH]}
                             for start in range(0, len(pixels), CALIBRATION_BATCH)])  # fmt: skip

    def get_next(self):
        return next(self.batches, None)


def quantize_with_runtime(float_path, out_path, pixels, method):
    """Write ONNX Runtime's int8 QDQ graph of the float32 graph at `float_path` to `out_path`,
    calibrated on float32 `pixels` by `method` (a key of CALIBRATORS)."""
    quantize_static(
        str(float_path), str(out_path), CalibrationImages(pixels),
        quant_format=QuantFormat.QDQ, per_channel=True,
        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
        calibrate_method=CALIBRATORS[method],
        extra_options={"CalibPercentile": PERCENTILE},
    )  # fmt: skip


def session(path, threads=None):
    """An ONNX Runtime CPU session of the graph at `path`; on `threads` threads if given."""
    options = onnxruntime.SessionOptions()
    if threads is not None:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = threads
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    return onnxruntime.InferenceSession(str(path), options, providers=[PROVIDER])


def runtime_predictions(path, pixels):
    """The graph's argmax class of every row of `pixels`, PREDICTION_BATCH at a time."""
    runner = session(path)
    return np.concatenate([
        np.argmax(runner.run([LOGITS], {INPUT: pixels[start:start + PREDICTION_BATCH]})[0], axis=1)
        for start in range(0, len(pixels), PREDICTION_BATCH)
    ])


def runtime_speed(float_path, int8_path, batch, repeats):
    """{'float32': (CPU s, wall s), 'int8': ...}: each session's best run on `batch`, one thread,
    the two in turn."""
    sessions = {"float32": session(float_path, 1), "int8": session(int8_path, 1)}
    for runner in sessions.values():
        runner.run([LOGITS], {INPUT: batch})  # warm-up: the first run plans its kernels
    found = {label: [] for label in sessions}
    for _ in range(repeats):
        for label, runner in sessions.items():
            started_cpu, started = time.process_time(), time.perf_counter()
            runner.run([LOGITS], {INPUT: batch})
            found[label].append((time.process_time() - started_cpu, time.perf_counter() - started))
    return {label: min(times) for label, times in found.items()}

"""bench.int8's stage-4 timing: the float32 inference mode and the int8 forward are also timed as
CUDA graphs where the tier captures them (the nvcc variant), and only there; the table says which.
A fake tier stands in for the GPU: what is timed is what matters here, not the times."""

import pytest

int8_bench = pytest.importorskip("bench.int8", reason="bench.int8 needs onnxruntime")


class EagerTier:
    """A tier that captures no graph (numba's), its GPU synchronized at once."""

    NAME = "eager"

    def synchronize(self):
        pass


class GraphTier(EagerTier):
    """A tier that records a step and captures it: the graph's launch replays the recorded
    forward, marked as a graph's."""

    NAME = "graphs"

    def __init__(self, log):
        self.log = log

    def record_step(self, step):
        self.log.append("recorded")
        return step(), step

    def capture_graph(self, recording):
        log = self.log

        class Graph:
            def launch(self):
                log.append("graph")
                recording()

        return Graph()


def passes(log):
    return {label: (lambda x, label=label: log.append((label, x)))
            for label in ("float32", "float32_inference", "int8")}  # fmt: skip


def test_graphs_are_timed_where_the_tier_captures_them():
    log = []
    best = int8_bench.best_times(GraphTier(log), passes(log), "images", repeats=2)
    assert set(best) == {"float32", "float32_inference", "int8", "float32_graph", "int8_graph"}
    assert log.count("recorded") == 2
    # warm-up and repeats: each graph launched GPU_WARMUP + 2 times, replaying its own forward
    launches = int8_bench.GPU_WARMUP + 2
    assert log.count("graph") == 2 * launches
    replayed = [log[i + 1] for i, entry in enumerate(log) if entry == "graph"]
    assert sorted(replayed) == sorted([("float32_inference", "images"), ("int8", "images")]
                                      * launches)  # fmt: skip


def test_no_graph_where_the_tier_captures_none_and_the_table_says_so():
    log = []
    best = int8_bench.best_times(EagerTier(), passes(log), "images", repeats=2)
    assert set(best) == {"float32", "float32_inference", "int8"}
    row = {"model": "lenet5", "variant": "numba", "int8_kernel": "int32 tiles", "float32_s": 2e-3,
           "float32_inference_s": 1e-3, "int8_s": 1e-3, "speedup": 2.0, "float32_graph_s": None,
           "int8_graph_s": None, "graph_speedup": None}  # fmt: skip
    graphed = {**row, "variant": "nvcc", "float32_graph_s": 3e-4, "int8_graph_s": 1e-4,
               "graph_speedup": 3.0}  # fmt: skip
    record = {"machine": {"processor": "cpu", "cpu_count": 2, "gpu": "GPU"}, "date": "today",
              "repeats": 2, "time_method": "percentile", "accuracy": [], "speed": [], "qdq": [],
              "onnxruntime": [], "gpu_speed": [row, graphed]}  # fmt: skip
    table = int8_bench._markdown(record)
    eager = "| lenet5 | {} | int32 tiles | 2.000 | 1.000 | 1.000 | 2.00x | "
    assert eager.format("numba") + "not captured |" in table
    assert eager.format("nvcc") + "0.300 | 0.100 | 3.00x |" in table

"""Timing one call: warm-up, device sync, repeats until a time budget, median and spread.

Very fast calls are timed in batches (so the timer's own cost stays below 1%), and a repeat ends
with `synchronize()`, so a GPU's queued work is counted.
"""

import math
import time
from dataclasses import asdict, dataclass

import numpy as np

BATCH_SECONDS = 1e-3  # calls faster than this are repeated inside one timed batch
REPEATS = {False: (5, 0.4), True: (3, 0.1)}  # quick -> (minimum repeats, time budget in s)
MAX_REPEATS = 100
SLOW_CALL_S = 1.0  # one call slower than this: fewer repeats (the median of 3 still)


@dataclass
class Timing:
    """Seconds per call: median, quartiles, extremes, over `repeats` batches of `batch` calls."""

    median: float
    q1: float
    q3: float
    min: float
    max: float
    repeats: int
    batch: int
    # On a GPU: the host's seconds per call (checks, launches), measured apart from the device's
    # time above, which the timing keeps free of it (grader/gpu_timing.py). None elsewhere.
    host: float | None = None

    def as_dict(self):
        return asdict(self)


def measure(call, synchronize, quick=False):
    """Time `call()`; returns (Timing, the last call's result)."""
    synchronize()
    start = time.perf_counter()
    result = call()  # warm-up: caches, lazy compilation, first-touch allocations
    synchronize()
    first = time.perf_counter() - start
    batch = 1 if first >= BATCH_SECONDS else min(1000, math.ceil(BATCH_SECONDS / max(first, 1e-7)))
    min_repeats, budget = REPEATS[quick]
    if first > SLOW_CALL_S:
        min_repeats = 1 if quick else 3
    times = []
    started = time.perf_counter()
    while len(times) < MAX_REPEATS and (
        len(times) < min_repeats or time.perf_counter() - started < budget
    ):
        synchronize()
        start = time.perf_counter()
        for _ in range(batch):
            result = call()
        synchronize()
        times.append((time.perf_counter() - start) / batch)
    q1, median, q3 = np.percentile(times, [25, 50, 75])
    timing = Timing(float(median), float(q1), float(q3), min(times), max(times), len(times), batch)
    return timing, result

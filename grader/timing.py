"""Timing one call: warm-up, device sync, repeats until a time budget, median and spread.

Very fast calls are timed in batches (so the timer's own cost stays below 1%), and a repeat ends
with `synchronize()`, so a GPU's queued work is counted. Calls to be compared can be timed in
turn, batch by batch (`measure_in_turn`), so that a machine shared with other jobs moves both.

A call may come with a `change()`: it runs before every call, outside the timed interval, and
gives the call's inputs new contents (grader/input_changes.py), so that no call can answer with
an earlier call's result. Such a call is timed call by call, the clock's own cost taken off each.
"""

import functools
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
    # On a GPU: seconds per call on the host clock from the call to a device-wide synchronize, so
    # work on every stream (grader/unseen_work.py). None elsewhere.
    synchronous: float | None = None

    def as_dict(self):
        return asdict(self)


def measure(call, synchronize, quick=False, change=None, clock=time.perf_counter):
    """Time `call()` (with `change()` before every call when given; see above); returns (Timing,
    the last call's result)."""
    timings, results = measure_in_turn([(call, synchronize, change)], quick, clock)
    return timings[0], results[0]


def measure_in_turn(calls, quick=False, clock=time.perf_counter):
    """Time several (call, synchronize) pairs, or (call, synchronize, change) triples, one batch
    each in turn (a, b, a, b, ...), so that a load that comes and goes on a shared machine slows
    each of them alike: their ratio holds where their own times do not. `clock` reads the
    seconds: the wall clock, or `time.process_time`, the CPU time the process ran (time spent
    waiting for a core, while other jobs ran, is not counted). Returns
    ([Timing per call], [each last result])."""
    calls = [(*entry, None)[:3] for entry in calls]
    results, batches, firsts = [], [], []
    for call, synchronize, _ in calls:
        first, result = _warm_up(call, synchronize, clock)
        results.append(result)
        firsts.append(first)
        batches.append(
            1 if first >= BATCH_SECONDS else min(1000, math.ceil(BATCH_SECONDS / max(first, 1e-7)))
        )
    min_repeats, budget = REPEATS[quick]
    if max(firsts) > SLOW_CALL_S:
        min_repeats = 1 if quick else 3
    budget *= len(calls)  # each call keeps the budget it has when timed alone
    times = [[] for _ in calls]
    started = time.perf_counter()
    while len(times[0]) < MAX_REPEATS and (
        len(times[0]) < min_repeats or time.perf_counter() - started < budget
    ):
        for index, ((call, synchronize, change), batch) in enumerate(
            zip(calls, batches, strict=True)
        ):
            if change is None:
                synchronize()
                start = clock()
                for _ in range(batch):
                    results[index] = call()
                synchronize()
                seconds = clock() - start
            else:
                seconds = 0.0
                for _ in range(batch):
                    change()
                    synchronize()
                    start = clock()
                    results[index] = call()
                    synchronize()
                    seconds += clock() - start - clock_cost(clock)
            times[index].append(max(seconds, 0.0) / batch)
    return [_summary(t, batch) for t, batch in zip(times, batches, strict=True)], results


def _warm_up(call, synchronize, clock):
    """(seconds, result) of a warm call: a first call pays for caches, lazy compilation and
    first-touch allocations; a fast one (whose batch size comes from it) is called once more, as
    its first call may also find the caches cold from the call timed before it."""
    for _ in range(2):
        synchronize()
        start = clock()
        result = call()
        synchronize()
        seconds = clock() - start
        if seconds >= BATCH_SECONDS:
            break
    return seconds, result


@functools.cache
def clock_cost(clock):
    """Seconds an interval read with `clock` shows around nothing (the median of many): what a
    call timed on its own carries beyond its work."""
    gaps = []
    for _ in range(1000):
        start = clock()
        gaps.append(clock() - start)
    return float(np.median(gaps))


def _summary(times, batch):
    q1, median, q3 = np.percentile(times, [25, 50, 75])
    return Timing(float(median), float(q1), float(q3), min(times), max(times), len(times), batch)

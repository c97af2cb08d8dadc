"""Timing one call on a GPU: CUDA events around the region, a cold L2 cache before every repeat.

A GPU runs its work asynchronously, so a host clock read right after a launch measures only the
launch. Two CUDA events recorded on the default stream, one before and one after the call, measure
the device's time for everything queued between them (the Python-side launch costs included: a
kernel cannot start before it is launched). Between repeats a buffer several times the size of the
L2 cache is written, so that no repeat finds its inputs already cached by the one before; the
inputs then come from device memory, as they do in a training step where each layer's tensors are
evicted by the next layer's.
"""

import functools
import math
import time

import numpy as np

from .timing import MAX_REPEATS, REPEATS, SLOW_CALL_S, Timing

L2_FLUSH_FACTOR = 4  # the flush buffer is this many times the L2 cache
DEFAULT_L2_BYTES = 64 << 20  # when the device does not say (H100: 50 MiB, H200: 60 MiB)


def l2_bytes(device):
    """The L2 cache size the device reports, or DEFAULT_L2_BYTES."""
    size = getattr(device, "L2_CACHE_SIZE", 0)
    return int(size) if size else DEFAULT_L2_BYTES


class L2Flush:
    """A device buffer of L2_FLUSH_FACTOR times the L2 size; `__call__` overwrites all of it."""

    def __init__(self):
        from numba import cuda

        from .gpu_kernels import fill

        self._fill = fill
        self.bytes = L2_FLUSH_FACTOR * l2_bytes(cuda.get_current_device())
        self.buffer = cuda.device_array(self.bytes // 4, dtype=np.float32)
        self._value = 0.0

    def __call__(self):
        self._value += 1.0  # a new value each time: a write the hardware cannot skip
        self._fill(self.buffer, self._value)


@functools.cache
def _idle_synchronize_seconds():
    """What `cuda.synchronize()` costs the host on an idle device (the median of 21 calls): the
    part of a wait that is not the device's work."""
    from numba import cuda

    cuda.synchronize()
    waits = []
    for _ in range(21):
        started = time.perf_counter()
        cuda.synchronize()
        waits.append(time.perf_counter() - started)
    return float(np.median(waits))


@functools.cache
def l2_flush():
    """The process's one L2Flush (its buffer is allocated once)."""
    return L2Flush()


def measure_gpu(call, quick=False, flush=None):
    """Time `call()` (which launches GPU work) with CUDA events; returns (Timing, last result).

    One warm-up call first (numba compiles a kernel at its first launch). Each repeat: flush the
    L2 (when `flush` is given), record a start event, call, record an end event, wait for it, then
    wait for the whole device: how long that last wait took is the `stray` work of the call (on
    another stream, unseen by the events). Repeats run until both a minimum count and a time
    budget are reached.
    """
    from numba import cuda

    cuda.synchronize()
    started = time.perf_counter()
    result = call()
    cuda.synchronize()
    first = time.perf_counter() - started
    min_repeats, budget = REPEATS[quick]
    if first > SLOW_CALL_S:
        min_repeats = 1 if quick else 3
    times, stray = [], 0.0
    idle = _idle_synchronize_seconds()
    started = time.perf_counter()
    while len(times) < MAX_REPEATS and (
        len(times) < min_repeats or time.perf_counter() - started < budget
    ):
        if flush is not None:
            flush()
        start, end = cuda.event(), cuda.event()
        start.record()
        result = call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)  # CUDA reports milliseconds
        # The end event waits for the default stream only; work the call left on another stream
        # is still running now, and the device-wide wait below shows it.
        waited = time.perf_counter()
        cuda.synchronize()
        stray = max(stray, time.perf_counter() - waited - idle)
    if not all(math.isfinite(t) and t > 0 for t in times):
        raise RuntimeError(f"CUDA events gave no usable time ({times[:3]} ...): a simulator?")
    q1, median, q3 = np.percentile(times, [25, 50, 75])
    timing = Timing(
        float(median), float(q1), float(q3), min(times), max(times), len(times), 1, stray
    )
    return timing, result

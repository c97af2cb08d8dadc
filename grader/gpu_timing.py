"""Timing one call on a GPU: CUDA events around the region, a cold L2 cache before every repeat.

A GPU runs its work asynchronously, so a host clock read right after a launch measures only the
launch. Two CUDA events recorded on the default stream, one before and one after the call, measure
the device's time for everything queued between them. Between repeats a buffer several times the
size of the L2 cache is written, so that no repeat finds its inputs already cached by the one
before; the inputs then come from device memory, as they do in a training step where each layer's
tensors are evicted by the next layer's.

The device's time, not the host's: before the start event, a busy kernel holds the default stream
for longer than the call takes to launch, so the call's kernels are queued before the start event
fires and the events see them back to back (the "blocking kernel" of NVIDIA's nvbench). Without it,
an op's Python-side checks and launches (tens to hundreds of microseconds in numba) would be
counted as device time: in a training step they overlap the kernels queued before. The host's
share is measured apart, on calls started on an idle device (`Timing.host`, seconds per call: a
call that waits for the device inside, to read a value back, would otherwise wait for the busy
kernel too), and reported beside the device time.
An op that launches nothing, or launches on another stream, is then timed near zero: the roofline's
physical floor fails it (grader/roofline.py). The hold is also time in which another stream may
run unseen, and in which the host may compute: after the timed repeats, a few calls are timed on
the host clock up to a device-wide synchronize (`Timing.synchronous`), and the host time and that
time are judged (grader/unseen_work.py).
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


class Hold:
    """Keeps the default stream busy for a requested time: `hold(seconds)`.

    The busy kernel's speed is measured once (seconds per step of its dependent chain), so a hold
    of any length is one launch of the right number of steps. The speed comes from the difference
    of a long and a short run: what both pay once (the launch) cancels out.
    """

    SHORT, LONG = 1 << 18, 1 << 20  # about 0.5 and 2 ms on an H100

    def __init__(self):
        from numba import cuda

        from .gpu_kernels import busy

        self._busy = busy
        self._sink = cuda.device_array(1, dtype=np.float32)
        busy(self.SHORT, self._sink)  # compile and warm up
        seconds = {}
        for steps in (self.SHORT, self.LONG):
            start, end = cuda.event(), cuda.event()
            start.record()
            busy(steps, self._sink)
            end.record()
            end.synchronize()
            seconds[steps] = start.elapsed_time(end) / 1e3
        self.step_seconds = (seconds[self.LONG] - seconds[self.SHORT]) / (self.LONG - self.SHORT)
        if not self.step_seconds > 0:
            raise RuntimeError(f"the busy kernel did not slow down with more steps: {seconds}")

    def __call__(self, seconds):
        self._busy(max(1, int(seconds / self.step_seconds)), self._sink)


@functools.cache
def hold():
    """The process's one Hold (calibrated once)."""
    return Hold()


# A hold is this many times the call's host time, plus a margin, and never longer than the cap.
HOLD_FACTOR = 2.0
HOLD_MARGIN_S = 50e-6
HOLD_CAP_S = 0.05
SYNCHRONOUS_REPEATS = 3  # calls timed up to a device-wide synchronize, after the timed repeats


@functools.cache
def l2_flush():
    """The process's one L2Flush (its buffer is allocated once)."""
    return L2Flush()


def measure_gpu(call, quick=False, flush=None, change=None):
    """Time `call()` (which launches GPU work) with CUDA events; returns (Timing, last result).

    Warm-up calls first (numba compiles a kernel at its first launch; the second gives the host's
    time per call). Each repeat: give the inputs new contents (`change()`, when given;
    grader/input_changes.py), flush the L2 (when `flush` is given), hold the stream for
    longer than the host needs to launch the call, record a start event, call, record an end
    event, wait for it. When the hold ran out before the call returned, the device waited for the
    host inside the timed region: the next holds are longer. Repeats run until both a minimum
    count and a time budget are reached. Then SYNCHRONOUS_REPEATS calls on an idle device, each
    timed on the host clock until it returns (the host's time) and until a device-wide synchronize
    (every stream's work).
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
        host = first  # (the hold hardly matters beside a call this slow)
    else:  # the first call compiled; the second shows what launching costs the host
        started = time.perf_counter()
        result = call()
        host = time.perf_counter() - started  # the call has not waited for the device
        cuda.synchronize()
    times = []
    held = min(HOLD_CAP_S, HOLD_FACTOR * host + HOLD_MARGIN_S)
    started = time.perf_counter()
    while len(times) < MAX_REPEATS and (
        len(times) < min_repeats or time.perf_counter() - started < budget
    ):
        if change is not None:
            change()
        if flush is not None:
            flush()
        hold()(held)
        start, end = cuda.event(), cuda.event()
        start.record()
        result = call()
        if start.query():  # the hold ended before the call was launched: hold longer next time
            held = min(HOLD_CAP_S, 2 * held)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)  # CUDA reports milliseconds
    cuda.synchronize()  # work the call left on another stream, before anyone reads the result
    hosts, synchronous = [host], []
    for _ in range(SYNCHRONOUS_REPEATS):
        if change is not None:
            change()
        cuda.synchronize()
        launched = time.perf_counter()
        result = call()
        hosts.append(time.perf_counter() - launched)
        cuda.synchronize()
        synchronous.append(time.perf_counter() - launched)
    if not all(math.isfinite(t) and t > 0 for t in times):
        raise RuntimeError(f"CUDA events gave no usable time ({times[:3]} ...): a simulator?")
    q1, median, q3 = np.percentile(times, [25, 50, 75])
    timing = Timing(
        float(median), float(q1), float(q3), min(times), max(times), len(times), 1,
        float(np.median(hosts)), float(np.median(synchronous)),
    )  # fmt: skip
    return timing, result


def host_seconds(call, repeats=3):
    """The host's seconds per call of `call()` (median of `repeats`, after a warm-up call), each
    started on an idle device: how long the call holds the host."""
    from numba import cuda

    call()
    seconds = []
    for _ in range(repeats):
        cuda.synchronize()
        launched = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - launched)
    cuda.synchronize()
    return float(np.median(seconds))

"""Dynamic batching: requests wait in a bounded queue, and one worker thread, which owns the tier,
gathers them into forward passes.

The worker takes the first request waiting, then more until it holds `max_batch` or `max_wait_s`
has passed since the first, and runs one forward pass per model among them. Under load the queue
always holds a batch, so requests share forward passes; alone, one waits `max_wait_s` at most.
The event loop only queues a request and awaits its future: it never runs a forward pass. A full
queue refuses at once (QueueFull: the service answers 503 with Retry-After) instead of growing
without bound. An error in a forward pass, or in what follows it, fails the requests of that pass,
never the worker.

The worker also loads the models onto the tier (a GPU tier's context belongs to the thread that
made it) and runs one warm-up batch of each; `ready` is set after both.
"""

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

POLL_S = 0.001  # how often a gathering worker looks for more requests


class QueueFull(Exception):
    pass


class WorkerStopped(Exception):
    """The worker that owns the tier is gone (its process died): the service answers 503."""


class ForwardFailed(Exception):
    """The forward pass a request rode in raised (the service answers 500 with its message)."""


class ExplainUnavailable(Exception):
    """Grad-CAM cannot be computed for this model (the service answers 501)."""


@dataclass
class Job:
    """One request: `image` float32 [C, H, W] in [0, 1] for model `served`; `explain` is the
    Grad-CAM function to run on it, or None. The worker settles it on its own thread with a Result
    or an exception, which `reply(result, error)` delivers (`settling` makes one for an asyncio
    future; the processes of nn/serve/fronts.py send it back to the HTTP front that asked)."""

    served: object
    image: np.ndarray
    explain: object
    reply: Callable = field(repr=False)
    settled: bool = field(default=False, repr=False)

    def settle(self, result=None, error=None):
        """Answer the request, once: a later call (the worker's guard after a failure) does
        nothing."""
        if not self.settled:
            self.settled = True
            self.reply(result=result, error=error)


@dataclass
class Result:
    probabilities: np.ndarray  # [classes]
    batch_size: int  # requests in the forward pass it rode in
    heatmap: np.ndarray | None  # [H, W] in [0, 1] when asked for


class Batcher:
    def __init__(self, served, load_tier, max_batch, max_wait_s, queue_size, batch_sizes):
        """`served`: the ServedModels; `load_tier()` gives the tier (called in the worker);
        `batch_sizes.observe(n)` is told the size of every forward pass."""
        self.served, self.load_tier = served, load_tier
        self.max_batch, self.max_wait_s = max_batch, max_wait_s
        self.queue = queue.Queue(queue_size)
        self.batch_sizes = batch_sizes
        self.ready, self.stopping = threading.Event(), threading.Event()
        self.tier, self.failure = None, None
        self.thread = threading.Thread(target=self.work, name="s2c-batcher", daemon=True)

    def start(self, on_failure, after_pass=None):
        """Start the worker; `on_failure(error)` is called from it if loading or warm-up fails,
        and `after_pass()`, when given, after the requests of each batch are settled (the
        batcher's process of nn/serve/fronts.py sends each front its answers of the batch in
        one message)."""
        self.on_failure = on_failure
        self.after_pass = after_pass or (lambda: None)
        self.thread.start()

    def stop(self):
        self.stopping.set()
        self.thread.join(timeout=10)

    def submit(self, job):
        """Queue `job`; QueueFull at once when the queue is full."""
        try:
            self.queue.put_nowait(job)
        except queue.Full:
            raise QueueFull from None

    def depth(self):
        return self.queue.qsize()

    def alive(self):
        return self.thread.is_alive()

    def work(self):
        try:
            self.tier = self.load_tier()
            for served in self.served:
                served.load(self.tier)
                warm_up = np.zeros((self.max_batch, *served.input_shape), np.float32)
                served.probabilities(warm_up)
        except Exception as error:  # reported by the service, which then stops
            self.failure = error
            self.on_failure(error)
            return
        self.ready.set()
        while not self.stopping.is_set():
            jobs = self.gather()
            if jobs:
                self.serve(jobs)

    def serve(self, jobs):
        """run(jobs), then after_pass(); should anything past the forward passes raise (a metric,
        Grad-CAM's bookkeeping), the requests not yet answered fail with it at once, rather than
        wait for the service's timeout, and the worker goes on to the next batch."""
        try:
            self.run(jobs)
        except Exception as error:
            failed = ForwardFailed(
                f"serving a batch failed: {type(error).__name__}: {error}".splitlines()[0]
            )
            for job in jobs:
                job.settle(error=failed)
        finally:
            self.after_pass()

    def gather(self):
        """Up to max_batch jobs: the first to come (within 0.1 s, to notice `stopping`), then
        whatever has come by max_wait_s after it, looking every POLL_S: the worker sleeps while
        requests arrive rather than waking for each one (a wake-up takes the interpreter's lock
        from the event loop that is receiving them)."""
        # BEGIN SOLUTION week 20, task Batcher.gather
        try:
            jobs = [self.queue.get(timeout=0.1)]
        except queue.Empty:
            return []
        deadline = time.monotonic() + self.max_wait_s
        while True:
            while len(jobs) < self.max_batch:
                try:
                    jobs.append(self.queue.get_nowait())
                except queue.Empty:
                    break
            remaining = deadline - time.monotonic()
            if len(jobs) >= self.max_batch or remaining <= 0:
                return jobs
            time.sleep(min(remaining, POLL_S))
        # END SOLUTION

    def run(self, jobs):
        """One forward pass per model among `jobs`, each job's future settled."""
        for served in {id(job.served): job.served for job in jobs}.values():
            group = [job for job in jobs if job.served is served]
            try:
                probabilities = served.probabilities(np.stack([job.image for job in group]))
            except Exception as error:  # a tier's failure fails this pass, not the worker
                failed = ForwardFailed(f"the forward pass of model {served.name} failed: "
                                       f"{type(error).__name__}: {error}".splitlines()[0])
                for job in group:
                    job.settle(error=failed)
                continue
            self.batch_sizes.observe(len(group))
            heatmaps = self.explain(served, group, probabilities)
            for job, row, heatmap in zip(group, probabilities, heatmaps, strict=True):
                if isinstance(heatmap, Exception):
                    job.settle(error=heatmap)
                else:
                    job.settle(Result(row, len(group), heatmap))

    @staticmethod
    def explain(served, group, probabilities):
        """The Grad-CAM heatmap of each job that asks for one (of its top class), else None; an
        ExplainUnavailable in place of the heatmaps when Grad-CAM fails on this model."""
        asking = [index for index, job in enumerate(group) if job.explain is not None]
        heatmaps = [None] * len(group)
        if not asking:
            return heatmaps
        images = np.stack([group[index].image for index in asking]) * np.float32(255)
        classes = probabilities[asking].argmax(axis=1)
        try:
            maps = group[asking[0]].explain(served.model, served.normalizer(images), classes)
        except Exception as error:  # e.g. an int8 model, which has no backward
            unavailable = ExplainUnavailable(f"Grad-CAM failed on model {served.name}: {error}")
            for index in asking:
                heatmaps[index] = unavailable
            return heatmaps
        for index, heatmap in zip(asking, maps, strict=True):
            heatmaps[index] = np.asarray(heatmap, np.float32)
        return heatmaps


def settling(future, loop):
    """A Job's `settle` for an asyncio `future` of `loop`: it hands the future its result (or
    error) on the loop's thread."""

    def settle(result=None, error=None):
        def set_future():
            if future.done():  # the client went away and the request was cancelled
                return
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)

        loop.call_soon_threadsafe(set_future)

    return settle

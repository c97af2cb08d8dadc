"""The batcher's process of `python -m nn.serve --http-workers N` alone, without HTTP: what it
costs a request, and how many forward passes a second it sustains when fed faster than it serves.

    python -m bench.serve_batcher --checkpoint runs/lenet5-mnist-2ep/best.npz --stage 3
    python -m bench.serve_batcher --checkpoint runs/lenet5-mnist-2ep/best.npz --stage 4 \
        --variant nvcc --fronts 6 --max-batch 16

This process runs what the batcher's process runs (a Batcher, nn/serve/batcher.py, and a Relay,
nn/serve/channel.py), fed by --fronts stand-in fronts: processes that each keep --in-flight
requests (a float32 image of the model's input shape) waiting down a real pipe, sending a new one
for each answer. With more requests in flight than --max-batch, the queue is never empty and
every pass is a full batch: the passes a second are the batcher's process's own limit, the HTTP
fronts' cost apart (bench.serve_load measures the whole service). Reported over --seconds, after
a second of warm-up: answers and passes a second, the mean batch, and the process's CPU time a
request, in all and by thread (on Linux): the relay's (reading requests, queueing them), the
answers' sender's, and the worker's (gathering, the forward passes' host side, settling).
"""

import argparse
import os
import resource
import sys
import threading
import time
from multiprocessing import get_context

import numpy as np

from nn.evaluate import add_tier_arguments
from nn.serve.assembly import MAX_WAIT_MS, SWITCH_INTERVAL_S, make_batcher
from nn.serve.channel import Relay
from nn.serve.metrics import Metrics
from nn.serve.models import read_served

WARM_UP_S = 1.0


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.serve_batcher",
                                     description=__doc__.split("\n")[0])  # fmt: skip
    parser.add_argument("--checkpoint", required=True, action="append")
    add_tier_arguments(parser)
    parser.add_argument("--fronts", type=int, default=6, help="stand-in front processes")
    parser.add_argument("--in-flight", type=int, default=16, help="requests each front keeps "
                        "waiting (in all more than --max-batch: the queue is never empty)")
    parser.add_argument("--max-batch", type=int, default=16)
    parser.add_argument("--max-wait-ms", type=float, default=MAX_WAIT_MS)
    parser.add_argument("--queue", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1, help="the worker's native threads")
    parser.add_argument("--seconds", type=float, default=5.0, help="measured, after a warm-up")
    args = parser.parse_args(argv)
    if args.fronts * args.in_flight > args.queue:
        parser.error("--fronts times --in-flight must be at most --queue (no request refused)")
    return args


def front(connection, input_shape, in_flight, stop):
    """A stand-in front: `in_flight` requests waiting, a new one sent for each answer."""
    image = np.random.default_rng(0).random(input_shape, dtype=np.float32)
    numbers = iter(range(sys.maxsize))
    for _ in range(in_flight):
        connection.send((next(numbers), 0, False, image))
    while not stop.is_set():
        if connection.poll(0.1):
            for _ in connection.recv():
                connection.send((next(numbers), 0, False, image))


def cpu_seconds_by_thread():
    """{thread name: CPU seconds} of this process's Python threads, from /proc (Linux)."""
    seconds = {}
    for thread in threading.enumerate():
        try:
            with open(f"/proc/self/task/{thread.native_id}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        seconds[thread.name] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return seconds


def snapshot(counts):
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return (time.monotonic(), usage.ru_utime + usage.ru_stime, cpu_seconds_by_thread(),
            counts.requests, counts.passes)  # fmt: skip


class Counts:
    """The Batcher's `batch_sizes`, counting passes and the requests in them (and the service's
    histogram too: the worker observes both)."""

    def __init__(self, histogram):
        self.histogram, self.passes, self.requests = histogram, 0, 0

    def observe(self, size):
        self.histogram.observe(size)
        self.passes, self.requests = self.passes + 1, self.requests + size


def main(argv=None):
    args = parse_args(argv)
    sys.setswitchinterval(SWITCH_INTERVAL_S)  # as the batcher's process runs
    served = read_served(args.checkpoint)
    counts = Counts(Metrics(args.max_batch, None).batch_size)
    batcher = make_batcher(args, served, counts)
    context = get_context("spawn")
    pipes = [context.Pipe() for _ in range(args.fronts)]
    relay = Relay([ours for ours, _ in pipes], served, batcher, context.RawValue("i", 0))
    failed = []
    batcher.start(failed.append, after_pass=relay.hand_over)
    while not batcher.ready.wait(0.1):
        if failed:
            raise failed[0]
    stopping, stop = threading.Event(), context.Event()
    relaying = threading.Thread(target=relay.run, args=(stopping,), name="s2c-relay")
    relaying.start()
    fronts = [context.Process(target=front, args=(theirs, served[0].input_shape, args.in_flight,
                                                  stop)) for _, theirs in pipes]  # fmt: skip
    try:
        for process in fronts:
            process.start()
        time.sleep(WARM_UP_S)
        start = snapshot(counts)
        time.sleep(args.seconds)
        end = snapshot(counts)
    finally:
        stop.set()
        for process in fronts:
            process.join(10)
        stopping.set()
        relaying.join(10)
        batcher.stop()
    return 0 if report(args, start, end) else 1


def report(args, start, end):
    """Print what was measured between the snapshots `start` and `end`; False when nothing was
    answered."""
    seconds, cpu = end[0] - start[0], end[1] - start[1]
    requests, passes = end[3] - start[3], end[4] - start[4]
    if not requests:
        print("error: no request was answered", file=sys.stderr)
        return False
    print(f"{args.fronts} fronts x {args.in_flight} in flight, --max-batch {args.max_batch}, "
          f"--max-wait-ms {args.max_wait_ms:g}, stage {args.stage}"
          f"{f' ({args.variant})' if args.variant else ''}: {requests / seconds:,.0f} answers/s, "
          f"{passes / seconds:,.0f} passes/s ({seconds / passes * 1000:.2f} ms a pass), mean "
          f"batch {requests / passes:.1f}; the batcher's process: {cpu / seconds:.0%} of a core, "
          f"{cpu / requests * 1e6:.1f} us of CPU a request")  # fmt: skip
    by_thread = {name: (end[2][name] - start[2].get(name, 0)) / requests * 1e6
                 for name in end[2] if name != "MainThread"}  # fmt: skip
    print("  by thread, us a request: " + ", ".join(f"{name} {us:.1f}"
                                                     for name, us in by_thread.items()))
    return True


if __name__ == "__main__":
    sys.exit(main())

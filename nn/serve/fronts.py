"""The service as several processes (`python -m nn.serve --http-workers N`): N HTTP fronts on one
port, feeding one batcher's process, which owns the tier.

One process's HTTP work (parsing, routing, decoding, answering in JSON) limits how many requests
a second it answers, well before a batched forward pass does. Here the command's process only
supervises: it binds the port, then starts (spawns: no process inherits another's tier or threads)

    the batcher's process   loads the tier and the models, runs the Batcher (nn/serve/batcher.py)
                            and a Relay (nn/serve/channel.py) taking every front's requests into it
    N HTTP fronts           each uvicorn with the app (nn/serve/app.py) on the shared listening
                            socket (the kernel hands each connection to one of them); each decodes
                            and preprocesses its requests and sends the network's input down its
                            pipe to the batcher's process

and waits. Ctrl-C or SIGTERM stops the fronts first (each finishes the requests it holds), then
the batcher's process. The children run in their own process group, so that a terminal's Ctrl-C
reaches the supervisor alone and the order holds, and each stops itself if the supervisor dies.
Should a child exit on its own, the service stops, with the batcher's exit status (a checkpoint
that cannot be loaded: one line on stderr, as in one process) or 1.

Metrics: every process counts in prometheus_client's multiprocess mode, in a directory the
supervisor makes and removes (nn/serve/metrics.py); /metrics from any front adds them all up.
"""

import asyncio
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
from multiprocessing import get_context, parent_process
from multiprocessing.connection import wait

import uvicorn

from nn.exits import reporting
from nn.serve.app import create_app
from nn.serve.assembly import (
    SWITCH_INTERVAL_S,
    load_failure_status,
    make_batcher,
    print_address,
    tier_name,
    uvicorn_config,
)
from nn.serve.channel import Relay, RemoteBatcher
from nn.serve.decoding import MAX_BODY_BYTES
from nn.serve.metrics import Metrics
from nn.serve.models import read_served

STOP_TIMEOUT_S = 10  # a child still running this long after SIGTERM is killed
BACKLOG = 2048  # connections the kernel holds for the fronts to accept (uvicorn's default)


def serve_with_fronts(args):
    """Supervise the batcher's process and args.http_workers fronts until Ctrl-C or SIGTERM (0),
    or until one of them exits (its status)."""
    served = read_served(args.checkpoint)  # a bad checkpoint: one line, before listening
    try:
        listener = socket.create_server((args.host, args.port), backlog=BACKLOG,
                                        family=socket.AF_INET6 if ":" in args.host
                                        else socket.AF_INET)  # fmt: skip
    except OSError as error:
        print(f"error: cannot listen on {args.host}:{args.port}: {error}", file=sys.stderr)
        return 1
    metrics_dir = tempfile.mkdtemp(prefix="s2c-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir  # the children's, from their start
    context = get_context("spawn")
    ready, depth = context.Event(), context.RawValue("i", 0)
    pipes = [context.Pipe() for _ in range(args.http_workers)]
    batcher = context.Process(target=run_batcher, name="s2c-batcher",
                              args=(args, [ours for ours, _ in pipes], ready, depth))  # fmt: skip
    fronts = [context.Process(target=run_front, name=f"s2c-front-{number}",
                              args=(args, served, theirs, listener, ready, depth))
              for number, (_, theirs) in enumerate(pipes)]  # fmt: skip
    stopping = threading.Event()
    for signal_number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signal_number, lambda *_: stopping.set())
    try:
        for process in (batcher, *fronts):
            process.start()
        listener.close()  # the fronts hold it now; a pipe's end is closed here so that a
        for end in (end for pipe in pipes for end in pipe):  # child's exit ends its pipe
            end.close()
        print_address(args, served)
        print(f"processes: batcher {batcher.pid}, HTTP fronts "
              f"{' '.join(str(front.pid) for front in fronts)}", flush=True)  # fmt: skip
        exited = []
        while not exited and not stopping.is_set():
            exited = wait([process.sentinel for process in (batcher, *fronts)], timeout=0.2)
        gone = [process for process in (batcher, *fronts) if process.sentinel in exited]
    finally:
        stop(fronts)
        stop([batcher])
        shutil.rmtree(metrics_dir, ignore_errors=True)
    if not gone:  # Ctrl-C or SIGTERM
        return 0
    name, status = gone[0].name, gone[0].exitcode  # joined by stop()
    if name == batcher.name and status > 0:  # it could not load: it said why in one line
        return status
    what = f"signal {-status}" if status < 0 else f"status {status}"
    print(f"error: {name} exited ({what}): the service has stopped", file=sys.stderr)
    return 1


def stop(processes):
    """SIGTERM to each of `processes`, then wait; SIGKILL to any still running after
    STOP_TIMEOUT_S."""
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(STOP_TIMEOUT_S)
        if process.is_alive():
            process.kill()
            process.join()


def detach():
    """A child's start: its own process group (Ctrl-C goes to the supervisor alone, which stops
    the children in order), and a SIGTERM to itself should the supervisor die."""
    os.setpgid(0, 0)
    supervisor = parent_process().sentinel

    def watch():
        wait([supervisor])
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="s2c-supervisor-watch", daemon=True).start()


def run_batcher(args, connections, ready, depth):
    """The batcher's process: its exit status is the service's when it fails to load."""
    detach()
    sys.exit(reporting(lambda: batch(args, connections, ready, depth)))


def batch(args, connections, ready, depth):
    stopping, failed = threading.Event(), threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    served = read_served(args.checkpoint)
    counts = Metrics(args.max_batch, None, shared=True)  # the fronts' /metrics show its queue
    batcher = make_batcher(args, served, counts.batch_size)
    relay = Relay(connections, served, batcher, depth)
    batcher.start(lambda error: failed.set(), after_pass=relay.hand_over)
    threading.Thread(target=relay.run, args=(stopping,), name="s2c-relay", daemon=True).start()
    while not stopping.wait(0.1) and not failed.is_set():
        if batcher.ready.is_set():
            ready.set()
    stopping.set()
    batcher.stop()
    return load_failure_status(batcher.failure) if failed.is_set() else 0


def run_front(args, served, connection, listener, ready, depth):
    """An HTTP front: uvicorn on the shared `listener`, its Batcher a RemoteBatcher."""
    detach()
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    batcher = RemoteBatcher(connection, served, ready, depth)
    metrics = Metrics(args.max_batch, batcher.depth, shared=True)
    app = create_app(served, batcher, metrics, tier_name(args), args.body_timeout_s,
                     MAX_BODY_BYTES)  # fmt: skip
    config = uvicorn_config(app, args)
    server = uvicorn.Server(config)

    async def answer():
        batcher.listen(asyncio.get_running_loop())
        await server.serve(sockets=[listener])

    with asyncio.Runner(loop_factory=config.get_loop_factory()) as runner:
        runner.run(answer())

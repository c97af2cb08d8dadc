"""`python -m nn.serve --checkpoint CKPT [--checkpoint CKPT2 ...] [--stage N]`: serve trained
classifiers over HTTP (nn/serve/app.py lists the routes), with dynamic batching.

    python -m nn.serve --checkpoint runs/lenet5-mnist-stage2/best.npz --stage 3
    make serve CHECKPOINT=runs/lenet5-mnist-stage2/best.npz STAGE=3

It listens on 127.0.0.1 (this machine only) unless --host says otherwise, and prints the address
of the page. A checkpoint that cannot be served, or a tier that cannot run, is one line on stderr
and nn.predict's exit status (nn/exits.py); the tier is loaded by the batcher's worker after the
server starts, and /health answers 503 until it and the warm-up are done.

With --http-workers N (N > 1), N processes answer HTTP on the one port and send the preprocessed
images to one batcher's process, which owns the tier (nn/serve/fronts.py): for when one process's
HTTP work, not the forward passes, limits how many requests a second the service answers.
"""

import argparse
import sys
import threading
from pathlib import Path

import uvicorn

from nn.backend import refuse_simulated
from nn.evaluate import add_tier_arguments
from nn.exits import EPILOG, reporting
from nn.serve.app import create_app
from nn.serve.assembly import (
    MAX_WAIT_MS,
    SWITCH_INTERVAL_S,
    load_failure_status,
    make_batcher,
    print_address,
    tier_name,
    uvicorn_config,
)
from nn.serve.decoding import MAX_BODY_BYTES
from nn.serve.fronts import serve_with_fronts
from nn.serve.metrics import Metrics
from nn.serve.models import read_served

SIMULATED_INSTEAD = (
    "Serve on stage 3 (`python -m nn.serve --stage 3 ...`) here, and on stage 4 on a machine "
    "with an NVIDIA GPU."
)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m nn.serve", description=__doc__.split("\n")[0], epilog=EPILOG
    )
    parser.add_argument("--checkpoint", type=Path, action="append", required=True,
                        help="a trained checkpoint (float or int8); repeat to serve several")
    add_tier_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default: 127.0.0.1, this machine only)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--max-batch", type=int, default=64,
                        help="most requests in one forward pass (1: no batching)")
    parser.add_argument("--max-wait-ms", type=float, default=MAX_WAIT_MS,
                        help="longest a forward pass waits for more requests after its first "
                        "(default: %(default)s)")
    parser.add_argument("--queue", type=int, default=256,
                        help="requests that may wait; beyond, 503 with Retry-After")
    parser.add_argument("--body-timeout-s", type=float, default=10.0,
                        help="408 when a request body stalls for this long")
    parser.add_argument("--limit-concurrency", type=int, default=1024,
                        help="open connections at most; beyond, 503")
    parser.add_argument("--threads", type=int, default=1,
                        help="native threads of the worker's forward passes (BLAS, OpenMP); "
                             "1 leaves the other cores to the event loop")
    parser.add_argument("--http-workers", type=int, default=1,
                        help="processes that answer HTTP, all feeding one batcher's process, "
                             "which owns the tier (1: one process does both)")
    parser.add_argument("--access-log", action="store_true", help="log every request")
    args = parser.parse_args(argv)
    for name in ("max_batch", "queue", "limit_concurrency", "threads", "http_workers"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be an integer >= 1")
    if not args.max_wait_ms >= 0 or not args.body_timeout_s > 0:
        parser.error("--max-wait-ms must be >= 0 and --body-timeout-s > 0")
    return args


def main(argv=None):
    args = parse_args(argv)
    return reporting(lambda: serve(args))


def serve(args):
    refuse_simulated(args.stage, args.variant, "serving", SIMULATED_INSTEAD)
    if args.http_workers > 1:
        return serve_with_fronts(args)
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    served = read_served(args.checkpoint)
    holder = {}
    metrics = Metrics(args.max_batch, lambda: holder["batcher"].depth())
    batcher = holder["batcher"] = make_batcher(args, served, metrics.batch_size)
    app = create_app(served, batcher, metrics, tier_name(args), args.body_timeout_s,
                     MAX_BODY_BYTES)  # fmt: skip
    server = uvicorn.Server(uvicorn_config(app, args))
    failed = threading.Event()

    def on_failure(error):
        failed.set()
        server.should_exit = True

    batcher.start(on_failure)
    print_address(args, served)
    try:
        server.run()
    finally:
        batcher.stop()
    return load_failure_status(batcher.failure) if failed.is_set() else 0


if __name__ == "__main__":
    sys.exit(main())

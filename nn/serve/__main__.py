"""`python -m nn.serve --checkpoint CKPT [--checkpoint CKPT2 ...] [--stage N]`: serve trained
classifiers over HTTP (nn/serve/app.py lists the routes), with dynamic batching.

    python -m nn.serve --checkpoint runs/lenet5-mnist-stage2/best.npz --stage 3
    make serve CHECKPOINT=runs/lenet5-mnist-stage2/best.npz STAGE=3

It listens on 127.0.0.1 (this machine only) unless --host says otherwise, and prints the address
of the page. A checkpoint that cannot be served, or a tier that cannot run, is one line on stderr
and nn.predict's exit status (nn/exits.py); the tier is loaded by the batcher's worker after the
server starts, and /health answers 503 until it and the warm-up are done.
"""

import argparse
import sys
import threading
from pathlib import Path

import uvicorn
from threadpoolctl import threadpool_limits

from nn.backend import load_tier, refuse_simulated
from nn.evaluate import add_tier_arguments
from nn.exits import EPILOG, REPORTED, reporting
from nn.serve.app import create_app
from nn.serve.batcher import Batcher
from nn.serve.decoding import MAX_BODY_BYTES
from nn.serve.metrics import Metrics
from nn.serve.models import read_served

# The worker releases the interpreter's lock in every op of the tier (cffi, NumPy) and must take it
# back from the event loop after each: at Python's default switch interval (5 ms) a forward pass
# of ten ops can wait 50 ms behind a busy loop (a lock convoy). Switching every 0.5 ms keeps it
# near its own time; both sides of bench.serve_load run with it.
SWITCH_INTERVAL_S = 0.0005

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
    parser.add_argument("--max-wait-ms", type=float, default=5.0,
                        help="longest a forward pass waits for more requests after its first")
    parser.add_argument("--queue", type=int, default=256,
                        help="requests that may wait; beyond, 503 with Retry-After")
    parser.add_argument("--body-timeout-s", type=float, default=10.0,
                        help="408 when a request body stalls for this long")
    parser.add_argument("--limit-concurrency", type=int, default=1024,
                        help="open connections at most; beyond, 503")
    parser.add_argument("--threads", type=int, default=1,
                        help="native threads of the worker's forward passes (BLAS, OpenMP); "
                             "1 leaves the other cores to the event loop")
    parser.add_argument("--access-log", action="store_true", help="log every request")
    args = parser.parse_args(argv)
    for name in ("max_batch", "queue", "limit_concurrency", "threads"):
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
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    served = read_served(args.checkpoint)

    def tier():  # called on the worker's thread: OpenMP's thread count is per thread
        threadpool_limits(args.threads)
        loaded = load_tier(args.stage, args.impl, args.variant)
        if callable(getattr(loaded, "set_num_threads", None)):
            loaded.set_num_threads(args.threads)
        return loaded

    holder = {}
    metrics = Metrics(args.max_batch, lambda: holder["batcher"].depth())
    batcher = Batcher(served, tier, args.max_batch, args.max_wait_ms / 1000, args.queue,
                      metrics.batch_size)  # fmt: skip
    holder["batcher"] = batcher
    tier_name = f"stage {args.stage}" + (f" ({args.variant})" if args.variant else "")
    app = create_app(served, batcher, metrics, tier_name, args.body_timeout_s, MAX_BODY_BYTES)
    config = uvicorn.Config(app, host=args.host, port=args.port, access_log=args.access_log,
                            log_level="warning", timeout_keep_alive=5,
                            limit_concurrency=args.limit_concurrency)  # fmt: skip
    server = uvicorn.Server(config)
    failed = threading.Event()

    def on_failure(error):
        failed.set()
        server.should_exit = True

    batcher.start(on_failure)
    names = ", ".join(model.name for model in served)
    print(f"serving {names} on {tier_name}: open http://{args.host}:{args.port}/ "
          f"(API: /docs; ready when /health answers 200)", flush=True)  # fmt: skip
    try:
        server.run()
    finally:
        batcher.stop()
    if failed.is_set():
        error = batcher.failure
        if isinstance(error, REPORTED):
            raise error
        print(f"error: the models could not be loaded: {type(error).__name__}: {error}",
              file=sys.stderr)  # fmt: skip
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

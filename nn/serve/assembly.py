"""The service's parts made from the command's arguments (nn/serve/__main__.py): the tier the
worker loads, the batcher, uvicorn's settings, the tier's name. One process makes them all
(--http-workers 1), or the batcher's process and each HTTP front its own (nn/serve/fronts.py)."""

import sys

import uvicorn
from threadpoolctl import threadpool_limits

from nn.backend import load_tier
from nn.exits import REPORTED
from nn.serve.batcher import Batcher

# The worker releases the interpreter's lock in every op of the tier (cffi, NumPy) and must take it
# back from the event loop after each: at Python's default switch interval (5 ms) a forward pass
# of ten ops can wait 50 ms behind a busy loop (a lock convoy). Switching every 0.5 ms keeps it
# near its own time; both sides of bench.serve_load run with it.
SWITCH_INTERVAL_S = 0.0005

# How long a forward pass waits for more requests after its first, unless --max-wait-ms says:
# under load a pass fills within a millisecond, and every millisecond more adds to each request's
# time (bench.serve_load's records on the GPU, curriculum/results/serve-load-gpu-nvcc-*.md).
MAX_WAIT_MS = 1.0


def tier_loader(args):
    """What loads the tier of `args` (--stage, --impl, --variant, --threads): called on the
    worker's thread, since OpenMP's thread count is per thread (and a GPU context is too)."""

    def tier():
        threadpool_limits(args.threads)
        loaded = load_tier(args.stage, args.impl, args.variant)
        if callable(getattr(loaded, "set_num_threads", None)):
            loaded.set_num_threads(args.threads)
        return loaded

    return tier


def make_batcher(args, served, batch_sizes):
    """The Batcher of `served` with the command's --max-batch, --max-wait-ms and --queue."""
    return Batcher(served, tier_loader(args), args.max_batch, args.max_wait_ms / 1000, args.queue,
                   batch_sizes)  # fmt: skip


def tier_name(args):
    return f"stage {args.stage}" + (f" ({args.variant})" if args.variant else "")


def print_address(args, served):
    names = ", ".join(model.name for model in served)
    print(f"serving {names} on {tier_name(args)}: open http://{args.host}:{args.port}/ "
          f"(API: /docs; ready when /health answers 200)", flush=True)  # fmt: skip


def uvicorn_config(app, args):
    return uvicorn.Config(app, host=args.host, port=args.port, access_log=args.access_log,
                          log_level="warning", timeout_keep_alive=5,
                          limit_concurrency=args.limit_concurrency)  # fmt: skip


def load_failure_status(error):
    """The exit status of a service whose worker could not load the models (`error`): a REPORTED
    error is raised for nn.exits.reporting to print, any other printed here as one line."""
    if isinstance(error, REPORTED):
        raise error
    print(f"error: the models could not be loaded: {type(error).__name__}: {error}",
          file=sys.stderr)  # fmt: skip
    return 1

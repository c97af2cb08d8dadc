"""Load test of the service (nn/serve/): batch-1 serving against dynamic batching, side by side in
one run; writes OUTPUT.json and OUTPUT.md.

    make train STAGE=3 ARGS='--model lenet5 --data mnist --epochs 5 --run-dir runs/lenet5-mnist-5ep'
    python -m bench.serve_load --checkpoint runs/lenet5-mnist-5ep/best.npz --stage 3 \
        --output curriculum/results/serve-load-cpu

and, where a forward pass costs more (the Fashion CNN's 896,522 parameters, briefly trained: any
weights serve for timing):

    make train STAGE=3 ARGS='--model fashion_cnn --data mnist --epochs 1 --train-size 5000 \
        --val-size 1000 --run-dir runs/fashion_cnn-mnist-short'
    python -m bench.serve_load --checkpoint runs/fashion_cnn-mnist-short/best.npz --stage 3 \
        --output curriculum/results/serve-load-fashion-cpu

The service is started twice as its own process on a free loopback port (nn/serve/launch.py):
with --max-batch 1 (every request its own forward pass) and with dynamic batching (--max-batch,
--max-wait-ms), both running at once. Taking turns (--rounds), --clients concurrent clients
(httpx, asyncio), spread over --processes client processes, send each side --requests POST
/classify in all, each a PNG of an MNIST test digit (28x28: the network's input as it is, so that
the comparison is of serving and batching, not of preprocessing), stopping early at --time-limit
seconds a side; a few warm-up requests go first, untimed. Reported per side: requests answered
200, errors (any other status or a transport error), latency p50 and p99 as the clients saw it,
throughput (answers per second of wall-clock time) and the mean batch size the answers rode in.
The clients run on the same machine as the service: on a small
shared machine they take part of its CPU, and the load average before and after is in the record.

With --http-workers N, both sides answer HTTP in N front processes feeding one batcher's process
(`python -m nn.serve --http-workers N`, nn/serve/fronts.py): the same number of fronts on each side,
so that the comparison stays one of batching. Where one process's HTTP work is what limits a
side (the `GET /health` row says how many answers/s HTTP alone allows), more fronts lift it.

On a machine with an NVIDIA GPU: the same with --stage 4 (the nvcc variant: --variant nvcc),
--output curriculum/results/serve-load-gpu-nvcc-wait1, e.g. with --processes 8 --http-workers 6.
"""

import argparse
import asyncio
import io
import itertools
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import httpx
import numpy as np
from PIL import Image

from datasets import load
from nn.report import machine
from nn.serve.assembly import MAX_WAIT_MS
from nn.serve.launch import running_service

TARGET_SPEEDUP = 4.0  # dynamic batching's throughput over batch-1's, at 32 clients
TARGET_P99_RATIO = 2.0  # dynamic batching's p99 latency at most this times batch-1's
WARM_UP = 64


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.serve_load",
                                     description=__doc__.split("\n")[0])  # fmt: skip
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--stage", type=int, default=3)
    parser.add_argument("--variant", help="stage 4's variant")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--processes", type=int, default=2,
                        help="client processes the clients are spread over (one process's "
                             "event loop alone cannot keep 32 clients busy here)")
    parser.add_argument("--time-limit", type=float, default=120.0,
                        help="seconds each side may send for, at most")
    parser.add_argument("--rounds", type=int, default=4,
                        help="the sides take turns, each loaded this many times")
    parser.add_argument("--max-batch", type=int, default=64, help="dynamic batching's largest")
    parser.add_argument("--max-wait-ms", type=float, default=MAX_WAIT_MS)
    parser.add_argument("--http-workers", type=int, default=1,
                        help="HTTP front processes of each side's service (nn.serve's own flag)")
    parser.add_argument("--data-dir", help="where mnist/ lives (default: NN_DATA_DIR, ...)")
    parser.add_argument("--output", type=Path, help="write OUTPUT.json and OUTPUT.md")
    return parser.parse_args(argv)


def png_bytes(pixels):
    """A uint8 [H, W] image as PNG bytes."""
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "PNG")
    return buffer.getvalue()


async def send_all(url, bodies, count, clients, time_limit, path="/classify"):
    """POST `count` requests to url+path from `clients` concurrent clients, the i-th sending
    bodies[i % len(bodies)] (a (content, content_type) pair; (None, None): a GET instead), until
    `time_limit` seconds pass.
    Returns (replies: [(index, status, seconds, JSON or None)], transport errors, seconds)."""
    replies, failures, numbers = [], [], itertools.count()
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as client:
        deadline = time.monotonic() + time_limit

        async def one_client():
            for index in numbers:
                if index >= count or time.monotonic() > deadline:
                    return
                content, kind = bodies[index % len(bodies)]
                start = time.perf_counter()
                try:
                    reply = await (client.get(path) if content is None else client.post(
                        path, content=content, headers={"content-type": kind}))  # fmt: skip
                except httpx.HTTPError as error:
                    failures.append(f"{type(error).__name__}: {error}")
                    continue
                seconds = time.perf_counter() - start
                body = reply.json() if reply.status_code == 200 else None
                replies.append((index, reply.status_code, seconds, body))

        start = time.perf_counter()
        await asyncio.gather(*(one_client() for _ in range(clients)))
        return replies, failures, time.perf_counter() - start


def client_process(url, bodies, count, clients, time_limit, path):
    """send_all in a process of its own: [(status, seconds, batch size or None)], failures."""
    replies, failures, _ = asyncio.run(send_all(url, bodies, count, clients, time_limit, path))
    return [(status, seconds, body and body.get("batch_size")) for _, status, seconds, body
            in replies], failures  # fmt: skip


def load_from_processes(url, bodies, count, clients, processes, time_limit, path="/classify"):
    """send_all's load spread over `processes` processes: (replies, failures, wall seconds)."""
    shares = [count // processes + (n < count % processes) for n in range(processes)]
    users = [clients // processes + (n < clients % processes) for n in range(processes)]
    with ProcessPoolExecutor(processes) as pool:
        list(pool.map(int, range(processes)))  # the processes started before the clock
        start = time.perf_counter()
        done = list(pool.map(client_process, [url] * processes, [bodies] * processes, shares,
                             users, [time_limit] * processes, [path] * processes))  # fmt: skip
        seconds = time.perf_counter() - start
    return ([reply for replies, _ in done for reply in replies],
            [failure for _, failures in done for failure in failures], seconds)  # fmt: skip


def service_flags(args, max_batch):
    flags = ["--checkpoint", args.checkpoint, "--stage", str(args.stage), "--max-batch",
             str(max_batch), "--max-wait-ms", str(args.max_wait_ms),
             "--queue", str(max(256, 2 * args.clients)),
             "--http-workers", str(args.http_workers)]  # fmt: skip
    return flags + (["--variant", args.variant] if args.variant else [])


def measure_sides(args, bodies):
    """Both sides, each its own service, both started at once and warmed up, then loaded in
    turns (--rounds rounds of --requests / --rounds each), so that a change in the machine's
    other load falls on both alike."""
    sides = {1: "batch-1 (--max-batch 1)",
             args.max_batch: f"dynamic batching (--max-batch {args.max_batch})"}  # fmt: skip
    gathered = {size: ([], [], 0.0) for size in sides}
    ceiling = ([], [], 0.0)  # GET /health from the same clients: what HTTP alone allows here
    with running_service(service_flags(args, 1)) as batch1_url, \
            running_service(service_flags(args, args.max_batch)) as dynamic_url:  # fmt: skip
        urls = {1: batch1_url, args.max_batch: dynamic_url}
        for url in urls.values():
            asyncio.run(send_all(url, bodies, WARM_UP, args.clients, args.time_limit))
        share, time_limit = args.requests // args.rounds, args.time_limit / args.rounds
        for _ in range(args.rounds):
            for size, url in urls.items():
                gathered[size] = joined(gathered[size], load_from_processes(
                    url, bodies, share, args.clients, args.processes, time_limit))
            ceiling = joined(ceiling, load_from_processes(
                dynamic_url, [(None, None)], share, args.clients, args.processes, time_limit,
                "/health"))  # fmt: skip
    return ([summary(args, name, size, *gathered[size]) for size, name in sides.items()],
            summary(args, "GET /health (no work)", args.max_batch, *ceiling))


def joined(before, more):
    """Two (replies, failures, seconds) of one side, as one."""
    return before[0] + more[0], before[1] + more[1], before[2] + more[2]


def summary(args, name, max_batch, replies, failures, seconds):
    """One side's row of the record."""
    answered = [reply for reply in replies if reply[0] == 200]
    latencies = np.array([reply[1] for reply in answered]) * 1000
    statuses = sorted({reply[0] for reply in replies if reply[0] != 200})
    sizes = [reply[2] for reply in answered if reply[2] is not None]
    return {
        "side": name, "max_batch": max_batch,
        "max_wait_ms": args.max_wait_ms if max_batch > 1 else None,
        "sent": len(replies) + len(failures), "answered": len(answered),
        "errors": len(replies) - len(answered) + len(failures),
        "error_statuses": statuses, "transport_errors": failures[:5],
        "p50_ms": float(np.percentile(latencies, 50)) if len(latencies) else None,
        "p99_ms": float(np.percentile(latencies, 99)) if len(latencies) else None,
        "throughput_per_s": len(answered) / seconds,
        "mean_batch_size": float(np.mean(sizes)) if sizes else None,
        "seconds": seconds,
    }  # fmt: skip


def main(argv=None):
    args = parse_args(argv)
    images, _ = load("mnist", "test", data_dir=args.data_dir)
    bodies = [(png_bytes(image), "image/png") for image in images[:256]]
    load_before = os.getloadavg()
    sides, ceiling = measure_sides(args, bodies)
    batch1, dynamic = sides
    record = {
        "command": "python -m bench.serve_load " + " ".join(argv if argv is not None
                                                            else sys.argv[1:]),
        "machine": machine(), "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "load": {"requests": args.requests, "clients": args.clients,
                 "client_processes": args.processes, "rounds": args.rounds,
                 "http_workers": args.http_workers,
                 "time_limit_s": args.time_limit, "payload": "PNG of an MNIST test digit, 28x28"},
        "checkpoint": args.checkpoint, "stage": args.stage, "variant": args.variant,
        "sides": sides, "http_ceiling": ceiling,
        "speedup": dynamic["throughput_per_s"] / batch1["throughput_per_s"],
        "p99_ratio": (dynamic["p99_ms"] / batch1["p99_ms"]
                      if dynamic["p99_ms"] and batch1["p99_ms"] else None),
        "targets": {"errors": 0, "speedup": TARGET_SPEEDUP, "p99_ratio": TARGET_P99_RATIO},
    }  # fmt: skip
    report(record, markdown(record), args.output)
    return 0


def report(record, text, output):
    """Print `text` (the record's table) and, given `output`, write output.json and output.md."""
    print(text)
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.with_suffix(".json").write_text(json.dumps(record, indent=2) + "\n")
        output.with_suffix(".md").write_text(text)


def markdown(record):
    where = record["machine"]
    load = record["load"]
    lines = [
        "# The service under load: batch-1 serving against dynamic batching",
        "",
        f"Command: `{record['command']}`. Machine: {where['processor']}, {where['cpu_count']} "
        f"CPUs ({where['platform']}); load average (1, 5, 15 min) "
        f"{fmt_load(record['load_average_before'])} before, "
        f"{fmt_load(record['load_average_after'])} after (other work shares this machine). "
        f"Checkpoint `{record['checkpoint']}` on stage {record['stage']}"
        + (f" ({record['variant']})" if record["variant"] else "") + ". "
        f"Load: {load['requests']} requests from {load['clients']} concurrent clients in "
        f"{load['client_processes']} processes on the same machine (httpx, asyncio), at most "
        f"{load['time_limit_s']:g} s a side, the two sides taking turns in {load['rounds']} "
        f"rounds, each request a "
        f"{load['payload']}; latency as the clients saw it. "
        + (f"Each side's service answers HTTP in {load['http_workers']} front processes feeding "
           "one batcher's process (`--http-workers`)." if load["http_workers"] > 1
           else "Each side's service is one process."),
        "",
        "| side | answered | errors | p50 ms | p99 ms | requests/s | mean batch |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for side in record["sides"]:
        lines.append(
            f"| {side['side']} | {side['answered']} | {side['errors']} | "
            f"{fmt(side['p50_ms'])} | {fmt(side['p99_ms'])} | "
            f"{side['throughput_per_s']:,.0f} | {fmt(side['mean_batch_size'])} |")
    ceiling = record["http_ceiling"]
    lines += ["", f"The same clients get {ceiling['throughput_per_s']:,.0f} answers/s (p50 "
                  f"{fmt(ceiling['p50_ms'])} ms) from `GET /health`, a route that does no work, "
                  "asked in the same turns: what HTTP on this machine allows any side."]
    targets = record["targets"]
    errors = sum(side["errors"] for side in record["sides"])
    speedup_met = record["speedup"] >= targets["speedup"]
    p99_met = record["p99_ratio"] is not None and record["p99_ratio"] <= targets["p99_ratio"]
    lines += [
        "",
        f"Dynamic batching's throughput is {record['speedup']:.2f}x batch-1's (target >= "
        f"{targets['speedup']:g}x: {verdict(speedup_met)}); its p99 is "
        f"{fmt(record['p99_ratio'])}x batch-1's (target <= {targets['p99_ratio']:g}x: "
        f"{verdict(p99_met)}); errors: {errors} (target 0: {verdict(errors == 0)}).",
        "",
    ]
    return "\n".join(lines)


def verdict(met):
    return "met" if met else "NOT met"


def fmt(value):
    return "-" if value is None else f"{value:.2f}"


def fmt_load(values):
    return ", ".join(f"{value:.2f}" for value in values)


if __name__ == "__main__":
    sys.exit(main())

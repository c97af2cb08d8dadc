"""The service started as its own process, for the tests and the benchmarks that talk to it over
real HTTP on loopback: `with running_service([...flags...]) as url:` starts `python -m nn.serve`
on a free port, waits for /health to answer 200, and stops it on leaving."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port():
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def running_service(flags, ready_timeout_s=120.0, log=None):
    """The base URL of `python -m nn.serve FLAGS --port P` once /health says 200; its output goes
    to `log` (a file object; default: discarded). RuntimeError, with its output, if it exits or
    is not ready in time."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    output = log if log is not None else subprocess.DEVNULL
    process = subprocess.Popen([sys.executable, "-m", "nn.serve", *flags, "--port", str(port)],
                               cwd=ROOT, stdout=output, stderr=subprocess.STDOUT,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})  # fmt: skip
    try:
        wait_until_ready(url, process, ready_timeout_s)
        yield url
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_until_ready(url, process, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"python -m nn.serve exited with status {process.returncode}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"python -m nn.serve was not ready within {timeout_s:g} s")

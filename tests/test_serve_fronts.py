"""The service as several processes (nn/serve/fronts.py, `--http-workers N`), over real HTTP on
loopback: every process gone after Ctrl-C, a dead batcher's process a 503 or a stopped service,
never a hang; in process, a full queue on the batcher's side answered 503 at the front, and the
answers of one forward pass sent back one message a front, each with that front's answers. (What
the service answers is tested on one process and on 2 fronts alike, in test_serve.py.)"""

import asyncio
import os
import re
import signal
import subprocess
import sys
import threading
import time
import types
from multiprocessing import Event, Pipe, RawValue

import httpx
import numpy as np
import pytest
from serving import HeldModel, drawn_seven, lenet5_checkpoint, png

from nn.serve.app import create_app
from nn.serve.batcher import Batcher, ForwardFailed
from nn.serve.channel import STOPPED, Relay, RemoteBatcher
from nn.serve.decoding import MAX_BODY_BYTES
from nn.serve.launch import ROOT, free_port, running_service, wait_until_ready
from nn.serve.metrics import Metrics
from nn.serve.models import read_served

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return lenet5_checkpoint(tmp_path_factory.mktemp("fronts") / "lenet5.npz")


def flags(checkpoint):
    return ["--checkpoint", str(checkpoint), "--stage", "2", "--http-workers", "2"]


def listed_processes(log_path):
    """{"batcher": pid, "fronts": [pids]} from the line the service prints at its start."""
    for line in log_path.read_text().splitlines():
        if line.startswith("processes: batcher "):
            batcher, fronts = line.removeprefix("processes: batcher ").split(", HTTP fronts ")
            return {"batcher": int(batcher), "fronts": [int(pid) for pid in fronts.split()]}
    raise AssertionError(f"no 'processes:' line in the service's output:\n{log_path.read_text()}")


def children(pid):
    """The pids of the processes `pid` started (Linux's /proc)."""
    return [int(child) for task in os.listdir(f"/proc/{pid}/task")
            for child in open(f"/proc/{pid}/task/{task}/children").read().split()]  # fmt: skip


def status(pid):
    """The fields of /proc/PID/stat after the command's name: state, parent's pid, ..."""
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()


def parent(pid):
    return int(status(pid)[1])


def running(pid):
    """Whether `pid` is a process that has not exited (a zombie has)."""
    try:
        return status(pid)[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pids, timeout_s=20):
    deadline = time.monotonic() + timeout_s
    while any(map(running, pids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [pid for pid in pids if running(pid)]


def test_ctrl_c_stops_every_process_of_the_service(checkpoint, tmp_path):
    log_path = tmp_path / "service.log"
    with open(log_path, "w") as log, running_service(flags(checkpoint), log=log) as url:
        listed = listed_processes(log_path)
        supervisor = parent(listed["batcher"])
        everyone = [supervisor, *children(supervisor)]  # multiprocessing's resource tracker too
        assert {listed["batcher"], *listed["fronts"]} <= set(everyone)
        assert len(listed["fronts"]) == 2
        reply = httpx.post(f"{url}/classify", content=png(drawn_seven()),
                           headers={"content-type": "image/png"})  # fmt: skip
        assert reply.status_code == 200, reply.text
    assert wait_gone(everyone) == []


def test_a_dead_batcher_stops_the_service_with_an_error_not_a_hang(checkpoint, tmp_path):
    port, log_path = free_port(), tmp_path / "service.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen([sys.executable, "-m", "nn.serve", *flags(checkpoint),
                                    "--port", str(port)], cwd=ROOT, stdout=log,
                                   stderr=subprocess.STDOUT,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})  # fmt: skip
    try:
        wait_until_ready(f"http://127.0.0.1:{port}", process, 120)
        listed = listed_processes(log_path)
        everyone = children(process.pid)
        os.kill(listed["batcher"], signal.SIGKILL)
        try:  # the fronts answer 503 until the supervisor has stopped them, then no one listens
            reply = httpx.post(f"http://127.0.0.1:{port}/classify", content=png(drawn_seven()),
                               headers={"content-type": "image/png"}, timeout=10)  # fmt: skip
            assert reply.status_code == 503, reply.text
        except httpx.TransportError as error:
            assert not isinstance(error, httpx.TimeoutException)
        assert process.wait(timeout=20) == 1
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "error: s2c-batcher exited (signal 9): the service has stopped" in log_path.read_text()
    assert wait_gone(everyone) == []


def test_a_front_whose_batcher_is_gone_answers_503_at_once(checkpoint):
    served = read_served([checkpoint])
    ours, theirs = Pipe()
    ready = Event()
    ready.set()
    batcher = RemoteBatcher(ours, served, ready, RawValue("i", 0))
    app = create_app(served, batcher, Metrics(64, batcher.depth), "a tier", 5, MAX_BODY_BYTES)

    async def classify_twice_then_health():
        batcher.listen(asyncio.get_running_loop())
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://front") as client:
            send = client.post("/classify", content=png(drawn_seven()),
                               headers={"content-type": "image/png"})  # fmt: skip
            waiting = asyncio.create_task(send)
            while not batcher.pending:  # sent down the pipe, waiting for its answer
                await asyncio.sleep(0.01)
            theirs.close()  # the batcher's process dies with a request in hand
            first = await asyncio.wait_for(waiting, 10)
            second = await client.post("/classify", content=png(drawn_seven()),
                                       headers={"content-type": "image/png"})  # fmt: skip
            return first, second, await client.get("/health")

    first, second, health = asyncio.run(classify_twice_then_health())
    assert first.status_code == second.status_code == 503
    assert first.json()["detail"] == second.json()["detail"] == STOPPED
    assert health.status_code == 503 and health.json()["detail"] == "the worker has stopped"


def test_a_full_queue_in_the_batchers_process_is_a_503_with_retry_after_at_the_front():
    """A front and the batcher's side of the pipe in this process (the Relay on its thread): the
    third request finds the queue of 1 full, and the refusal comes back down the pipe."""
    held, depth = HeldModel(), RawValue("i", 0)
    metrics = Metrics(1, lambda: depth.value)
    batcher = Batcher([held], object, max_batch=1, max_wait_s=0, queue_size=1,
                      batch_sizes=metrics.batch_size)  # fmt: skip
    ours, theirs = Pipe()
    relaying = Relay([theirs], [held], batcher, depth)
    batcher.start(on_failure=print, after_pass=relaying.hand_over)
    assert batcher.ready.wait(30)
    ready, stopping = Event(), threading.Event()
    ready.set()
    relay = threading.Thread(target=relaying.run, args=(stopping,))
    relay.start()
    front = RemoteBatcher(ours, [held], ready, depth)
    app = create_app([held], front, metrics, "a tier", 5, MAX_BODY_BYTES)

    async def three_requests():
        front.listen(asyncio.get_running_loop())
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://front") as client:
            def send():
                return asyncio.create_task(client.post("/classify", content=png(drawn_seven()),
                                                       headers={"content-type": "image/png"}))

            running = send()  # taken by the worker, which holds it
            await asyncio.to_thread(held.entered.wait, 10)
            # the depth the batcher's process shares is sampled: first see the queue empty
            # again, or a depth of 1 read while `running` still waited would be taken for
            # `waiting`'s, and the two requests after it could reach the queue in either order
            while front.depth() != 0:
                await asyncio.sleep(0.01)
            waiting = send()  # fills the queue of 1
            while front.depth() < 1:
                await asyncio.sleep(0.01)
            refused = await send()
            held.release.set()
            return await running, await waiting, refused

    try:
        running, waiting, refused = asyncio.run(three_requests())
    finally:
        held.release.set()
        stopping.set()
        relay.join(10)
        batcher.stop()
    assert running.status_code == waiting.status_code == 200
    assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
    assert "queue is full" in refused.json()["detail"]


class DigitModel(HeldModel):
    """Answers each image with certainty for the digit its first pixel holds, times 10; or,
    `failing`, raises on any image but the warm-up's zeros."""

    def __init__(self, failing):
        self.failing = failing

    def probabilities(self, images):
        if self.failing and images.any():
            raise ZeroDivisionError("a planted failure")
        return np.eye(10)[np.rint(images[:, 0, 0, 0] * 10).astype(int)]


@pytest.mark.parametrize("failing", [False, True], ids=["answered", "forward-failed"])
def test_one_pass_answers_each_front_in_one_message_holding_its_own_answers(failing):
    """Two requests from each of two fronts ride in one forward pass of 4; each front gets one
    message: its own two answers (or ForwardFailed errors), under its own request numbers."""
    model, sizes = DigitModel(failing), []
    batcher = Batcher([model], object, max_batch=4, max_wait_s=30, queue_size=8,
                      batch_sizes=types.SimpleNamespace(observe=sizes.append))  # fmt: skip
    fronts = [Pipe() for _ in range(2)]
    relay = Relay([theirs for _, theirs in fronts], [model], batcher, RawValue("i", 0))
    batcher.start(on_failure=print, after_pass=relay.hand_over)
    assert batcher.ready.wait(30)
    stopping = threading.Event()
    relaying = threading.Thread(target=relay.run, args=(stopping,))
    relaying.start()
    digits = {(0, 0): 3, (0, 1): 5, (1, 0): 7, (1, 1): 2}  # (front, request number) -> its digit
    try:
        for (front, number), digit in digits.items():
            image = np.full((1, 28, 28), digit / 10, np.float32)
            fronts[front][0].send((number, 0, False, image))
        messages = [ours.recv() if ours.poll(30) else None for ours, _ in fronts]
        assert not any(ours.poll(0.2) for ours, _ in fronts), "more than one message a front"
    finally:
        stopping.set()
        relaying.join(10)
        batcher.stop()
    for front, message in enumerate(messages):
        assert [number for number, _ in message] == [0, 1]
        for number, answer in message:
            if failing:
                assert isinstance(answer, ForwardFailed) and "a planted failure" in str(answer)
            else:
                assert answer.batch_size == 4
                assert answer.probabilities.argmax() == digits[front, number]
    assert sizes == ([] if failing else [4])


def test_the_batcher_alone_serves_stand_in_fronts_and_says_at_what_cost(checkpoint, capsys):
    """bench.serve_batcher: the batcher's process of --http-workers fed over real pipes by
    stand-in fronts, on stage 2: its figures printed, no pass past --max-batch."""
    from bench import serve_batcher

    status = serve_batcher.main(["--checkpoint", str(checkpoint), "--stage", "2", "--fronts", "2",
                                 "--in-flight", "4", "--max-batch", "4", "--seconds", "0.5"])
    printed = capsys.readouterr().out
    assert status == 0, printed
    found = re.search(r"answers/s, [\d,]+ passes/s .* mean batch ([\d.]+);", printed)
    assert found and 1 <= float(found.group(1)) <= 4, printed
    assert "s2c-batcher" in printed and "s2c-relay" in printed and "s2c-answers" in printed

"""Running checks in the grader's process or in a child that may crash or hang.

Both runners have the same interface: `describe()` and `run(task, timeout) -> Result`. The
isolated one keeps a worker process (grader/worker.py) and, when the worker dies (a segfault in C
or CUDA code) or does not answer in time (a hang), reports the check as failed with a clear
message and starts a fresh worker for the next check. The in-process one limits time with
SIGALRM, which interrupts Python code (stage 1 and 2 loops, sleeps) but not native code.
"""

import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager

from tiers import REPOSITORY

from . import protocol
from .records import FAILED, CheckTimeout, Result
from .session import Session

STARTUP_SECONDS = 120  # importing a tier may compile kernels


def hang_message(op, seconds):
    return f"{op}: no answer after {seconds:g} s (hang?)"


class InProcessRunner:
    """Checks run here; a check running past its time is interrupted by SIGALRM."""

    def __init__(self, setup):
        self.session = Session(setup)

    def describe(self):
        return self.session.describe()

    def run(self, task, timeout):
        try:
            with _alarm(timeout):
                return self.session.run(task)
        except CheckTimeout:
            return Result(task.op, task.kind, FAILED, hang_message(task.op, timeout))

    def close(self):
        pass


@contextmanager
def _alarm(seconds):
    """Raise CheckTimeout in this (main) thread after `seconds`; no limit off the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise CheckTimeout

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class WorkerGone(Exception):
    """The worker died or stopped answering; the message says how."""


class IsolatedRunner:
    """Checks run in a worker process, restarted after a crash or a hang."""

    def __init__(self, setup, environment=None):
        self.setup = setup
        self.environment = environment  # None: this process's (crash_site adds ASan's)
        self.process = None
        self.info = None
        self.signal = None  # the signal that killed the last worker

    def _start(self):
        self.errors = tempfile.TemporaryFile()
        self.errors_shown = 0
        self.process = subprocess.Popen(
            [sys.executable, "-m", "grader.worker"],
            cwd=REPOSITORY,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
            env=self.environment,
        )
        protocol.send(self.process.stdin, self.setup)
        self.info = self._receive(STARTUP_SECONDS)

    def describe(self):
        """The worker's Session.describe(); raises WorkerGone if it cannot even start."""
        if self.process is None:
            self._start()
        return self.info

    def run(self, task, timeout):
        self.signal = None
        try:
            if self.process is None:
                self._start()
            protocol.send(self.process.stdin, task)
            return self._receive(timeout)
        except (WorkerGone, BrokenPipeError) as gone:
            message = str(gone) if isinstance(gone, WorkerGone) else "the worker closed its pipe"
            if self.signal and self.environment is None:  # a crash: find it in the C sources
                from .crash_site import native_crash_site

                message += native_crash_site(self.setup, task, timeout + STARTUP_SECONDS)
            return Result(task.op, task.kind, FAILED, f"{task.op}: {message}")

    def _receive(self, timeout):
        """One answer from the worker within `timeout` seconds, else WorkerGone."""
        deadline = time.monotonic() + timeout
        try:
            header = self._read(protocol.HEADER.size, deadline)
            body = self._read(protocol.HEADER.unpack(header)[0], deadline)
        except TimeoutError:
            self._stop()
            raise WorkerGone(f"no answer after {timeout:g} s (hang?)") from None
        except EOFError:
            raise WorkerGone(self._death()) from None
        finally:
            self._relay_errors()
        return protocol.decode(body)

    def _read(self, count, deadline):
        chunks, fd = [], self.process.stdout.fileno()
        while count:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise TimeoutError
            chunk = os.read(fd, count)
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            count -= len(chunk)
        return b"".join(chunks)

    def _death(self):
        """'the tier crashed (signal SIGSEGV) at path:line in fn', once the worker has exited."""
        code = self.process.wait()
        self._relay_errors()
        self.signal = -code if code < 0 else None
        where = _crash_site(self.errors_text())
        self.process = None
        if code < 0:
            return f"the tier crashed (signal {signal.Signals(-code).name}){where}"
        return f"the worker exited with status {code}{where}"

    def errors_text(self):
        """All the current worker wrote to stderr."""
        self.errors.seek(0)
        return self.errors.read().decode(errors="replace")

    def _relay_errors(self):
        """Pass on what the worker wrote to stderr since last time (tier prints, warnings)."""
        text = self.errors_text()
        if len(text) > self.errors_shown:
            sys.stderr.write(text[self.errors_shown :])
            self.errors_shown = len(text)

    def _stop(self):
        self.process.kill()
        self.process.wait()
        self.process = None

    def close(self):
        if self.process is not None:
            self.process.stdin.close()  # the worker exits at end of input
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._stop()
            self.process = None


def _crash_site(stderr_text):
    """' at path:line in fn' from faulthandler's dump, or ''.

    The dump lists the innermost frame first; the first frame in the repository outside the
    grader (and .venv) is the tier's code that crashed (ctypes or NumPy frames come before it).
    """
    dump = stderr_text.split("Fatal Python")[-1]
    frames = re.findall(r'File "([^"]+)", line (\d+) in (\S+)', dump)
    if not frames:
        return ""
    ours = [
        f for f in frames if _relative(f[0]) and not _relative(f[0]).startswith(("grader", "."))
    ]
    path, line, function = (ours or frames)[0]
    return f" at {_relative(path) or path}:{line} in {function}"


def _relative(path):
    """`path` relative to the repository, or None when it lies outside."""
    relative = os.path.relpath(path, REPOSITORY)
    return None if relative.startswith("..") else relative

"""Running checks in the grader's process or in a child that may crash or hang.

Both runners have the same interface: `describe()` and `run(task, timeout) -> Result`. The
isolated one keeps a worker process (grader/worker.py) and, when the worker dies (a segfault in C
or CUDA code) or does not answer in time (a hang), reports the check as failed with a clear
message and starts a fresh worker for the next check. The in-process one limits time with
SIGALRM, which interrupts Python code (stage 1 and 2 loops, sleeps) but not native code.

How long a check may take: `timeout`, the base limit, is enough for any check of a correct tier
on an ordinary machine. A learner's check still running then is not called a hang yet: the
repository's own tier runs the same check (the yardstick), and the learner's gets the base limit
plus YARDSTICK_MULTIPLE times the yardstick's time, so that a slow machine, a busy one or numba's
CUDA simulator never fails correct code, while an endless loop is told apart ("no answer after
N s, while the repository's stage 2 answered this check in M s"). The repository's own tier,
its own yardstick, waits up to MOST_LIMITS base limits.
"""

import dataclasses
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

import tiers
from tiers import REPOSITORY

from . import protocol
from .records import FAILED, CheckTimeout, Result
from .session import Session

STARTUP_SECONDS = 120  # importing a tier may compile kernels
YARDSTICK_MULTIPLE = 5  # a learner's check may take the base limit plus this many yardsticks
MOST_LIMITS = 10  # no check waits longer than this many base limits


def hang_message(waited, yardstick=None):
    """Why a check that did not answer failed. `yardstick` is (the repository's tier's label, the
    seconds it took on the same check, or None when it did not answer in time either)."""
    message = f"no answer after {waited:.3g} s"
    if yardstick is None:
        return message + " (hang?)"
    label, seconds = yardstick
    if seconds is None:
        return (f"{message}, nor from the repository's {label} on this check: this machine is "
                "too slow or too busy for it (--timeout S raises the limit)")  # fmt: skip
    return (f"{message}, while the repository's {label} answered this check in {seconds:.3g} s: "
            "a hang (an endless loop, a deadlock)?")  # fmt: skip


def yardstick_setup(setup):
    """The same grading of the repository's own tier, or None when `setup` grades it already."""
    return dataclasses.replace(setup, impl=None) if setup.impl is not None else None


def allowed_seconds(timeout, yardstick_seconds):
    """How long a learner's check may take when the repository's tier took `yardstick_seconds`."""
    return timeout + YARDSTICK_MULTIPLE * yardstick_seconds


class InProcessRunner:
    """Checks run here; a check running past its time is interrupted by SIGALRM, then run once
    more with the limit the yardstick sets when that is longer."""

    def __init__(self, setup):
        self.session = Session(setup)
        self.label = tiers.find(setup.stage, setup.variant).label
        self.yardstick_setup = yardstick_setup(setup)
        self.yardstick = None  # the repository's tier's Session, made when first needed

    def describe(self):
        return self.session.describe()

    def run(self, task, timeout):
        first = timeout if self.yardstick_setup else MOST_LIMITS * timeout
        started = time.monotonic()
        result = _within(first, self.session.run, task)
        if result is not None:
            return result
        waited = time.monotonic() - started
        if self.yardstick_setup is None:
            return Result(
                task.op, task.kind, FAILED, f"{task.op}: {hang_message(waited)}", size=task.label
            )
        if self.yardstick is None:
            self.yardstick = Session(self.yardstick_setup)
        measured = time.monotonic()
        answered = _within(MOST_LIMITS * timeout, self.yardstick.run, task)
        seconds = time.monotonic() - measured if answered is not None else None
        allowed = allowed_seconds(timeout, seconds) if seconds is not None else 0
        if allowed > waited:  # merely slow, as the repository's tier is: once more, given longer
            result = _within(allowed, self.session.run, task)
            if result is not None:
                return result
            waited = allowed
        message = hang_message(waited, (self.label, seconds))
        return Result(task.op, task.kind, FAILED, f"{task.op}: {message}", size=task.label)

    def close(self):
        pass


def _within(seconds, function, *args):
    """function(*args), or None when it runs past `seconds` (interrupted by SIGALRM)."""
    try:
        with _alarm(seconds):
            return function(*args)
    except CheckTimeout:
        return None


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
    """Checks run in a worker process, restarted after a crash or a hang. With `measure`, a check
    of a learner's tier past its base limit is timed on the repository's tier in a second worker
    (a yardstick) while it goes on running."""

    def __init__(self, setup, environment=None, measure=True):
        self.setup = setup
        self.environment = environment  # None: this process's (crash_site adds ASan's)
        self.yardstick_setup = yardstick_setup(setup) if measure else None
        self.yardstick = None  # the worker of the repository's tier, started when first needed
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
            self._await(task, timeout, time.monotonic())
            return self._receive(STARTUP_SECONDS)  # the answer has begun: the rest follows
        except (WorkerGone, BrokenPipeError) as gone:
            message = str(gone) if isinstance(gone, WorkerGone) else "the worker closed its pipe"
            if self.signal and self.environment is None:  # a crash: find it in the C sources
                from .crash_site import native_crash_site

                message += native_crash_site(self.setup, task, timeout + STARTUP_SECONDS)
            return Result(task.op, task.kind, FAILED, f"{task.op}: {message}", size=task.label)

    def _await(self, task, timeout, started):
        """Return once the worker answers `task` (or dies); stop it and raise WorkerGone with a
        hang message when that takes too long (see the module's docstring)."""
        if self.yardstick_setup is None:  # the repository's own tier: its own yardstick
            if not self._answering(started + MOST_LIMITS * timeout):
                self._hung(started)
            return
        if self._answering(started + timeout):
            return
        yardstick = self._yardstick()
        if yardstick is None:
            self._hung(started)
        protocol.send(yardstick.process.stdin, task)
        measured = time.monotonic()
        label = tiers.find(self.setup.stage, self.setup.variant).label
        ready = _answering((self, yardstick), started + MOST_LIMITS * timeout)
        if self in ready:  # the learner's answered first: the yardstick's answer is not needed
            yardstick.stop()
            return
        if not ready:  # neither answered
            yardstick.stop()
            self._hung(started, (label, None))
        seconds = time.monotonic() - measured
        try:
            yardstick._receive(STARTUP_SECONDS)
        except WorkerGone:  # the repository's tier failed: no yardstick
            self._hung(started)
        if not self._answering(started + allowed_seconds(timeout, seconds)):
            self._hung(started, (label, seconds))

    def _yardstick(self):
        """The worker grading the repository's tier (started now if needed), or None when that
        tier cannot run here."""
        if self.yardstick is None:
            self.yardstick = IsolatedRunner(self.yardstick_setup, measure=False)
        try:
            if self.yardstick.describe()["graded"]["ok"]:
                return self.yardstick
        except WorkerGone:
            pass
        return None

    def _answering(self, deadline):
        """Whether the worker starts answering (or dies) before `deadline`."""
        return self in _answering((self,), deadline)

    def _hung(self, started, yardstick=None):
        """Stop the worker that did not answer in time; raise WorkerGone saying so."""
        self.stop()
        raise WorkerGone(hang_message(time.monotonic() - started, yardstick))

    def _receive(self, timeout):
        """One answer from the worker within `timeout` seconds, else WorkerGone."""
        deadline = time.monotonic() + timeout
        try:
            header = self._read(protocol.HEADER.size, deadline)
            body = self._read(protocol.HEADER.unpack(header)[0], deadline)
        except TimeoutError:
            self.stop()
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

    def stop(self):
        """Kill the worker (a fresh one starts for the next check)."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def close(self):
        if self.yardstick is not None:
            self.yardstick.close()
        if self.process is not None:
            self.process.stdin.close()  # the worker exits at end of input
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.stop()
            self.process = None


def _answering(runners, deadline):
    """The runners whose worker starts answering (or dies) before `deadline`: [] when none."""
    streams = {runner.process.stdout.fileno(): runner for runner in runners}
    remaining = max(0.0, deadline - time.monotonic())
    return [streams[fd] for fd in select.select(list(streams), [], [], remaining)[0]]


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

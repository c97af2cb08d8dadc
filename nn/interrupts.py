"""Ctrl-C deferred to a step boundary, so that an interrupted run saves a state it can resume.

A training step changes the weights, the optimizer state, buffers (batchnorm statistics, dropout's
call counter) and the counters of progress one after the other. Stopped between two of them, the
state belongs to no step, and a run resumed from it would apply part of a step twice. While a
`DeferredInterrupt` is active, the first Ctrl-C only sets `requested`, which the training loop reads
between steps, where everything describes the same step. A second Ctrl-C raises KeyboardInterrupt at
once (the user means it) and sets `forced`: the caller then saves nothing.
"""

import signal
import sys
import threading


class Interrupted(KeyboardInterrupt):
    """Training stopped by Ctrl-C; the message says whether, and where, a checkpoint was saved."""


class DeferredInterrupt:
    """A context manager that defers SIGINT (Ctrl-C) while it is active.

    Only the main thread can handle signals, so in any other thread (and where SIGINT is ignored, as
    under nohup) it changes nothing: KeyboardInterrupt, if any, arrives wherever it arrives.
    """

    def __init__(self):
        self.requested = False
        self.forced = False
        self.previous = None

    def __enter__(self):
        self.requested = self.forced = False
        handler = signal.getsignal(signal.SIGINT)
        if threading.current_thread() is threading.main_thread() and handler is not signal.SIG_IGN:
            self.previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exception):
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
            self.previous = None
        return False

    def _handle(self, signum, frame):
        if self.requested:
            self.forced = True
            raise KeyboardInterrupt
        self.requested = True
        print("\nCtrl-C: stopping after this step to save it (Ctrl-C again: stop at once, "
              "saving nothing)", file=sys.stderr)

"""The wire between an HTTP front and the batcher's process (nn/serve/fronts.py): one duplex
multiprocessing Pipe a front, carrying pickled tuples.

    front -> batcher   (request number, model index, explain?, image float32 [C, H, W])
    batcher -> front   (request number, a Result or the exception the request fails with)

A front's app holds a `RemoteBatcher` where a one-process service holds its Batcher: `submit`
sends the Job's image, and the answers are read on the front's event loop as they come (a reader
of the pipe, no thread), each settling the Job it answers. In the batcher's process a `Relay`
thread takes the requests of every front into the Batcher, whose worker gathers them into forward
passes as it gathers one process's requests, and each answer goes back down the pipe it came from.
A full queue is a QueueFull answer (the front says 503, Retry-After); a batcher's process that is
gone is the end of the pipe: every request waiting, and every one after, is a WorkerStopped (503).
"""

import itertools
import threading
from multiprocessing.connection import wait

from nn.serve.batcher import ExplainUnavailable, Job, QueueFull, WorkerStopped

STOPPED = "the batcher's process has stopped: the service cannot classify"
DEPTH_EVERY_S = 0.05  # how often the Relay shares the queue's depth when no request comes


class RemoteBatcher:
    """A front's stand-in for the Batcher of another process: what the app uses of one (`submit`,
    `depth`, `alive`, `ready`, `failure`)."""

    def __init__(self, connection, served, ready, shared_depth):
        """`connection`: the front's end of its pipe; `served`: the ServedModels, in the batcher's
        order; `ready`: a multiprocessing Event the batcher's process sets once warmed up;
        `shared_depth`: a multiprocessing Value it keeps at its queue's depth."""
        self.connection, self.ready, self.shared_depth = connection, ready, shared_depth
        self.model_index = {id(model): index for index, model in enumerate(served)}
        self.pending = {}  # request number -> the settle of its Job
        self.numbers = itertools.count()
        self.failure = None  # a batcher that cannot load stops the whole service (fronts.py)
        self.stopped = False

    def listen(self, loop):
        """Read answers on `loop`, the front's event loop, whenever the pipe has some."""
        self.loop = loop
        loop.add_reader(self.connection.fileno(), self.receive)

    def submit(self, job):
        """Send `job` to the batcher's process; WorkerStopped at once when it is gone."""
        if self.stopped:
            raise WorkerStopped(STOPPED)
        number = next(self.numbers)
        self.pending[number] = job.settle
        message = (number, self.model_index[id(job.served)], job.explain is not None, job.image)
        try:
            self.connection.send(message)
        except OSError:
            self.stop()

    def receive(self):
        try:
            while self.connection.poll():
                number, answer = self.connection.recv()
                settle = self.pending.pop(number)
                if isinstance(answer, Exception):
                    settle(error=answer)
                else:
                    settle(answer)
        except (EOFError, OSError):
            self.stop()

    def stop(self):
        """The batcher's process is gone: fail every request waiting for it."""
        if not self.stopped:
            self.stopped = True
            self.loop.remove_reader(self.connection.fileno())
        for settle in self.pending.values():
            settle(error=WorkerStopped(STOPPED))
        self.pending.clear()

    def depth(self):
        return self.shared_depth.value

    def alive(self):
        return not self.stopped


class Relay:
    """In the batcher's process: the fronts' requests into `batcher`, its answers back."""

    def __init__(self, connections, served, batcher, shared_depth):
        self.connections, self.served, self.batcher = connections, served, batcher
        self.shared_depth = shared_depth
        self.sending = {connection: threading.Lock() for connection in connections}
        self.grad_cam = None

    def run(self, stopping):
        """Relay until `stopping` is set or every front has closed its pipe (a thread's body)."""
        open_ = list(self.connections)
        while open_ and not stopping.is_set():
            for connection in wait(open_, timeout=DEPTH_EVERY_S):
                try:
                    number, model, explain, image = connection.recv()
                except (EOFError, OSError):  # the front has exited
                    open_.remove(connection)
                    continue
                self.take(connection, number, self.served[model], explain, image)
            self.shared_depth.value = self.batcher.depth()

    def take(self, connection, number, served, explain, image):
        settle = self.answering(connection, number)
        try:
            job = Job(served, image, self.explainer() if explain else None, settle)
            self.batcher.submit(job)
        except (QueueFull, ExplainUnavailable) as error:
            settle(error=error)

    def explainer(self):
        """nn.explain.grad_cam (the front has checked that it imports)."""
        if self.grad_cam is None:
            try:
                from nn.explain import grad_cam
            except ImportError as error:
                raise ExplainUnavailable(f"Grad-CAM (nn.explain) cannot be imported in the "
                                         f"batcher's process: {error}") from None  # fmt: skip
            self.grad_cam = grad_cam
        return self.grad_cam

    def answering(self, connection, number):
        """A Job's settle that sends its answer down `connection` (from the worker's thread, or
        this one for a refusal: a lock keeps two answers from interleaving)."""
        lock = self.sending[connection]

        def settle(result=None, error=None):
            with lock:
                try:
                    connection.send((number, result if error is None else error))
                except OSError:  # the front has exited: no one is waiting
                    pass

        return settle

"""The wire between an HTTP front and the batcher's process (nn/serve/fronts.py): one duplex
multiprocessing Pipe a front, carrying pickled tuples.

    front -> batcher   (request number, model index, explain?, image float32 [C, H, W])
    batcher -> front   [(request number, a Result or the exception the request fails with), ...]

A front's app holds a `RemoteBatcher` where a one-process service holds its Batcher: `submit`
sends the Job's image, and the answers are read on the front's event loop as they come (a reader
of the pipe, no thread), each settling the Job it answers. In the batcher's process a `Relay`
thread takes the requests of every front into the Batcher, whose worker gathers them into forward
passes as it gathers one process's requests; the answers of one pass go back as one message a
front, holding that front's answers only. A full queue is a QueueFull answer (the front says 503,
Retry-After); a batcher's process that is gone is the end of the pipe: every request waiting,
and every one after, is a WorkerStopped (503).

The one batcher's process serves every front, and every message costs it system calls and a
pickling, and each system call a chance for another of its threads to take the interpreter's
lock: so the worker, whose passes every request waits on, touches no pipe (it hands a pass's
answers over at once), and a pass is answered in as few messages as there are fronts in it.
"""

import itertools
import queue
import selectors
import threading

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
        """Settle the requests of one message (the loop calls again while the pipe holds more)."""
        try:
            answers = self.connection.recv()
        except (EOFError, OSError):
            self.stop()
            return
        for number, answer in answers:
            settle = self.pending.pop(number)
            if isinstance(answer, Exception):
                settle(error=answer)
            else:
                settle(answer)

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
    """In the batcher's process: the fronts' requests into `batcher`, its answers back. Two
    threads: `run` reads every front's requests into the Batcher, and `send_answers` writes the
    answers that the worker hands over after each pass (`hand_over`, the Batcher's after_pass),
    each front's in one message, while the worker gathers its next batch. The worker touches no
    pipe, and reading never waits on writing: were one thread to do both, a front blocked
    sending it requests while it was blocked sending that front answers would stop both."""

    def __init__(self, connections, served, batcher, shared_depth):
        self.connections, self.served, self.batcher = connections, served, batcher
        self.shared_depth = shared_depth
        self.answers = self.no_answers()  # of the pass being served, by front
        self.outbox = queue.SimpleQueue()  # {front: answers} to send; None: stop sending
        self.grad_cam = None

    def no_answers(self):
        return {connection: [] for connection in self.connections}

    def run(self, stopping):
        """Relay until `stopping` is set or every front has closed its pipe (a thread's body,
        which starts the one sending the answers)."""
        sender = threading.Thread(target=self.send_answers, name="s2c-answers", daemon=True)
        sender.start()
        # One selector for the whole run (multiprocessing's wait() makes one a call): each round
        # reads one message from every pipe that has one.
        with selectors.DefaultSelector() as selector:
            for connection in self.connections:
                selector.register(connection, selectors.EVENT_READ)
            fronts = len(self.connections)
            while fronts and not stopping.is_set():
                for key, _ in selector.select(DEPTH_EVERY_S):
                    try:
                        message = key.fileobj.recv()
                    except (EOFError, OSError):  # the front has exited: no one waits for these
                        selector.unregister(key.fileobj)
                        fronts -= 1
                        continue
                    self.take(key.fileobj, *message)
                self.shared_depth.value = self.batcher.depth()
        self.outbox.put(None)  # the sender ends after what was handed over before

    def take(self, connection, number, model, explain, image):
        try:
            job = Job(self.served[model], image, self.explainer() if explain else None,
                      self.answering(connection, number))  # fmt: skip
            self.batcher.submit(job)
        except (QueueFull, ExplainUnavailable) as error:  # refused now: answered now
            self.outbox.put({connection: [(number, error)]})

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
        """A Job's settle, on the worker's thread: the answer waits with the pass's others."""

        def settle(result=None, error=None):
            self.answers[connection].append((number, result if error is None else error))

        return settle

    def hand_over(self):
        """The Batcher's after_pass, on the worker's thread: the pass's answers to the sending
        thread (one hand-over a pass, where sending them here would take a system call a front,
        each a chance for another thread to hold the interpreter's lock)."""
        answers, self.answers = self.answers, self.no_answers()
        if any(answers.values()):
            self.outbox.put(answers)

    def send_answers(self):
        """Send what is handed over, one message a front, until None (a thread's body)."""
        while (answers := self.outbox.get()) is not None:
            for connection, answered in answers.items():
                if answered:
                    try:
                        connection.send(answered)
                    except OSError:  # the front has exited: no one is waiting
                        pass

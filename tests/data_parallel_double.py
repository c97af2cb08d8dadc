"""A test double of nn/distributed/communicator.py's interface, for tests only: N ranks as N
threads of one process, each with its own model on a CPU tier (or the numba variant under the
simulator), whose all-reduce sums NumPy arrays in rank order (so every rank gets the same bits, as
from NCCL), recorded into a step being recorded as NCCL's calls are. It stands in for NCCL where
there is no GPU; it is not a way to train.
"""

import threading
from functools import reduce

import numpy as np

from stage4_cuda.runtime.recording import record_call

TIMEOUT = 60  # seconds a rank waits for the others before the test fails instead of hanging


class ThreadGroup:
    """What the ranks of one run share: a barrier and a slot per rank for what it contributes."""

    def __init__(self, size):
        self.size = size
        self.barrier = threading.Barrier(size, timeout=TIMEOUT)
        self.slots = [None] * size

    def communicators(self):
        return [ThreadCommunicator(self, rank) for rank in range(self.size)]


class ThreadCommunicator:
    """Rank `rank` of `group`: all_reduce, wait and broadcast, done at once on NumPy arrays.
    `calls` lists what it was asked to do: ("all_reduce" or "broadcast", [array shapes])."""

    def __init__(self, group, rank):
        self.group, self.rank, self.size = group, rank, group.size
        self.calls = []

    def _exchange(self, arrays):
        """Every rank's copies of its `arrays`, once all ranks have given theirs."""
        group = self.group
        group.slots[self.rank] = [host(array) for array in arrays]
        group.barrier.wait()
        everyone = list(group.slots)
        group.barrier.wait()  # all have read the slots before any rank writes its next ones
        return everyone

    def _done_and_recorded(self, name, work, arrays):
        """work() now, and again at each launch of a step being recorded (as NCCL's calls are)."""
        work()
        record_call(f"test double {name}", work, keep=arrays)

    def all_reduce(self, arrays):
        self.calls.append(("all_reduce", [array.shape for array in arrays]))

        def work():
            everyone = self._exchange(arrays)
            for number, array in enumerate(arrays):
                array[...] = reduce(np.add, (given[number] for given in everyone))

        self._done_and_recorded("all_reduce", work, arrays)

    def wait(self):
        pass  # every operation above is done when it returns

    def broadcast(self, arrays, root=0):
        self.calls.append(("broadcast", [array.shape for array in arrays]))

        def work():
            everyone = self._exchange(arrays)
            for array, given in zip(arrays, everyone[root], strict=True):
                array[...] = given

        self._done_and_recorded("broadcast", work, arrays)


def host(array):
    """A NumPy copy of a tier's array (the simulator's device arrays copy themselves)."""
    return array.copy_to_host() if hasattr(array, "copy_to_host") else np.array(array)


def run_ranks(work, size):
    """work(communicator) on `size` threads, one per rank; their results in rank order (the first
    exception raised again)."""
    results, errors = [None] * size, []

    def rank_thread(communicator):
        try:
            results[communicator.rank] = work(communicator)
        except BaseException as error:  # noqa: BLE001 -- raised again in the test's thread
            errors.append(error)
            communicator.group.barrier.abort()

    threads = [threading.Thread(target=rank_thread, args=(communicator,))
               for communicator in ThreadGroup(size).communicators()]  # fmt: skip
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results

"""The communicator data-parallel training talks to: NCCL across the processes of one machine,
one per GPU.

Its interface (the test double tests/data_parallel_double.py has the same, over threads):

- `rank`, `size`: this process's place among `size` ranks.
- `all_reduce(arrays)`: sum each device array over every rank, in place. Queued, not waited for:
  the sums start once the work queued so far on the default streams (the backward that wrote the
  gradients) has run, and run on the communicator's own stream, beside later kernels.
- `wait()`: work queued on the default streams from now on (the optimizer's step) waits for the
  sums queued so far.
- `broadcast(arrays, root=0)`: every rank's arrays become rank `root`'s (queued, then waited for).
- `close()`: the communicator freed, on every rank, once its work is done. Used as a context
  manager, it is closed when the block ends well and aborted (freed without waiting for the other
  ranks, which may be gone) when it ends in an exception. A process that exits holding a live NCCL
  communicator may crash in its exit (SIGSEGV, seen on two H200s) after training well.
"""

from nn.distributed import nccl


class NcclCommunicator:
    """Rank `rank` of `size`, joined through `unique_id` (nccl.unique_id() of the launcher), on a
    tier with the stream hooks (`Stream`, `Event`: the nvcc variant)."""

    def __init__(self, tier, rank, size, unique_id):
        if not all(hasattr(tier, hook) for hook in ("Stream", "Event", "record_call")):
            raise ValueError(f"--gpus: the {tier.NAME} tier has no streams to all-reduce on "
                             "(train on stage 4's nvcc variant)")  # fmt: skip
        self.tier, self.rank, self.size = tier, rank, size
        self.lib = nccl.library()
        self.stream = tier.Stream()
        self.stream_handle = nccl.ffi.cast("void *", self.stream.address)
        self.ready, self.done = tier.Event(), tier.Event()
        communicator = nccl.ffi.new("ncclComm_t *")
        identity = nccl.ffi.new("ncclUniqueId *")
        nccl.ffi.memmove(identity.internal, unique_id, nccl.ID_BYTES)
        nccl.check(
            "ncclCommInitRank", self.lib.ncclCommInitRank(communicator, size, identity[0], rank)
        )
        self.comm = communicator[0]

    def _queued(self, function, arrays, *extra):
        """Each of `arrays` through NCCL's `function` as one group, on the communicator's stream
        after the default streams' work so far. In a step being recorded (nn/steps/recorded.py),
        the group is recorded too, between the events' calls, which the library records."""
        self.ready.record()
        self.ready.wait(self.stream)
        calls = [(nccl.device_pointer(array), array.size, nccl.datatype(array))
                 for array in arrays]  # fmt: skip

        def group():
            lib, comm, stream = self.lib, self.comm, self.stream_handle
            nccl.check("ncclGroupStart", lib.ncclGroupStart())
            for pointer, size, datatype in calls:
                nccl.check(function, getattr(lib, function)(
                    pointer, pointer, size, datatype, *extra, comm, stream))  # fmt: skip
            nccl.check("ncclGroupEnd", lib.ncclGroupEnd())

        group()
        self.tier.record_call(f"nccl {function}", group, keep=arrays)
        self.done.record(self.stream)

    def all_reduce(self, arrays):
        self._queued("ncclAllReduce", arrays, nccl.SUM)

    def wait(self):
        self.done.wait()

    def broadcast(self, arrays, root=0):
        self._queued("ncclBroadcast", arrays, root)
        self.wait()

    def close(self):
        """Free the communicator once the stream's work is done; every rank calls it (NCCL's
        destroy is collective among the ranks of a machine). Closing twice does nothing."""
        if self.comm is not None:
            self.stream.synchronize()
            nccl.check("ncclCommDestroy", self.lib.ncclCommDestroy(self.comm))
            self.comm = None

    def abort(self):
        """Free the communicator at once, its queued work dropped, whatever the other ranks do."""
        if self.comm is not None:
            nccl.check("ncclCommAbort", self.lib.ncclCommAbort(self.comm))
            self.comm = None

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback):
        if kind is None:
            self.close()
        else:
            self.abort()

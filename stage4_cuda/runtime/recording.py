"""A step recorded once and launched again: the kernel launches of one run of a function, made
again from the host on the same buffers (stage 4's recording hooks, CONTRACT.md "Recorded steps").

nn's trainer uses it (nn/steps/recorded.py): a training step makes the same launches on arrays of
the same shapes at every step, so after one real step the Python work (checks, allocation, the
layers' bookkeeping) is done. `record_step(step)` runs `step()` once, for real, and keeps every
launch it made (the kernel with its grid, its arguments, their names) together with the
arguments themselves: every array a launch read or wrote stays allocated as long as the
recording, so each later launch finds the same buffers (allocated once, as in llm.c). What changes
from step to step is either copied into those buffers before a launch (`copy_into`: the batch's
indices) or is a scalar argument replaced by its name (`launch(lr=...)`: a learning rate that
follows a schedule), converted to the type it was recorded with.

The numba variant's recordings are these; the nvcc variant records its library's calls the same
way (nvcc_impl/recording.py), into the same Recording, and can capture one into a CUDA graph.
The checks' own kernel (the range of labels, `checks.range_kernel`, whose result the host reads)
is not recorded: it computes nothing the step uses.
"""

import inspect

from . import checks, launch
from .device import flat


class Recording:
    """The launches of one run of a step, in order; `launch(**scalars)` makes them again from the
    host, with the scalar arguments named in `scalars` (e.g. lr=0.01) replaced."""

    def __init__(self):
        # (what: "numba" or the library function's name, the launch: a callable, its arguments,
        # their names, what keeps the arrays behind the arguments alive)
        self.launches = []

    def add(self, what, launcher, arguments, names, keep=None):
        arguments = list(arguments)
        keep = arguments if keep is None else keep
        self.launches.append((what, launcher, arguments, names, keep))

    def launch(self, **scalars):
        for _, launcher, arguments, names, _ in self.launches:
            if scalars and not scalars.keys().isdisjoint(names):
                arguments = [type(value)(scalars[name]) if name in scalars else value
                             for name, value in zip(names, arguments, strict=True)]  # fmt: skip
            launcher(*arguments)


def _kernel_recorder(recording):
    """What `launch.launch` calls with each numba launch while `recording` records."""

    def record(kernel, blocks, threads, arguments):
        if kernel is checks.range_kernel:
            return
        names = list(inspect.signature(kernel.py_func).parameters)
        # configured at each launch: the simulator's kernel[...] reconfigures the kernel itself
        recording.add("numba", lambda *args: launch.run(kernel, blocks, threads, *args),
                      arguments, names)  # fmt: skip

    return record


def record_step(step, also=None):
    """(step(), the Recording of the launches it made): `step` runs once, for real. `also`, when
    given, is called with the recording and must return a context manager that records more
    (the nvcc variant's library calls). What `step` launches from other threads is not recorded."""
    recording = Recording()
    thread = launch.recording_thread
    thread.recorder, thread.recording = _kernel_recorder(recording), recording
    try:
        if also is None:
            result = step()
        else:
            with also(recording):
                result = step()
    finally:
        thread.recorder = thread.recording = None
    return result, recording


def record_call(what, launcher, keep=()):
    """While this thread records a step, add `launcher()` (work another library queues on the
    device, e.g. NCCL's all-reduce; named `what`) to its recording, in order with its kernels;
    otherwise nothing. `keep`: what the launcher's pointers point into, kept alive with it."""
    recording = getattr(launch.recording_thread, "recording", None)
    if recording is not None:
        recording.add(what, launcher, [], [], keep=list(keep))


def copy_into(destination, source, at=0, start=0, count=None):
    """destination[at : at + count] = source[start : start + count], over C-contiguous device
    arrays seen flat (the same dtype; count: all of source from start); returns at once."""
    count = check_copy(destination, source, at, start, count)
    flat_destination, flat_source = flat(destination), flat(source)
    flat_destination[at : at + count].copy_to_device(flat_source[start : start + count])


def check_copy(destination, source, at, start, count):
    """copy_into's checks; returns the count of elements to copy."""
    if destination.dtype != source.dtype:
        raise ValueError(f"copy_into: destination is {destination.dtype}, source {source.dtype}")
    if not (destination.is_c_contiguous() and source.is_c_contiguous()):
        raise ValueError("copy_into: both arrays must be C-contiguous")
    count = source.size - start if count is None else count
    fits = 0 <= start <= start + count <= source.size and 0 <= at <= at + count <= destination.size
    if not fits:
        raise ValueError(
            f"copy_into: {count} elements from {start} of {source.size} into {at} of "
            f"{destination.size} do not fit"
        )
    return count

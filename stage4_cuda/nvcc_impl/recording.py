"""Recorded steps on the nvcc variant: the runtime's recordings (runtime/recording.py, the numba
variant's) with this library's calls in them, which a CUDA graph can capture (csrc/graph.cu).

`record_step(step)` records the library calls `step()` makes (function, arguments as passed to C,
the parameter names of s2c_cuda.h, so that a scalar such as `lr` can be replaced by name) as well
as any numba kernel it launches. `capture_graph(recording)` captures the recording's calls into a
CUDA graph, so that a step is one launch: a few microseconds of host time, where launching each
kernel from Python costs a few microseconds apiece. Only this library's calls can be captured (the
library launches on each thread's default stream, which can be captured; numba's kernels run on the
legacy default stream, which cannot): a recording holding a numba kernel is refused, naming it.
`copy_into` copies device elements in stream order with the library's kernels.

A recording also merges what the step launched one by one where the library can take it at once:
an optimizer's momentum steps, one per parameter, become one s2c_cuda_momentum_step_list call
(csrc/optim.cu; the same values, bit for bit).
"""

import itertools
from contextlib import contextmanager

from ..runtime import recording as device_recording
from ..runtime.recording import check_copy
from . import _library
from ._library import ffi


@contextmanager
def _library_calls_into(recording):
    """Record this library's calls into `recording` meanwhile."""

    def record(function, c_arguments, arguments):
        # the C arguments are bare pointers: the arrays they point into are kept with them
        recording.add(function, _launcher(function), c_arguments, _library.PARAMETERS[function],
                      keep=arguments)

    _library.recorder = record
    try:
        yield
    finally:
        _library.recorder = None


def _launcher(function):
    """What a recording calls to launch library function `function` again: the function, its
    status checked."""
    lib_function = getattr(_library.library(), function)

    def launcher(*arguments):
        status = lib_function(*arguments)
        if status:
            _library.check_status(function, status)

    return launcher


def record_step(step):
    """(step(), the Recording of the library calls and kernels it made): `step` runs once."""
    result, recording = device_recording.record_step(step, also=_library_calls_into)
    recording.launches = _momentum_steps_merged(recording.launches)
    return result, recording


MOMENTUM_STEP = "s2c_cuda_momentum_step"
MOMENTUM_STEP_LIST = "s2c_cuda_momentum_step_list"
SHARED_BY_A_LIST = ("lr", "momentum", "nesterov")  # the scalars a list's tensors have in common


def _momentum_steps_merged(launches):
    """`launches` with each run of momentum steps that agree on SHARED_BY_A_LIST (each parameter's
    step of an optimizer) as one momentum_step_list call."""
    merged = []
    for shared, run in itertools.groupby(launches, _shared):
        run = list(run)
        merged += [_momentum_step_list(run)] if shared and len(run) > 1 else run
    return merged


def _shared(launch):
    """A momentum step's SHARED_BY_A_LIST values; None for another launch."""
    what, _, arguments, names, _ = launch
    if what != MOMENTUM_STEP:
        return None
    return tuple(arguments[names.index(name)] for name in SHARED_BY_A_LIST)


def _momentum_step_list(run):
    """One recorded momentum_step_list call for the recorded momentum steps `run`."""
    rows = [dict(zip(names, arguments, strict=True)) for _, _, arguments, names, _ in run]

    def column(name, ctype):  # a host array of the tensors' `name`
        return ffi.new(f"{ctype}[]", [row[name] for row in rows])

    tensors = {"p": column("p", "float *"), "g": column("g", "const float *"),
               "v": column("v", "float *"), "n": column("n", "int64_t"),
               "weight_decay": column("weight_decay", "float"), "count": len(run)}  # fmt: skip
    scalars = dict(zip(SHARED_BY_A_LIST, _shared(run[0]), strict=True))
    names = _library.PARAMETERS[MOMENTUM_STEP_LIST]
    arguments = [tensors[name] if name in tensors else scalars[name] for name in names]
    keep = [kept for *_, kept in run]  # the parameters' arrays, alive as long as the recording
    return MOMENTUM_STEP_LIST, _launcher(MOMENTUM_STEP_LIST), arguments, names, keep


class Graph:
    """A Recording captured into a CUDA graph: `launch(**scalars)` runs every call with one host
    call. Scalars other than those of the last capture mean a new capture (about as long as
    launching the recording once from the host). The graph keeps the recording, and with it the
    buffers it reads and writes, alive."""

    exec = None  # the executable graph, once captured

    def __init__(self, recording):
        numba_kernels = sum(what == "numba" for what, *_ in recording.launches)
        if numba_kernels:
            raise ValueError(
                f"capture_graph: the recorded step launched {numba_kernels} numba kernel(s), "
                "which run on the legacy default stream and cannot be captured (only the nvcc "
                "library's calls can)"
            )
        self.recording = recording
        self.scalars = None

    def _capture(self, scalars):
        self._destroy()
        lib = _library.library()
        _library.call("s2c_cuda_capture_begin")
        try:
            self.recording.launch(**scalars)
        finally:  # end the capture even when a call failed, or the stream stays unusable
            made = _library.ffi.new("void **")
            status = lib.s2c_cuda_capture_end(made)
        _library.check_status("s2c_cuda_capture_end", status)
        self.exec, self.scalars = made[0], scalars

    def launch(self, **scalars):
        if self.exec is None or scalars != self.scalars:
            self._capture(scalars)
        _library.call("s2c_cuda_graph_launch", self.exec)

    def _destroy(self):
        if self.exec is not None:
            _library.library().s2c_cuda_graph_destroy(self.exec)
            self.exec = None

    __del__ = _destroy


def capture_graph(recording):
    """`recording` as a Graph (captured at its first launch)."""
    return Graph(recording)


def copy_into(destination, source, at=0, start=0, count=None):
    """destination[at : at + count] = source[start : start + count], over the C-contiguous device
    arrays seen flat (the same dtype; count: all of source from start), in stream order with the
    library's kernels; returns at once. Offsets instead of slices: a step makes a few such
    copies, and a numba view costs more host time than the copy itself."""
    count = check_copy(destination, source, at, start, count)
    itemsize = source.dtype.itemsize
    _library.call("s2c_cuda_copy", _library.pointer(destination) + at * itemsize,
                  _library.pointer(source) + start * itemsize, count * itemsize)  # fmt: skip

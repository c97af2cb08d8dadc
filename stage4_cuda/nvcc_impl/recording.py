"""A step recorded once and launched again: the library calls of one run of a function, replayed
from the host one by one, or captured into a CUDA graph and launched with one call (csrc/graph.cu).

nn's trainer uses it on this variant (nn/recorded_steps.py): a training step makes the same
library calls on arrays of the same shapes at every step, so after one real step the Python work
(checks, allocation, the layers' bookkeeping) is done. `record_step(step)` runs `step()` once, for
real, and keeps the list of calls it made (function, arguments as passed to C) together with the
arguments themselves: every array a call read or wrote stays allocated as long as the recording,
so each later launch finds the same buffers (allocated once, as in llm.c). What changes from step
to step is either copied into those buffers before a launch (`copy_into`: the batch's indices) or
is a scalar argument replaced by its name in s2c_cuda.h (`launch(lr=...)`: a learning rate that
follows a schedule).

Only this library's calls are recorded. A step that launches anything else (a numba kernel, which
the recording would silently leave out) is refused while recording; the checks' own reads (the
range of labels, through `_checks.index_range`) are the one exception: they compute nothing the
step uses.
"""

from ..numba_impl import _checks, _device
from . import _library


class Recording:
    """The calls of one run of a step, in order; `launch(**scalars)` makes them again from the
    host, with the scalar arguments named in `scalars` (e.g. lr=0.01) replaced."""

    def __init__(self):
        self.calls = []  # (function, C arguments, the Python arguments: kept alive)
        self.scalars = {}  # name -> value at recording, for each scalar named by launch()

    def add(self, function, c_arguments, arguments):
        self.calls.append((function, c_arguments, arguments))

    def calls_with(self, scalars):
        """(function, C arguments) of every call, with `scalars` replaced by name."""
        for function, c_arguments, _ in self.calls:
            names = _library.PARAMETERS[function]
            if scalars and any(name in scalars for name in names):
                pairs = zip(names, c_arguments, strict=True)
                c_arguments = [scalars.get(name, value) for name, value in pairs]
            yield function, c_arguments

    def launch(self, **scalars):
        lib = _library.library()
        for function, c_arguments in self.calls_with(scalars):
            status = getattr(lib, function)(*c_arguments)
            if status:
                _library.check_status(function, status)


def _refuse_other_launches(kernel):
    if kernel is not _checks.range_kernel:
        raise RuntimeError(
            f"a recorded step launched {getattr(kernel, '__name__', kernel)}, which is not a "
            "function of the nvcc library: its recording would leave it out"
        )


def record_step(step):
    """(step(), the Recording of the library calls it made): `step` runs once, for real."""
    recording = Recording()
    _library.recorder, _device.launch_guard = recording.add, _refuse_other_launches
    try:
        result = step()
    finally:
        _library.recorder, _device.launch_guard = None, None
    return result, recording


class Graph:
    """A Recording captured into a CUDA graph: `launch(**scalars)` runs every call with one host
    call. Scalars other than those of the last capture mean a new capture (about as long as
    launching the recording once from the host). The graph keeps the recording, and with it the
    buffers it reads and writes, alive."""

    def __init__(self, recording):
        self.recording = recording
        self.exec = None
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
    itemsize = source.dtype.itemsize
    _library.call("s2c_cuda_copy", _library.pointer(destination) + at * itemsize,
                  _library.pointer(source) + start * itemsize, count * itemsize)  # fmt: skip

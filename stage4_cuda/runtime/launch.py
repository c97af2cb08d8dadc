"""Launching numba kernels: the numba variant's every kernel, and the one kernel the shared checks
launch (checks.py: the range of labels and argmax indices).

`launch` refuses an exercise stub before launching it (a kernel cannot raise on the GPU) and
tells a step's recording (recording.py) about each launch.
"""

import math
import threading
import warnings

from .device import SIMULATOR

# Threads per block of the elementwise kernels: 256 fills a multiprocessor's schedulers on a GPU.
# The simulator runs one Python thread per CUDA thread (about 0.4 ms each), so it gets one warp.
BLOCK = 32 if SIMULATOR else 256


def blocks_for(n, block=BLOCK):
    """The number of blocks of `block` threads that cover n elements, one thread each."""
    return max(1, math.ceil(n / block))


# --- stubs of the exercises -------------------------------------------------------------------

_STUB_MESSAGES = {}  # kernel -> the NotImplementedError message of its stub, or None


def _stub_message(kernel):
    """The message of an exercise stub (`raise NotImplementedError("week ...")`) in the kernel's
    body, or in the body of its per-element function (numba_impl/elementwise.py), or None for a
    written kernel. `make exercises` replaces a body by such a stub; a kernel cannot raise on the
    GPU, so the launch raises it on the host instead."""
    if kernel not in _STUB_MESSAGES:
        functions = (kernel, getattr(kernel, "element", None))
        constants = [c for f in functions if f is not None for c in f.py_func.__code__.co_consts]
        _STUB_MESSAGES[kernel] = next(
            (c for c in constants if isinstance(c, str) and ": not implemented yet (" in c), None
        )
    return _STUB_MESSAGES[kernel]


# .recorder, when set, is called with (kernel, blocks, threads, args) after each launch of its
# thread: a step's recording (recording.py). Per thread, so that ranks run as threads (the data-
# parallel tests) each record their own launches.
recording_thread = threading.local()
_SIMULATED_LAUNCH = threading.Lock()


def launch(kernel, blocks, threads, *args):
    """kernel[blocks, threads](*args), after checking that the kernel is not an exercise stub."""
    message = _stub_message(kernel)
    if message is not None:
        raise NotImplementedError(message)
    run(kernel, blocks, threads, *args)
    recorder = getattr(recording_thread, "recorder", None)
    if recorder is not None:
        recorder(kernel, blocks, threads, args)


def run(kernel, blocks, threads, *args):
    """kernel[blocks, threads](*args)."""
    if not SIMULATOR:
        kernel[blocks, threads](*args)
        return
    # The simulator computes with NumPy scalars, which warn where the GPU silently wraps (the
    # random stream's uint64 products) or overflows to inf (exp of a large float32): as on the GPU,
    # those are not errors. It runs one kernel at a time: kernel[...] configures the kernel object
    # itself, and a launch swaps the kernel's module globals, both of which a launch from another
    # thread would see.
    with _SIMULATED_LAUNCH, warnings.catch_warnings():
        warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)
        kernel[blocks, threads](*args)


def launch_elementwise(kernel, n, *args):
    """Launch `kernel` with one thread per element of n (the kernel checks i < n)."""
    launch(kernel, blocks_for(n), BLOCK, *args)

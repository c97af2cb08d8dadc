"""The grader's own small CUDA kernels (numba): filling a buffer (for the L2 flush and poison),
keeping the device busy for a while (so that a timed call's launch happens while it waits), and
doing nothing (the least time any launch takes: grader/roofline.py's floor)."""

from numba import cuda, float32

THREADS = 256


@cuda.jit
def _fill_kernel(buffer, value):
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < buffer.size:  # a grid-stride loop: any size with a bounded grid
        buffer[i] = value
        i += stride


def fill(buffer, value):
    """Write `value` into every element of the 1-D device array `buffer`."""
    blocks = min(4096, (buffer.size + THREADS - 1) // THREADS)
    _fill_kernel[blocks, THREADS](buffer, value)


@cuda.jit
def _busy_kernel(iterations, seed, sink):
    # One thread, a chain of dependent multiply-adds: each waits for the one before, so the time
    # grows with `iterations`. The chain starts from a value the compiler cannot know (from 1.0
    # it would fold the whole loop to a constant and skip it), and its result is stored.
    value = seed
    for _ in range(iterations):
        value = value * float32(0.999999) + float32(1e-6)
    sink[0] = value


def busy(iterations, sink):
    """Occupy the default stream for `iterations` dependent steps (one thread of one block)."""
    _busy_kernel[1, 1](iterations, float32(0.5), sink)


@cuda.jit
def _empty_kernel():
    pass


def empty_launch():
    """Launch a kernel that does nothing (one block of one thread)."""
    _empty_kernel[1, 1]()

"""The two elementwise kernels every elementwise op is made of: `map` (y = f(x)) and `zip`
(y = f(a, b)), each applied to a per-element device function (week 14).

An elementwise op moves bytes and computes almost nothing, so its speed is how many bytes the
device keeps in flight. With one element a thread, each thread issues one load and waits for it,
too few bytes in flight to keep the memory busy at large sizes. Here each thread
takes PER_THREAD elements spaced a grid apart (so a warp still reads 32 neighbours at a time) and
issues all their loads before computing and storing any: four loads in flight per thread, and
the same kernel streams at the copy's speed. The loads must come first because the compiler
cannot move a load of x above a store to y: y might be x.

The per-element function (`relu_element(x, s)`, `leaky_relu_element(x, alpha)`, ...) is a
`@cuda.jit(device=True)` function; `map_kernel(f)` makes the kernel that applies it. Every such
function takes one scalar last, the op's own (leaky_relu's alpha, scale's factor) or an unused 0:
a numba kernel has a fixed number of arguments (no `*args` on the GPU).
"""

from numba import cuda, float32

from ..runtime.launch import BLOCK, blocks_for, launch

PER_THREAD = 4  # elements a thread loads before it stores any


def map_kernel(element):
    """The kernel y[i] = element(x[i], s) over flat arrays x and y of one size."""

    @cuda.jit
    def map_(x, y, s):
        # BEGIN SOLUTION week 14, task map
        first, grid = cuda.grid(1), cuda.gridsize(1)
        values = cuda.local.array(PER_THREAD, float32)
        for e in range(PER_THREAD):  # every load first: PER_THREAD of them in flight
            i = first + e * grid
            if i < y.size:
                values[e] = x[i]
        for e in range(PER_THREAD):
            i = first + e * grid
            if i < y.size:
                y[i] = element(values[e], s)
        # END SOLUTION

    map_.element = element  # where an exercise stub of the element function is found
    return map_


def zip_kernel(element):
    """The kernel y[i] = element(a[i], b[j], s) over flat arrays: b has a's size (j = i) or is
    one row that repeats along a (j = i % b.size, add's and mul's broadcasting)."""

    @cuda.jit
    def zip_(a, b, y, s):
        # BEGIN SOLUTION week 14, task zip
        first, grid = cuda.grid(1), cuda.gridsize(1)
        a_values = cuda.local.array(PER_THREAD, float32)
        b_values = cuda.local.array(PER_THREAD, float32)
        for e in range(PER_THREAD):
            i = first + e * grid
            if i < y.size:
                a_values[e] = a[i]
                b_values[e] = b[i] if b.size == y.size else b[i % b.size]
        for e in range(PER_THREAD):
            i = first + e * grid
            if i < y.size:
                y[i] = element(a_values[e], b_values[e], s)
        # END SOLUTION

    zip_.element = element
    return zip_


UNUSED = float32(0)  # the scalar of an op that has none


def launch_per_thread(kernel, n, *args):
    """Launch `kernel` over n elements with PER_THREAD elements a thread (the optimizer steps
    too)."""
    launch(kernel, blocks_for(n, BLOCK * PER_THREAD), BLOCK, *args)


def launch_map(kernel, n, *arrays, scalar=UNUSED):
    """Launch a map or zip kernel over n elements on `arrays` and `scalar` (a float32: the kernel
    computes in float32)."""
    launch_per_thread(kernel, n, *arrays, float32(scalar))

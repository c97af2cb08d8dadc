"""Reductions inside a block or a warp: the building blocks of sums, softmax and the losses.

A kernel that reduces one row (or one channel) per block calls these with every thread's partial
result; all threads get the total. Three ways, the reduction ladder of week 14:
- one thread per row, looping over it (no helper needed: the "naive" rung of each op);
- `block_sum` / `block_max`: a tree in shared memory, halving the active threads each step
  (log2(threads) steps, a syncthreads between them);
- `warp_sum` / `warp_max`: the 32 threads of a warp exchange registers with `shfl_xor_sync`,
  five steps and no shared memory or barrier. The CUDA simulator has no warp shuffles, so the
  kernels using these are not run there (their host functions say so).
"""

from numba import cuda

from ..runtime.device import SIMULATOR

# Threads of a block that reduces one row: a power of two (the tree halves it). 128 keeps a
# multiprocessor busy with rows of a few hundred elements; the simulator gets one warp.
ROW_THREADS = 32 if SIMULATOR else 128
FULL_WARP = 0xFFFFFFFF  # every lane of the warp takes part in the shuffle
HAS_SHUFFLES = not SIMULATOR


@cuda.jit(device=True)
def block_sum(cache, value):
    """The sum of `value` over the block's threads (blockDim.x, a power of two), for all of them.

    `cache` is a shared array of blockDim.x elements; it is free again when this returns.
    """
    t = cuda.threadIdx.x
    cache[t] = value
    cuda.syncthreads()
    step = cuda.blockDim.x // 2
    while step > 0:
        if t < step:
            cache[t] += cache[t + step]
        cuda.syncthreads()
        step //= 2
    total = cache[0]
    cuda.syncthreads()  # everyone has read the total before the cache is reused
    return total


@cuda.jit(device=True)
def block_max(cache, value):
    """The maximum of `value` over the block's threads, for all of them (see block_sum)."""
    t = cuda.threadIdx.x
    cache[t] = value
    cuda.syncthreads()
    step = cuda.blockDim.x // 2
    while step > 0:
        if t < step:
            cache[t] = max(cache[t], cache[t + step])
        cuda.syncthreads()
        step //= 2
    total = cache[0]
    cuda.syncthreads()
    return total


@cuda.jit(device=True)
def warp_sum(value):
    """The sum of `value` over the 32 lanes of the warp, for all of them (butterfly exchange)."""
    offset = 16
    while offset > 0:
        value += cuda.shfl_xor_sync(FULL_WARP, value, offset)
        offset //= 2
    return value


@cuda.jit(device=True)
def warp_max(value):
    """The maximum of `value` over the 32 lanes of the warp, for all of them."""
    offset = 16
    while offset > 0:
        value = max(value, cuda.shfl_xor_sync(FULL_WARP, value, offset))
        offset //= 2
    return value

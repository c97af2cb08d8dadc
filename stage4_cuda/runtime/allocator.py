"""A caching allocator for numba's device memory: a freed block waits for the next array of its
size.

numba allocates every device array with cuMemAlloc and frees it with cuMemFree. Both are slow
(hundreds of microseconds for large blocks) and synchronize the device, so an elementwise op on
16 million floats, which streams its 128 MB in tens of microseconds, would spend most of its
time allocating its output. Training allocates the same shapes at every step, so a block kept on
a free list (keyed by its size) serves the next step's array of that size at no cost; PyTorch's
caching allocator works the same way.

Reuse is safe because every kernel and copy of both variants runs in order with the default
stream (the nvcc library's per-thread default stream waits for it, and it for them): a
block is handed out again only after the host has dropped the array that used it, so any kernel
that wrote or read it was launched before the kernels of its next owner. When the device runs out
of memory, the cached blocks are freed and the allocation is tried again.

Only a real GPU uses it (device.py installs it there). Under NUMBA_ENABLE_CUDASIM=1,
`numba.cuda.cudadrv.driver` is the simulator's stub, which has no memory managers (its "device"
arrays are NumPy arrays): the class then stands on `object`, only so that the module imports.
"""

import weakref
from collections import defaultdict

from numba.cuda.cudadrv import driver
from numba.cuda.cudadrv.driver import CudaAPIError

GRANULE = 512  # sizes are rounded up to this many bytes, so near sizes share a free list
CACHE_FRACTION = 0.5  # at most this share of the device's memory waits in free lists


class CachingMemoryManager(getattr(driver, "NumbaCUDAMemoryManager", object)):
    """numba's own memory manager with free lists: `memalloc` reuses a cached block of the same
    rounded size when there is one, and a block's finalizer puts it back instead of freeing it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.free_blocks = defaultdict(list)  # rounded size in bytes -> device pointers
        self.cached_bytes = 0
        self.cache_limit = 0

    def initialize(self):
        # numba calls this at every API call that makes sure of a context (each allocation and
        # launch): the device's memory is asked for once (cuMemGetInfo costs more host time than
        # the allocation it comes with).
        super().initialize()
        if not self.cache_limit:
            self.cache_limit = CACHE_FRACTION * self.get_memory_info().total

    def memalloc(self, size):
        size = max(GRANULE, -(-size // GRANULE) * GRANULE)
        blocks = self.free_blocks[size]
        if blocks:
            pointer = blocks.pop()
            self.cached_bytes -= size
        else:
            pointer = self._allocate(size)
        context = weakref.proxy(self.context)
        finalizer = self._returner(pointer, size)
        memory = driver.AutoFreePointer(context, pointer, size, finalizer=finalizer)
        self.allocations[pointer] = memory  # alive until its owners are gone, as numba's own
        return memory.own()

    def _allocate(self, size):
        try:
            return self._attempt_allocation(lambda: driver.driver.cuMemAlloc(size))
        except CudaAPIError:  # out of memory: give the cached blocks back, then try once more
            self.release_cached()
            return self._attempt_allocation(lambda: driver.driver.cuMemAlloc(size))

    def _returner(self, pointer, size):
        """The finalizer of a block: onto its free list, or freed when the cache is full."""

        def give_back():
            self.allocations.pop(pointer, None)
            if self.cached_bytes + size <= self.cache_limit:
                self.free_blocks[size].append(pointer)
                self.cached_bytes += size
            else:
                self.deallocations.add_item(driver.driver.cuMemFree, pointer, size)

        return give_back

    def release_cached(self):
        """Free every cached block (cuMemFree): the memory goes back to the device."""
        for blocks in self.free_blocks.values():
            for pointer in blocks:
                driver.driver.cuMemFree(pointer)
        self.free_blocks.clear()
        self.cached_bytes = 0

    def reset(self):
        self.release_cached()
        super().reset()

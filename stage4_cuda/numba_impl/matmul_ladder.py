"""The matmul ladder of week 15: C [N, M] = A [N, K] @ B [K, M], seven kernels, slowest first.

Each rung changes one thing and says why. The work is the same for all: 2*N*K*M FLOPs, and at
least 4*(N*K + K*M + N*M) bytes if every element crossed device memory once; what differs is how
many bytes really cross it (and how many instructions each multiply-add costs), which is what the
ladder brings down. At 4096^3: 137 GFLOP and 201 MB, so on an H100 (about 50 TFLOP/s fp32 without
tensor cores, 3 TB/s) the floor is 2.7 ms of arithmetic against 0.07 ms of memory: a good kernel
is bound by arithmetic, and every rung below the last is bound by memory traffic it makes itself.

Every kernel accumulates in float32 (`float32(0)`: a bare 0.0 literal is a float64 in numba and
would turn the whole sum into float64 arithmetic) and checks its bounds, so any N, K, M works.
"""

from numba import cuda, float32, uint32

# Threads per block of the two simple rungs: a warp of 32 along x, 8 warps along y.
SIMPLE_BLOCK = (32, 8)


# --- rung 1: naive -----------------------------------------------------------------------------
# One thread per element of C, the row taken from threadIdx.x. The 32 threads of a warp hold 32
# consecutive rows: each reads a[row, k] from 32 rows K*4 bytes apart and writes c 32 rows apart,
# so each load instruction touches 32 memory segments instead of one. Bytes moved: every thread
# reads a whole row of A and column of B, 2*K*4 bytes per output, N*M*K*8 bytes in all (2 TB at
# 4096^3, 4000x the minimum), half of them through 32-way scattered accesses.
@cuda.jit
def naive(a, b, c):
    # BEGIN SOLUTION week 15, task matmul_naive
    row, col = cuda.grid(2)  # x, the fastest-varying thread index, walks down the rows
    if row < c.shape[0] and col < c.shape[1]:
        acc = float32(0)
        for k in range(a.shape[1]):
            acc += a[row, k] * b[k, col]
        c[row, col] = acc
    # END SOLUTION


# --- rung 2: coalesced -------------------------------------------------------------------------
# The same work, with the column taken from threadIdx.x: a warp's 32 threads read b[k, col..col+31]
# (one 128-byte segment), all read the same a[row, k] (one broadcast) and write 32 neighbours of C.
# Still N*M*K*8 bytes requested, but in whole segments, most of them served by the L1/L2 caches.
@cuda.jit
def coalesced(a, b, c):
    # BEGIN SOLUTION week 15, task matmul_coalesced
    col, row = cuda.grid(2)  # x walks along a row of C: neighbours in a warp share a and read b
    if row < c.shape[0] and col < c.shape[1]:
        acc = float32(0)
        for k in range(a.shape[1]):
            acc += a[row, k] * b[k, col]
        c[row, col] = acc
    # END SOLUTION


# --- rung 3: shared-memory tiles -----------------------------------------------------------------
# A block of TILE x TILE threads computes a TILE x TILE tile of C. It walks along K in steps of
# TILE, copying a TILE x TILE tile of A and of B into shared memory (one element per thread,
# coalesced), then every thread reads TILE pairs from there. Each element loaded from device
# memory now serves TILE multiply-adds: N*M*K*8/TILE bytes (64 GB at 4096^3 with TILE = 32, 32x
# fewer). Now two shared-memory loads per multiply-add limit it.
TILE = 32


@cuda.jit
def tiled(a, b, c):
    # BEGIN SOLUTION week 15, task matmul_tiled
    tile_a = cuda.shared.array((TILE, TILE), float32)
    tile_b = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    n, depth = a.shape
    m = b.shape[1]
    acc = float32(0)
    for k0 in range(0, depth, TILE):
        # Outside the matrices a tile holds zeros, which add nothing to the sums.
        tile_a[ty, tx] = a[row, k0 + tx] if row < n and k0 + tx < depth else float32(0)
        tile_b[ty, tx] = b[k0 + ty, col] if k0 + ty < depth and col < m else float32(0)
        cuda.syncthreads()  # the tiles are complete before anyone reads them
        for k in range(TILE):
            acc += tile_a[ty, k] * tile_b[k, tx]
        cuda.syncthreads()  # everyone is done with the tiles before they are overwritten
    if row < n and col < m:
        c[row, col] = acc
    # END SOLUTION


# --- rung 4: 1-D register tiles ------------------------------------------------------------------
# Each thread computes R1 outputs of one column instead of one: a BM1 x BN1 tile of C per block of
# BM1*BN1/R1 threads, K in steps of BK1. For each k a thread loads one value of B from shared
# memory into a register and reuses it R1 times against R1 values of A: shared-memory loads per
# multiply-add fall from 2 to (1 + R1)/R1, and the bigger tile cuts device-memory bytes again, to
# N*M*K*4*(1/BM1 + 1/BN1) (16 GB at 4096^3).
BM1, BN1, BK1, R1 = 64, 64, 8, 8
THREADS_1D = BM1 * BN1 // R1  # 512: each loads one element of each shared tile per step


@cuda.jit
def register_1d(a, b, c):
    # BEGIN SOLUTION week 15, task matmul_register_1d
    tile_a = cuda.shared.array((BM1, BK1), float32)
    tile_b = cuda.shared.array((BK1, BN1), float32)
    acc = cuda.local.array(R1, float32)  # R1 sums, kept in registers (loops of constant length)
    t = cuda.threadIdx.x
    n, depth = a.shape
    m = b.shape[1]
    row0, col0 = cuda.blockIdx.y * BM1, cuda.blockIdx.x * BN1
    my_col = t % BN1  # neighbours in a warp take neighbouring columns
    my_rows = (t // BN1) * R1  # and R1 consecutive rows each
    a_row, a_k = t // BK1, t % BK1  # the element of A's tile this thread loads
    b_k, b_col = t // BN1, t % BN1  # and of B's
    for i in range(R1):
        acc[i] = float32(0)
    for k0 in range(0, depth, BK1):
        r, k = row0 + a_row, k0 + a_k
        tile_a[a_row, a_k] = a[r, k] if r < n and k < depth else float32(0)
        k, col = k0 + b_k, col0 + b_col
        tile_b[b_k, b_col] = b[k, col] if k < depth and col < m else float32(0)
        cuda.syncthreads()
        for k in range(BK1):
            b_value = tile_b[k, my_col]
            for i in range(R1):
                acc[i] += tile_a[my_rows + i, k] * b_value
        cuda.syncthreads()
    col = col0 + my_col
    for i in range(R1):
        row = row0 + my_rows + i
        if row < n and col < m:
            c[row, col] = acc[i]
    # END SOLUTION


# --- rung 5: 2-D register tiles ------------------------------------------------------------------
# Each thread computes an R x R patch of C: per k it loads R values of A and R of B from
# shared memory into registers and does R*R multiply-adds with them, so a multiply-add costs
# 2/R shared loads (a quarter of rung 4's at R = 8) and a 128 x 128 tile of C per block cuts
# device-memory bytes to N*M*K*4*(2/128) (4 GB at 4096^3, from the L2 cache mostly).
# A thread's patch is spread out: rows ty + 16*i and columns tx + 16*j. Neighbouring threads then
# read neighbouring words of the shared tiles (no bank conflicts; a contiguous 8-wide patch would
# put 4 threads of a warp on each bank) and write neighbouring elements of C (coalesced).
# A's tile is stored transposed, [k][row], so that those reads are neighbouring words too.
# Defaults: R = 8, 16 x 16 threads, a 128 x 128 tile, K in steps of 8.
# The tile sizes are parameters of `make_register_2d`, so that bench_matmul.py can try others.


def make_register_2d(patch=8, spread=16, depth_step=8):
    """(kernel, geometry) of rung 5: R x R patches (R = `patch`), spread x spread threads per
    block (a tile of C of side spread * patch), K in steps of `depth_step`. numba compiles the
    sizes in as constants, so the loops over them unroll and `acc` lives in registers."""
    side = spread * patch  # the block's tile of C is side x side
    threads = spread * spread
    loads = side * depth_step // threads  # elements of each shared tile one thread loads per step

    @cuda.jit
    def register_2d(a, b, c):
        # BEGIN SOLUTION week 15, task matmul_register_2d
        tile_at = cuda.shared.array((depth_step, side), float32)  # A's tile, transposed
        tile_b = cuda.shared.array((depth_step, side), float32)
        acc = cuda.local.array((patch, patch), float32)
        a_reg = cuda.local.array(patch, float32)
        b_reg = cuda.local.array(patch, float32)
        t = cuda.threadIdx.x
        tx, ty = t % spread, t // spread
        n, depth = a.shape
        m = b.shape[1]
        row0, col0 = cuda.blockIdx.y * side, cuda.blockIdx.x * side
        for i in range(patch):
            for j in range(patch):
                acc[i, j] = float32(0)
        for k0 in range(0, depth, depth_step):
            for load in range(loads):
                e = t + load * threads
                r, k = e // depth_step, e % depth_step  # A: depth_step neighbours along a row
                inside = row0 + r < n and k0 + k < depth
                tile_at[k, r] = a[row0 + r, k0 + k] if inside else float32(0)
                k, col = e // side, e % side  # B: a warp reads 32 neighbours of one row of B
                inside = k0 + k < depth and col0 + col < m
                tile_b[k, col] = b[k0 + k, col0 + col] if inside else float32(0)
            cuda.syncthreads()
            for k in range(depth_step):
                for i in range(patch):
                    a_reg[i] = tile_at[k, ty + spread * i]
                    b_reg[i] = tile_b[k, tx + spread * i]
                for i in range(patch):
                    for j in range(patch):
                        acc[i, j] += a_reg[i] * b_reg[j]
            cuda.syncthreads()
        for i in range(patch):
            row = row0 + ty + spread * i
            for j in range(patch):
                col = col0 + tx + spread * j
                if row < n and col < m:
                    c[row, col] = acc[i, j]
        # END SOLUTION

    def geometry(n, m):
        return (_ceil_div(m, side), _ceil_div(n, side)), threads

    return register_2d, geometry


# --- rung 6: rung 5, prefetching the next tiles ----------------------------------------------
# In rung 5 every thread waits for its global loads before the barrier, and nobody computes
# meanwhile: the multiprocessor hides that latency only with other blocks, and it holds just a few
# of these big ones. Here the loads of step k0 + BK are issued into registers before the
# multiply-adds of step k0, so they are in flight while the arithmetic runs, then stored into the
# other of two shared buffers: one barrier per step instead of two, and the same bytes as rung 5.
# Rung 5's large tiles cost registers (over 150 a thread), so few blocks share a multiprocessor
# and the global loads before each barrier stay exposed; steps of 16 along K (half the barriers)
# hide part of them, prefetching more (bench_matmul.py --sweep measures each; the README gives the
# record).


def make_register_2d_prefetch(patch=8, spread=16, depth_step=8):
    """(kernel, geometry) of rung 6, with rung 5's parameters."""
    side = spread * patch
    threads = spread * spread
    loads = side * depth_step // threads

    @cuda.jit
    def register_2d_prefetch(a, b, c):
        # BEGIN SOLUTION week 15, task matmul_register_2d_prefetch
        tile_at = cuda.shared.array((2, depth_step, side), float32)  # two buffers of each
        tile_b = cuda.shared.array((2, depth_step, side), float32)
        acc = cuda.local.array((patch, patch), float32)
        a_reg = cuda.local.array(patch, float32)
        b_reg = cuda.local.array(patch, float32)
        a_next = cuda.local.array(loads, float32)  # the next step's elements, in flight
        b_next = cuda.local.array(loads, float32)
        t = cuda.threadIdx.x
        tx, ty = t % spread, t // spread
        n, depth = a.shape
        m = b.shape[1]
        row0, col0 = cuda.blockIdx.y * side, cuda.blockIdx.x * side
        for i in range(patch):
            for j in range(patch):
                acc[i, j] = float32(0)
        steps = (depth + depth_step - 1) // depth_step
        for step in range(steps + 1):
            # Issue the loads of step `step` (none after the last) ...
            k0 = step * depth_step
            if step < steps:
                for load in range(loads):
                    e = t + load * threads
                    r, k = e // depth_step, e % depth_step
                    inside = row0 + r < n and k0 + k < depth
                    a_next[load] = a[row0 + r, k0 + k] if inside else float32(0)
                    k, col = e // side, e % side
                    inside = k0 + k < depth and col0 + col < m
                    b_next[load] = b[k0 + k, col0 + col] if inside else float32(0)
            # ... compute on step - 1's tiles while they arrive ...
            if step > 0:
                buffer = (step - 1) % 2
                for k in range(depth_step):
                    for i in range(patch):
                        a_reg[i] = tile_at[buffer, k, ty + spread * i]
                        b_reg[i] = tile_b[buffer, k, tx + spread * i]
                    for i in range(patch):
                        for j in range(patch):
                            acc[i, j] += a_reg[i] * b_reg[j]
            # ... and store them into the other buffer, which nobody reads during this step.
            if step < steps:
                buffer = step % 2
                for load in range(loads):
                    e = t + load * threads
                    tile_at[buffer, e % depth_step, e // depth_step] = a_next[load]
                    tile_b[buffer, e // side, e % side] = b_next[load]
            cuda.syncthreads()
        for i in range(patch):
            row = row0 + ty + spread * i
            for j in range(patch):
                col = col0 + tx + spread * j
                if row < n and col < m:
                    c[row, col] = acc[i, j]
        # END SOLUTION

    def geometry(n, m):
        return (_ceil_div(m, side), _ceil_div(n, side)), threads

    return register_2d_prefetch, geometry


# --- rung 7: rung 6, reading shared memory 16 bytes at a time ----------------------------------
# Rung 6 spends one shared-memory load instruction per multiply-add row or column: 16 loads (LDS)
# for 64 multiply-adds at every k, a fifth of the instructions a scheduler issues. A thread here
# owns its rows and columns in runs of 4 neighbours (rows 4*ty..4*ty+3 and 64 more down, columns
# likewise), so each run is one 16-byte load (ld.shared.v4.f32): 4 loads per k instead of 16,
# the same bytes. The compiler emits the wide load only when it can prove the address is a
# multiple of 16 bytes: the shared tiles are declared with that alignment, and the indices are
# unsigned (`uint32`): numba adds a wrap-around branch for negative signed indices, which hides
# the alignment. Same global traffic as rungs 5 and 6.


def make_register_2d_vector(patch=8, spread=16, depth_step=8, run=4):
    """(kernel, geometry) of rung 7: rung 6 with each thread's `patch` rows and columns in runs of
    `run` neighbours, read from shared memory in one wide load per run."""
    side = spread * patch
    threads = spread * spread
    loads = side * depth_step // threads
    runs = patch // run  # runs per thread along each side
    run_gap = side // runs  # the distance between a thread's runs (64 for the defaults)

    @cuda.jit
    def register_2d_vector(a, b, c):
        # BEGIN SOLUTION week 15, task matmul_register_2d_vector
        tile_at = cuda.shared.array((2, depth_step, side), float32, alignment=16)
        tile_b = cuda.shared.array((2, depth_step, side), float32, alignment=16)
        acc = cuda.local.array((patch, patch), float32)
        a_reg = cuda.local.array(patch, float32)
        b_reg = cuda.local.array(patch, float32)
        a_next = cuda.local.array(loads, float32)
        b_next = cuda.local.array(loads, float32)
        t = cuda.threadIdx.x
        tx, ty = t % spread, t // spread
        n, depth = a.shape
        m = b.shape[1]
        row0, col0 = cuda.blockIdx.y * side, cuda.blockIdx.x * side
        for i in range(patch):
            for j in range(patch):
                acc[i, j] = float32(0)
        steps = (depth + depth_step - 1) // depth_step
        for step in range(steps + 1):
            k0 = step * depth_step
            if step < steps:  # the next step's loads, as in rung 6
                for load in range(loads):
                    e = t + load * threads
                    r, k = e // depth_step, e % depth_step
                    inside = row0 + r < n and k0 + k < depth
                    a_next[load] = a[row0 + r, k0 + k] if inside else float32(0)
                    k, col = e // side, e % side
                    inside = k0 + k < depth and col0 + col < m
                    b_next[load] = b[k0 + k, col0 + col] if inside else float32(0)
            if step > 0:
                buffer = uint32((step - 1) % 2)
                for k in range(depth_step):
                    for g in range(runs):  # each run of `run` neighbours: one 16-byte load
                        for q in range(run):
                            a_reg[g * run + q] = tile_at[
                                buffer, uint32(k), uint32(g * run_gap + ty * run) + uint32(q)
                            ]
                            b_reg[g * run + q] = tile_b[
                                buffer, uint32(k), uint32(g * run_gap + tx * run) + uint32(q)
                            ]
                    for i in range(patch):
                        for j in range(patch):
                            acc[i, j] += a_reg[i] * b_reg[j]
            if step < steps:
                buffer = uint32(step % 2)
                for load in range(loads):
                    e = t + load * threads
                    tile_at[buffer, e % depth_step, e // depth_step] = a_next[load]
                    tile_b[buffer, e // side, e % side] = b_next[load]
            cuda.syncthreads()
        for i in range(patch):
            row = row0 + (i // run) * run_gap + ty * run + i % run
            for j in range(patch):
                col = col0 + (j // run) * run_gap + tx * run + j % run
                if row < n and col < m:
                    c[row, col] = acc[i, j]
        # END SOLUTION

    def geometry(n, m):
        return (_ceil_div(m, side), _ceil_div(n, side)), threads

    return register_2d_vector, geometry


def _ceil_div(a, b):
    return -(-a // b)


# name -> (kernel, (n, m) -> (blocks, threads)), slowest first.
LADDER = {
    "naive": (naive, lambda n, m: ((_ceil_div(n, 32), _ceil_div(m, 8)), SIMPLE_BLOCK)),
    "coalesced": (coalesced, lambda n, m: ((_ceil_div(m, 32), _ceil_div(n, 8)), SIMPLE_BLOCK)),
    "tiled": (tiled, lambda n, m: ((_ceil_div(m, TILE), _ceil_div(n, TILE)), (TILE, TILE))),
    "register_1d": (
        register_1d,
        lambda n, m: ((_ceil_div(m, BN1), _ceil_div(n, BM1)), THREADS_1D),
    ),
    "register_2d": make_register_2d(),
    "register_2d_prefetch": make_register_2d_prefetch(),
    "register_2d_vector": make_register_2d_vector(),
}

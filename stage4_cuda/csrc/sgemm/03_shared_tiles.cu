/* 03_shared_tiles.cu -- rung 3: tiles of A and B staged in shared memory.
 *
 * What it changes: a block of 32 x 32 threads computes a 32 x 32 tile of C. It walks along k in
 * steps of 32: the block copies a 32 x 32 tile of A and one of B into shared memory (one element
 * per thread, coalesced: a warp reads one row of each tile), waits at a barrier, and then every
 * thread reads its 32 pairs from shared memory. Each element loaded from device memory now serves
 * 32 multiply-adds instead of one.
 *
 * Cost model (n x k x m; 4096^3: 137 GFLOP):
 *   FLOPs  2 n k m.
 *   bytes  device memory (through L2): each block reads a 32-row strip of A and a 32-column strip
 *          of B: n k m (4/32 + 4/32) = n k m / 4 bytes (17 GB at 4096^3, 32x fewer than rung 2).
 *          shared memory: two 4-byte loads per multiply-add (8 n k m bytes).
 *   so     bound by shared-memory load instructions (two per FMA, and a barrier every 32 steps):
 *          roughly a fifth of cuBLAS.
 *
 * Run it: python3 bench/sgemm_ladder.py --rung 3 */
#include "sgemm.h"

#define TILE 32

__global__ void sgemm_shared_tiles_kernel(const float *a, const float *b, float *c, int64_t n,
                                          int64_t k, int64_t m)
{
    // BEGIN SOLUTION week 16, task sgemm_shared_tiles
    __shared__ float tile_a[TILE][TILE];
    __shared__ float tile_b[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int64_t row = (int64_t)blockIdx.y * TILE + ty;
    int64_t col = (int64_t)blockIdx.x * TILE + tx;
    float sum = 0.0f;
    for (int64_t p0 = 0; p0 < k; p0 += TILE) {
        /* Outside the matrices a tile holds zeros, which add nothing to the sums. */
        tile_a[ty][tx] = row < n && p0 + tx < k ? a[row * k + p0 + tx] : 0.0f;
        tile_b[ty][tx] = p0 + ty < k && col < m ? b[(p0 + ty) * m + col] : 0.0f;
        __syncthreads(); /* the tiles are complete before anyone reads them */
#pragma unroll
        for (int p = 0; p < TILE; p++)
            sum += tile_a[ty][p] * tile_b[p][tx]; /* a broadcast and a conflict-free row */
        __syncthreads(); /* everyone is done with the tiles before they are overwritten */
    }
    if (row < n && col < m)
        c[row * m + col] = sum;
    // END SOLUTION
}

extern "C" const void *s2c_sgemm_shared_tiles_kernel(int64_t, int64_t, int64_t)
{
    return (const void *)sgemm_shared_tiles_kernel;
}

extern "C" int s2c_sgemm_shared_tiles(const float *a, const float *b, float *c, int64_t n,
                                      int64_t k, int64_t m)
{
    int status = sgemm_check_arguments(a, b, c, n, k, m);
    if (status != S2C_CUDA_OK || n == 0 || m == 0)
        return status;
    // BEGIN SOLUTION week 16, task sgemm_shared_tiles
    dim3 grid = sgemm_grid(n, m, TILE, TILE);
    if (grid.y == 0)
        return S2C_CUDA_BAD_ARGUMENT;
    sgemm_shared_tiles_kernel<<<grid, dim3(TILE, TILE)>>>(a, b, c, n, k, m);
    LAUNCH_CHECK("sgemm_shared_tiles_kernel");
    return S2C_CUDA_OK;
    // END SOLUTION
}

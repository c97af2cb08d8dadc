/* 02_coalesced.cu -- rung 2: the same work, with the column taken from threadIdx.x.
 *
 * What it changes: one line. The 32 threads of a warp now hold 32 neighbouring columns of one row
 * of C. At each step p they all read the same a[row, p] (one broadcast), read b[p, col .. col+31]
 * (one 128-byte line) and finally write 32 neighbours of C (one line). The hardware merges the
 * warp's 32 accesses into as few memory transactions as the addresses allow ("coalescing"), so
 * the same requests now move 8 times fewer sectors for B, and 32 times fewer for A and C.
 *
 * Cost model (n x k x m; 4096^3: 137 GFLOP):
 *   FLOPs  2 n k m.
 *   bytes  still 8 n k m requested (each output reads its row and column), but in whole lines,
 *          which the L1 and L2 caches mostly serve: the warps of a block share their row of A
 *          and neighbouring blocks share columns of B.
 *   so     bound by the load instructions themselves (two per multiply-add) and the L1/L2
 *          bandwidth: a few percent of cuBLAS, about 3x rung 1.
 *
 * Run it: python3 bench/sgemm_ladder.py --rung 2 */
#include "sgemm.h"

#define COALESCED_BLOCK_X 32 /* a warp along x: 32 columns of C */
#define COALESCED_BLOCK_Y 8  /* 8 warps along y: 8 rows */

__global__ void sgemm_coalesced_kernel(const float *a, const float *b, float *c, int64_t n,
                                       int64_t k, int64_t m)
{
    // BEGIN SOLUTION week 16, task sgemm_coalesced
    int64_t col = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; /* x walks along a row */
    int64_t row = (int64_t)blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= n || col >= m)
        return;
    float sum = 0.0f;
    for (int64_t p = 0; p < k; p++)
        sum += a[row * k + p] * b[p * m + col];
    c[row * m + col] = sum;
    // END SOLUTION
}

extern "C" const void *s2c_sgemm_coalesced_kernel(int64_t, int64_t, int64_t)
{
    return (const void *)sgemm_coalesced_kernel;
}

extern "C" int s2c_sgemm_coalesced(const float *a, const float *b, float *c, int64_t n, int64_t k,
                                   int64_t m)
{
    int status = sgemm_check_arguments(a, b, c, n, k, m);
    if (status != S2C_CUDA_OK || n == 0 || m == 0)
        return status;
    // BEGIN SOLUTION week 16, task sgemm_coalesced
    dim3 grid = sgemm_grid(n, m, COALESCED_BLOCK_Y, COALESCED_BLOCK_X);
    if (grid.y == 0)
        return S2C_CUDA_BAD_ARGUMENT;
    sgemm_coalesced_kernel<<<grid, dim3(COALESCED_BLOCK_X, COALESCED_BLOCK_Y)>>>(a, b, c, n, k, m);
    LAUNCH_CHECK("sgemm_coalesced_kernel");
    return S2C_CUDA_OK;
    // END SOLUTION
}

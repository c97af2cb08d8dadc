/* 01_naive.cu -- rung 1 of the SGEMM ladder: one thread per element of C, the definition.
 *
 * What it does: thread (x, y) of the grid computes c[row, col] = sum over p of a[row, p] b[p, col]
 * with row taken from threadIdx.x, the index that varies fastest within a warp. That is the natural
 * first guess (x is "the first index", row is "the first index"), and it is the wrong one: the 32
 * threads of a warp hold 32 consecutive rows, so at each step p they read a[row, p] from 32 rows
 * k * 4 bytes apart and write c 32 rows apart. Every load instruction of A touches 32 different
 * 32-byte sectors instead of one 128-byte line; only b[p, col], the same for the whole warp, is a
 * single broadcast.
 *
 * Cost model (n x k x m; at 4096^3: 137 GFLOP):
 *   FLOPs  2 n k m.
 *   bytes  each thread reads a row of A and a column of B, 8 k bytes for one output: 8 n k m in
 *          all (550 GB at 4096^3, 2700 times the 201 MB of the three matrices). The caches serve
 *          most of it, but A arrives in sectors of which a warp uses 4 bytes out of 32.
 *   so     bound by the memory system's sector rate, around 1% of cuBLAS.
 *
 * Run it: python3 bench/sgemm_ladder.py --rung 1  (builds the bench, checks with cuBLAS) */
#include "sgemm.h"

#define NAIVE_BLOCK_X 32 /* a warp along x: 32 rows of C */
#define NAIVE_BLOCK_Y 8  /* 8 warps along y: 8 columns */

__global__ void sgemm_naive_kernel(const float *a, const float *b, float *c, int64_t n,
                                   int64_t k, int64_t m)
{
    // BEGIN SOLUTION week 16, task sgemm_naive
    int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; /* x walks down the rows */
    int64_t col = (int64_t)blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= n || col >= m)
        return;
    float sum = 0.0f;
    for (int64_t p = 0; p < k; p++)
        sum += a[row * k + p] * b[p * m + col];
    c[row * m + col] = sum;
    // END SOLUTION
}

extern "C" const void *s2c_sgemm_naive_kernel(int64_t, int64_t, int64_t)
{
    return (const void *)sgemm_naive_kernel;
}

extern "C" int s2c_sgemm_naive(const float *a, const float *b, float *c, int64_t n, int64_t k,
                               int64_t m)
{
    int status = sgemm_check_arguments(a, b, c, n, k, m);
    if (status != S2C_CUDA_OK || n == 0 || m == 0)
        return status;
    // BEGIN SOLUTION week 16, task sgemm_naive
    /* rows of C along x, columns along y: sgemm_grid with the roles of n and m swapped */
    dim3 grid = sgemm_grid(m, n, NAIVE_BLOCK_Y, NAIVE_BLOCK_X);
    if (grid.y == 0)
        return S2C_CUDA_BAD_ARGUMENT;
    sgemm_naive_kernel<<<grid, dim3(NAIVE_BLOCK_X, NAIVE_BLOCK_Y)>>>(a, b, c, n, k, m);
    LAUNCH_CHECK("sgemm_naive_kernel");
    return S2C_CUDA_OK;
    // END SOLUTION
}

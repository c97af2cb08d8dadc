/* matmul.cu -- c = a @ b with shared-memory tiles (week 15): the product under matmul, the dense
 * layer and (later) convolution. The SGEMM ladder that reaches cuBLAS lives in sgemm/.
 *
 * A block computes a 32 x 32 tile of c with 32 x 8 threads, 4 outputs each (rows ty, ty + 8, ...).
 * For each step of 32 along k, the block copies a 32 x 32 tile of a and one of b into shared
 * memory (each float read once from global memory per block, instead of once per output), then
 * every thread accumulates from the tiles. Per step: 2 x 4 KiB loaded, 32 x 32 x 32 multiply-adds.
 *
 * Either operand may be stored transposed (the dense layer's w and dy.T): the loads then walk the
 * stored matrix along its rows (coalesced) and the transposition happens on the way into shared
 * memory. An optional bias is added to every row on the way out (the dense layer's + b). */
#include "common.h"

#define MM_TILE 32
#define MM_ROWS 8 /* threads along y: each thread computes MM_TILE / MM_ROWS outputs */
#define MAX_GRID_Y 65535

__global__ void gemm_tiled_kernel(const float *a, const float *b, const float *bias, float *c,
                                  int64_t n, int64_t k, int64_t m, int transpose_a,
                                  int transpose_b);

extern "C" int s2c_cuda_matmul(const float *a, const float *b, float *c, int64_t n, int64_t k,
                               int64_t m)
{
    return s2c_cuda_gemm(a, b, NULL, c, n, k, m, 0, 0);
}

extern "C" int s2c_cuda_gemm(const float *a, const float *b, const float *bias, float *c, int64_t n,
                             int64_t k, int64_t m, int transpose_a, int transpose_b)
{
    if (n == 0 || m == 0) return S2C_CUDA_OK;
    if (ceil_div(n, MM_TILE) > MAX_GRID_Y) return S2C_CUDA_BAD_ARGUMENT; /* 2 million rows */
    // BEGIN SOLUTION week 15, task matmul
    dim3 blocks(ceil_div(m, MM_TILE), ceil_div(n, MM_TILE));
    gemm_tiled_kernel<<<blocks, dim3(MM_TILE, MM_ROWS)>>>(a, b, bias, c, n, k, m, transpose_a,
                                                          transpose_b);
    LAUNCH_CHECK("gemm_tiled_kernel");
    return S2C_CUDA_OK;
}

__global__ void gemm_tiled_kernel(const float *a, const float *b, const float *bias, float *c,
                                  int64_t n, int64_t k, int64_t m, int transpose_a,
                                  int transpose_b)
{
    __shared__ float a_tile[MM_TILE][MM_TILE + 1]; /* [row of c][step along k]; +1: no conflicts */
    __shared__ float b_tile[MM_TILE][MM_TILE + 1]; /* [step along k][column of c] */
    int tx = threadIdx.x, ty = threadIdx.y;
    int64_t i0 = (int64_t)blockIdx.y * MM_TILE, j0 = (int64_t)blockIdx.x * MM_TILE;
    float acc[MM_TILE / MM_ROWS] = {0.0f};
    for (int64_t k0 = 0; k0 < k; k0 += MM_TILE) {
        for (int r = ty; r < MM_TILE; r += MM_ROWS) {
            /* a_tile[r][tx] = op(a)[i0 + r][k0 + tx]; stored transposed, read a[k0 + r][i0 + tx] */
            if (!transpose_a)
                a_tile[r][tx] = i0 + r < n && k0 + tx < k ? a[(i0 + r) * k + k0 + tx] : 0.0f;
            else
                a_tile[tx][r] = k0 + r < k && i0 + tx < n ? a[(k0 + r) * n + i0 + tx] : 0.0f;
            /* b_tile[r][tx] = op(b)[k0 + r][j0 + tx]; stored transposed, read b[j0 + r][k0 + tx] */
            if (!transpose_b)
                b_tile[r][tx] = k0 + r < k && j0 + tx < m ? b[(k0 + r) * m + j0 + tx] : 0.0f;
            else
                b_tile[tx][r] = j0 + r < m && k0 + tx < k ? b[(j0 + r) * k + k0 + tx] : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < MM_TILE; kk++) {
            float b_value = b_tile[kk][tx];
            for (int r = 0; r < MM_TILE / MM_ROWS; r++)
                acc[r] += a_tile[ty + r * MM_ROWS][kk] * b_value;
        }
        __syncthreads(); /* the tiles are used up before the next step overwrites them */
    }
    int64_t j = j0 + tx;
    for (int r = 0; r < MM_TILE / MM_ROWS; r++) {
        int64_t i = i0 + ty + r * MM_ROWS;
        if (i < n && j < m) c[i * m + j] = bias ? acc[r] + bias[j] : acc[r];
    }
    // END SOLUTION
}

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
 * memory. An optional bias is added to every row on the way out (the dense layer's + b).
 *
 * Split along k: a product with few output tiles and a long k leaves most multiprocessors idle
 * while a few blocks walk the whole depth (the Fashion CNN's Linear 3200->256 at batch 64: 16
 * tiles, 100 steps each, 130 us on an H100 for 52 MFLOP). Given scratch (gemm_scratch floats),
 * such a product is cut into `pieces` along k, one block per tile and piece (grid z), each
 * writing its partial tile to scratch; a second kernel adds the pieces in order of k (and the
 * bias): the same sums in the same order on every run, no atomics. */
#include "common.h"

#define MM_TILE 32
#define MM_ROWS 8 /* threads along y: each thread computes MM_TILE / MM_ROWS outputs */
#define MAX_GRID_Y 65535
#define MIN_PIECE 128  /* the shortest piece of k worth a block: 4 steps of MM_TILE */
#define ADD_THREADS 256

/* How a product's k is split: `pieces` of `piece` each (a multiple of MM_TILE; the last may be
 * shorter). When it may split and its tiles are fewer than the multiprocessors: enough pieces
 * for two blocks a multiprocessor, each MIN_PIECE or longer; else one piece of all of k. */
struct gemm_split {
    int64_t pieces, piece;
};
static gemm_split split_k(int64_t n, int64_t k, int64_t m, bool may_split)
{
    int64_t tiles = ceil_div(n, MM_TILE) * ceil_div(m, MM_TILE), wanted = 1;
    if (may_split && tiles < device_multiprocessors()) {
        int64_t fill = ceil_div(2 * device_multiprocessors(), tiles), most = k / MIN_PIECE;
        wanted = fill < most ? fill : most < 1 ? 1 : most;
    }
    int64_t piece = ceil_div(ceil_div(k, wanted), MM_TILE) * MM_TILE; /* 0 when k is 0 */
    return piece > 0 ? gemm_split{ceil_div(k, piece), piece} : gemm_split{1, MM_TILE};
}

int64_t gemm_scratch(int64_t n, int64_t k, int64_t m)
{
    gemm_split split = split_k(n, k, m, true);
    return split.pieces > 1 ? split.pieces * n * m : 0;
}

__global__ void add_pieces_kernel(const float *partial, const float *bias, float *c, int64_t pieces,
                                  int64_t n, int64_t m);

__global__ void gemm_tiled_kernel(const float *a, const float *b, const float *bias, float *c,
                                  int64_t n, int64_t k, int64_t m, int transpose_a,
                                  int transpose_b, int64_t piece);

extern "C" int s2c_cuda_matmul(const float *a, const float *b, float *c, int64_t n, int64_t k,
                               int64_t m)
{
    return s2c_cuda_gemm(a, b, NULL, c, NULL, n, k, m, 0, 0);
}

extern "C" int s2c_cuda_gemm(const float *a, const float *b, const float *bias, float *c,
                             float *scratch, int64_t n, int64_t k, int64_t m, int transpose_a,
                             int transpose_b)
{
    if (n == 0 || m == 0) return S2C_CUDA_OK;
    if (ceil_div(n, MM_TILE) > MAX_GRID_Y) return S2C_CUDA_BAD_ARGUMENT; /* 2 million rows */
    gemm_split split = split_k(n, k, m, scratch != NULL);
    int64_t pieces = split.pieces;
    // BEGIN SOLUTION week 15, task matmul
    dim3 blocks(ceil_div(m, MM_TILE), ceil_div(n, MM_TILE), pieces);
    gemm_tiled_kernel<<<blocks, dim3(MM_TILE, MM_ROWS)>>>(
        a, b, pieces > 1 ? NULL : bias, pieces > 1 ? scratch : c, n, k, m, transpose_a,
        transpose_b, split.piece);
    LAUNCH_CHECK("gemm_tiled_kernel");
    if (pieces > 1) {
        add_pieces_kernel<<<blocks_for(n * m, ADD_THREADS), ADD_THREADS>>>(scratch, bias, c,
                                                                         pieces, n, m);
        LAUNCH_CHECK("add_pieces_kernel");
    }
    return S2C_CUDA_OK;
}

/* Block (x, y, z) computes tile (y, x) of c over k in [z piece, (z + 1) piece), into the z-th
 * n x m slice of c (c is the scratch of partial tiles when the product is split). */
__global__ void gemm_tiled_kernel(const float *a, const float *b, const float *bias, float *c,
                                  int64_t n, int64_t k, int64_t m, int transpose_a,
                                  int transpose_b, int64_t piece)
{
    __shared__ float a_tile[MM_TILE][MM_TILE + 1]; /* [row of c][step along k]; +1: no conflicts */
    __shared__ float b_tile[MM_TILE][MM_TILE + 1]; /* [step along k][column of c] */
    int tx = threadIdx.x, ty = threadIdx.y;
    int64_t i0 = (int64_t)blockIdx.y * MM_TILE, j0 = (int64_t)blockIdx.x * MM_TILE;
    float acc[MM_TILE / MM_ROWS] = {0.0f};
    int64_t k_begin = blockIdx.z * piece, k_end = k_begin + piece < k ? k_begin + piece : k;
    c += blockIdx.z * n * m;
    for (int64_t k0 = k_begin; k0 < k_end; k0 += MM_TILE) {
        for (int r = ty; r < MM_TILE; r += MM_ROWS) {
            /* a_tile[r][tx] = op(a)[i0 + r][k0 + tx]; stored transposed, read a[k0 + r][i0 + tx] */
            if (!transpose_a)
                a_tile[r][tx] = i0 + r < n && k0 + tx < k_end ? a[(i0 + r) * k + k0 + tx] : 0.0f;
            else
                a_tile[tx][r] = k0 + r < k_end && i0 + tx < n ? a[(k0 + r) * n + i0 + tx] : 0.0f;
            /* b_tile[r][tx] = op(b)[k0 + r][j0 + tx]; stored transposed, read b[j0 + r][k0 + tx] */
            if (!transpose_b)
                b_tile[r][tx] = k0 + r < k_end && j0 + tx < m ? b[(k0 + r) * m + j0 + tx] : 0.0f;
            else
                b_tile[tx][r] = j0 + r < m && k0 + tx < k_end ? b[(j0 + r) * k + k0 + tx] : 0.0f;
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

/* c[i, j] = the pieces' partial sums added in order of k (+ bias[j]). */
__global__ void add_pieces_kernel(const float *partial, const float *bias, float *c, int64_t pieces,
                                  int64_t n, int64_t m)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= n * m) return;
    float total = 0.0f;
    for (int64_t piece = 0; piece < pieces; piece++)
        total += partial[piece * n * m + i];
    c[i] = bias != NULL ? total + bias[i % m] : total;
}

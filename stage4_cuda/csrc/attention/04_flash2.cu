/* 04_flash2.cu -- rung 4: FlashAttention-2 (Dao 2023): a block per tile of queries, the keys
 * streamed past it, the output in registers and divided once at the end.
 *
 * What it changes: rung 3 walks the keys in its outer loop, so each query tile's output,
 * maximum and sum go back to device memory after every key tile, normalized each time, and a
 * block owns a whole head (heads blocks: too few to fill a GPU at long sequences). Here the loops
 * are swapped: a block owns TILE queries (heads x n / TILE blocks, the longest causal rows
 * first), holds them in shared memory, and streams every key tile through it; the output
 * accumulates in registers against the running maximum, rescaled by exp(old max - new max) when
 * it grows, and is divided by the sum once, after the last tile (FlashAttention-2's fewer
 * non-matmul operations). The 16 x 16 threads split the queries four rows each, and a row's 16
 * threads (half a warp) reduce its maximum and sum by shuffles: no warp waits on another's
 * partial results, as FlashAttention-1's split of the keys over warps did. A causal block stops
 * at the tile holding its last query's key (attention.cuh: unless a non-finite input).
 *
 * Cost model (per head: n queries, m keys, head dimension d; TILE = 64):
 *   memory nothing beyond y and lse: linear in n.
 *   bytes  q read once and y written once (8 n d), k and v read once per query tile:
 *          8 m d n / TILE (the same tile of keys is read by every query block, mostly from L2).
 *   FLOPs  4 n m d (half of it with a causal mask) and an exp a score.
 *   so     compute bound: per k, a thread's 4 x 4 (S) or 4 x 4 CB (P v) fused multiply-adds take
 *          1 + CB float4 loads from shared memory (attention.cuh: tile_product).
 *
 * Run it: python -m bench.attention_ladder --rungs flash2 */
#include "attention.cuh"

template <int CB>
__global__ void flash2_kernel(const float *q, const float *k, const float *v, float *y,
                              float *lse, const int *nonfinite, int64_t n, int64_t m, int d,
                              int causal, float scale);

template <int CB>
static int launch_flash2(const float *q, const float *k, const float *v, float *y, float *lse,
                         const int *nonfinite, int64_t heads, int64_t n, int64_t m, int64_t d,
                         int causal, float scale)
{
    size_t bytes = sizeof(float) * (2 * by_k_floats<CB>() + rows_floats<CB>() + square_floats());
    ALLOW_SHARED(flash2_kernel<CB>, bytes);
    launch_overlapped(flash2_kernel<CB>, heads * tiles(n), TILE_THREADS, bytes, q, k, v, y, lse,
                      nonfinite, n, m, (int)d, causal, scale);
    LAUNCH_CHECK("flash2_kernel");
    return S2C_CUDA_OK;
}

extern "C" int s2c_cuda_attention_flash2(const float *q, const float *k, const float *v, float *y,
                                         float *lse, float *scratch, int64_t heads, int64_t n,
                                         int64_t m, int64_t d, int causal, float scale)
{
    if (heads * n * m * d == 0)
        return S2C_CUDA_OK;
    int *nonfinite = (int *)scratch;
    int status = flash_rung_checks(q, k, v, heads, n, m, d, causal, nonfinite);
    if (status != S2C_CUDA_OK)
        return status;
    if (d <= 64)
        return launch_flash2<1>(q, k, v, y, lse, nonfinite, heads, n, m, d, causal, scale);
    return launch_flash2<2>(q, k, v, y, lse, nonfinite, heads, n, m, d, causal, scale);
}

template <int CB>
__global__ void __launch_bounds__(TILE_THREADS)
flash2_kernel(const float *q, const float *k, const float *v, float *y, float *lse,
              const int *nonfinite, int64_t n, int64_t m, int d, int causal, float scale)
{
    wait_for_previous_kernel();
    extern __shared__ __align__(16) float shared[];
    float *q_by_k = shared;                      /* [64 CB][TILE + PAD] */
    float *k_by_k = q_by_k + by_k_floats<CB>();  /* [64 CB][TILE + PAD] */
    float *v_rows = k_by_k + by_k_floats<CB>();  /* [TILE][64 CB + PAD] */
    float *p_by_key = v_rows + rows_floats<CB>(); /* [TILE keys][TILE + PAD] */
    int64_t query_tiles = tiles(n), h = blockIdx.x / query_tiles;
    int64_t first = (query_tiles - 1 - blockIdx.x % query_tiles) * TILE; /* longest rows first */
    const float *qh = q + h * n * d, *kh = k + h * m * d, *vh = v + h * m * d;
    int64_t key_tiles = tiles(m);
    if (causal && !nonfinite[h]) /* keys past the last query's are masked for every row here */
        key_tiles = min(key_tiles, first / TILE + 1);
    int ty = tile_ty(), tx = tile_tx();
    float out[4][4 * CB], row_max[4], row_sum[4], alpha[4];
    zero(out);
    for (int i = 0; i < 4; i++)
        row_max[i] = -INFINITY, row_sum[i] = 0.0f;
    load_tile<CB>(q_by_k, qh, first, n, d, true);
    for (int64_t kt = 0; kt < key_tiles; kt++) {
        __syncthreads(); /* the last tile's k, v and p are read */
        load_tile<CB>(k_by_k, kh, kt * TILE, m, d, true);
        load_tile<CB>(v_rows, vh, kt * TILE, m, d, false);
        __syncthreads();
        float s[4][4];
        zero(s);
        tile_product<1>(s, q_by_k, TILE + PAD, k_by_k, TILE + PAD, d);
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                int64_t key = kt * TILE + 4 * tx + j;
                s[i][j] = key < m ? masked_score(s[i][j], scale, first + 4 * ty + i, key, causal)
                                  : -INFINITY;
            }
        online_softmax_tile(s, row_max, row_sum, alpha);
        for (int i = 0; i < 4; i++)
            for (int c = 0; c < 4 * CB; c++)
                out[i][c] *= alpha[i];
        store_corner(p_by_key, s, true);
        __syncthreads();
        tile_product<CB>(out, p_by_key, TILE + PAD, v_rows, 64 * CB + PAD, TILE);
    }
    float inverse[4];
    for (int i = 0; i < 4; i++) {
        inverse[i] = inverse_sum(row_sum[i]);
        if (tx == 0 && first + 4 * ty + i < n)
            lse[h * n + first + 4 * ty + i] = row_max[i] + logf(row_sum[i]);
    }
    store_tile_rows<4, CB>(out, inverse, y + h * n * d, first, n, d);
}

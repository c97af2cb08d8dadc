/* 03_flash1.cu -- rung 3: FlashAttention-1 (Dao et al. 2022, Algorithm 1): one kernel, tiles of
 * q, k and v in shared memory, the online softmax over tiles, no n x m buffer.
 *
 * What it changes: rungs 1 and 2 write S to device memory and read it back. Here a block owns a
 * head: its outer loop brings a tile of TILE keys (k and v) into shared memory, its inner loop
 * brings each tile of TILE queries in, computes their TILE x TILE scores in registers
 * (attention.cuh: tile_product), and updates each query's running maximum and sum
 * (online_softmax_tile) and its output, which lives in y between key tiles, normalized each
 * time: y = (sum_old exp(max_old - max_new) y_old + P v) / sum_new. The scores never leave the
 * multiprocessor. A causal block skips the query tiles that see none of the key tile.
 *
 * Cost model (per head: n queries, m keys, head dimension d; TILE = 64):
 *   memory the running maximum and sum, 8 n bytes: linear in n.
 *   bytes  k and v read once (8 m d); q read, and y read and written, once per key tile:
 *          12 n d m / TILE, plus the statistics 16 n m / TILE.
 *   FLOPs  4 n m d, and an exp a score.
 *   so     the scores' traffic is gone, but heads blocks (one per head) leave most of a GPU idle
 *          when heads is below a few times its multiprocessors, and the output goes back and
 *          forth m / TILE times: rung 4 fixes both.
 *
 * Run it: python -m bench.attention_ladder --rungs flash1 */
#include "attention.cuh"

template <int CB>
__global__ void flash1_kernel(const float *q, const float *k, const float *v, float *y,
                              float *lse, float *stats, const int *nonfinite, int64_t n,
                              int64_t m, int d, int causal, float scale);

template <int CB>
static int launch_flash1(const float *q, const float *k, const float *v, float *y, float *lse,
                         float *stats, const int *nonfinite, int64_t heads, int64_t n, int64_t m,
                         int64_t d, int causal, float scale)
{
    size_t bytes = sizeof(float) * (2 * by_k_floats<CB>() + rows_floats<CB>() + square_floats());
    ALLOW_SHARED(flash1_kernel<CB>, bytes);
    launch_overlapped(flash1_kernel<CB>, heads, TILE_THREADS, bytes, q, k, v, y, lse, stats,
                      nonfinite, n, m, (int)d, causal, scale);
    LAUNCH_CHECK("flash1_kernel");
    return S2C_CUDA_OK;
}

extern "C" int s2c_cuda_attention_flash1(const float *q, const float *k, const float *v, float *y,
                                         float *lse, float *scratch, int64_t heads, int64_t n,
                                         int64_t m, int64_t d, int causal, float scale)
{
    if (heads * n * m * d == 0)
        return S2C_CUDA_OK;
    int *nonfinite = (int *)scratch;
    float *stats = scratch + heads; /* [heads][2][n]: each query's running maximum and sum */
    int status = flash_rung_checks(q, k, v, heads, n, m, d, causal, nonfinite);
    if (status != S2C_CUDA_OK)
        return status;
    if (d <= 64)
        return launch_flash1<1>(q, k, v, y, lse, stats, nonfinite, heads, n, m, d, causal, scale);
    return launch_flash1<2>(q, k, v, y, lse, stats, nonfinite, heads, n, m, d, causal, scale);
}

template <int CB>
__global__ void __launch_bounds__(TILE_THREADS)
flash1_kernel(const float *q, const float *k, const float *v, float *y, float *lse, float *stats,
              const int *nonfinite, int64_t n, int64_t m, int d, int causal, float scale)
{
    wait_for_previous_kernel();
    extern __shared__ __align__(16) float shared[];
    float *k_by_k = shared;                       /* [64 CB][TILE + PAD] */
    float *v_rows = k_by_k + by_k_floats<CB>();   /* [TILE][64 CB + PAD] */
    float *q_by_k = v_rows + rows_floats<CB>();   /* [64 CB][TILE + PAD] */
    float *p_by_key = q_by_k + by_k_floats<CB>(); /* [TILE keys][TILE + PAD] */
    int64_t h = blockIdx.x;
    const float *qh = q + h * n * d, *kh = k + h * m * d, *vh = v + h * m * d;
    float *yh = y + h * n * d, *max_h = stats + 2 * h * n, *sum_h = max_h + n;
    bool skip = causal && !nonfinite[h];
    int64_t key_tiles = tiles(m), query_tiles = tiles(n);
    int ty = tile_ty(), tx = tile_tx();
    for (int64_t kt = 0; kt < key_tiles; kt++) {
        __syncthreads(); /* the last key tile is read */
        load_tile<CB>(k_by_k, kh, kt * TILE, m, d, true);
        load_tile<CB>(v_rows, vh, kt * TILE, m, d, false);
        /* a query before the tile's first key sees none of it (when skipping masked tiles) */
        for (int64_t qt = skip ? kt : 0; qt < query_tiles; qt++) {
            int64_t first = qt * TILE;
            bool last_keys = kt == (skip ? min(qt, key_tiles - 1) : key_tiles - 1);
            __syncthreads(); /* the last query tile and p are read */
            load_tile<CB>(q_by_k, qh, first, n, d, true);
            __syncthreads();
            float s[4][4];
            zero(s);
            tile_product<1>(s, q_by_k, TILE + PAD, k_by_k, TILE + PAD, d);
            float row_max[4], row_sum[4], old_sum[4], alpha[4];
            for (int i = 0; i < 4; i++) {
                int64_t query = first + 4 * ty + i;
                bool seen = kt > 0 && query < n; /* the statistics of the key tiles before */
                row_max[i] = seen ? max_h[query] : -INFINITY;
                row_sum[i] = old_sum[i] = seen ? sum_h[query] : 0.0f;
                for (int j = 0; j < 4; j++) {
                    int64_t key = kt * TILE + 4 * tx + j;
                    s[i][j] = key < m ? masked_score(s[i][j], scale, query, key, causal)
                                      : -INFINITY;
                }
            }
            online_softmax_tile(s, row_max, row_sum, alpha); /* its shuffles: all have read */
            store_corner(p_by_key, s, true);
            __syncthreads();
            float out[4][4 * CB];
            zero(out);
            tile_product<CB>(out, p_by_key, TILE + PAD, v_rows, 64 * CB + PAD, TILE);
            for (int i = 0; i < 4; i++) {
                int64_t query = first + 4 * ty + i;
                if (query >= n)
                    break;
                float keep = old_sum[i] * alpha[i]; /* y so far, weighted back to a sum */
                float inverse = inverse_sum(row_sum[i]);
                for (int g = 0; g < CB; g++)
                    for (int j = 0; j < 4; j++) {
                        int col = 4 * tx + 64 * g + j;
                        if (col >= d)
                            continue;
                        float before = kt > 0 ? yh[query * d + col] * keep : 0.0f;
                        yh[query * d + col] = (before + out[i][4 * g + j]) * inverse;
                    }
                if (tx == 0) {
                    max_h[query] = row_max[i];
                    sum_h[query] = row_sum[i];
                    if (last_keys)
                        lse[h * n + query] = row_max[i] + logf(row_sum[i]);
                }
            }
        }
    }
}

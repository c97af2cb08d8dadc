/* 05_flash2_regs.cu -- rung 5: FlashAttention-2 with register tiles of 8 x 4: twice the queries a
 * block, every tile stored by row, loaded a float4 at a time.
 *
 * What it changes: rung 4's threads each own a 4 x 4 corner of a 64 x 64 product, 16 fused
 * multiply-adds for two float4 loads from shared memory a step of the depth, and its tiles of q and
 * k are stored transposed, one float at a time. Here a block owns QUERY_TILE = 128 queries and each
 * thread 8 of their rows (8 ty .. 8 ty + 7) by 4 keys (tx, tx + 16, tx + 32, tx + 48) of S, and
 * the same 8 rows by 4 columns of each 64 of y: per 4 steps of the depth, 8 float4 loads of its
 * rows (the same address for a half warp: broadcast) and 4 of the other side's give 128 fused
 * multiply-adds, 10.7 a load where rung 4 has 8. Every tile is stored by row, so that both
 * products read float4s along the depth: q, k and v are copied a float4 at a time from device
 * memory (when d is a multiple of 4), with no transpose, a thread's loads of k and v all issued
 * before it waits on one; a thread's keys 16 apart put a half warp's float4s of k in distinct
 * banks (rows of 64 + PAD floats). Each thread keeps its own share of a row's sum, added over the
 * row's 16 threads once at the end (rung 4 adds them every tile). The head dimension is a
 * template parameter: d = 64 multiplies over a depth known when compiling, other d over d
 * rounded up to 4 (the tiles zero-padded). A causal launch orders its blocks longest rows
 * first over every head (the short diagonal blocks fill the tail of the grid), a warp skips a key
 * tile that comes wholly after its queries (the last tile of a diagonal block, for half its warps)
 * and only the tiles the diagonal crosses compare keys with queries; a full launch keeps a head's
 * query tiles together (they share its k and v in L2).
 *
 * Cost model (per head: n queries, m keys, head dimension d; QUERY_TILE = 128, TILE = 64 keys):
 *   memory nothing beyond y and lse: linear in n.
 *   bytes  q read once and y written once (8 n d), k and v read once per query tile:
 *          8 m d n / QUERY_TILE, half rung 4's.
 *   FLOPs  4 n m d (half of it with a causal mask) and an exp a score.
 *   so     compute bound: 102 KiB of shared memory a block at d <= 64 and at most 128 registers
 *          a thread, so that 2 blocks (16 warps) share an SM of 228 KiB and 64 K registers.
 *
 * Run it: python -m bench.attention_ladder --rungs flash2_regs */
#include "attention.cuh"

#define QUERY_TILE 128 /* queries a block: 16 rows of threads x 8 rows each */
#define THREAD_ROWS 8

template <int CB>
constexpr size_t flash2_regs_bytes()
{
    return sizeof(float) * ((QUERY_TILE + 2 * TILE) * padded_row<CB>() + QUERY_TILE * (TILE + PAD));
}

template <int CB, bool FULL>
__global__ void flash2_regs_kernel(const float *q, const float *k, const float *v, float *y,
                                   float *lse, const int *nonfinite, int64_t heads, int64_t n,
                                   int64_t m, int d, int causal, float scale);

template <int CB, bool FULL>
static int launch_flash2_regs(const float *q, const float *k, const float *v, float *y,
                              float *lse, const int *nonfinite, int64_t heads, int64_t n,
                              int64_t m, int64_t d, int causal, float scale)
{
    size_t bytes = flash2_regs_bytes<CB>();
    ALLOW_SHARED((flash2_regs_kernel<CB, FULL>), bytes);
    launch_overlapped(flash2_regs_kernel<CB, FULL>, heads * ceil_div(n, QUERY_TILE), TILE_THREADS,
                      bytes, q, k, v, y, lse, nonfinite, heads, n, m, (int)d, causal, scale);
    LAUNCH_CHECK("flash2_regs_kernel");
    return S2C_CUDA_OK;
}

extern "C" int s2c_cuda_attention_flash2_regs(const float *q, const float *k, const float *v,
                                              float *y, float *lse, float *scratch,
                                              int64_t heads, int64_t n, int64_t m, int64_t d,
                                              int causal, float scale)
{
    if (heads * n * m * d == 0)
        return S2C_CUDA_OK;
    int *nonfinite = (int *)scratch;
    int status = flash_rung_checks(q, k, v, heads, n, m, d, causal, nonfinite);
    if (status != S2C_CUDA_OK)
        return status;
    if (d == 64)
        return launch_flash2_regs<1, true>(q, k, v, y, lse, nonfinite, heads, n, m, d, causal,
                                           scale);
    if (d < 64)
        return launch_flash2_regs<1, false>(q, k, v, y, lse, nonfinite, heads, n, m, d, causal,
                                            scale);
    return launch_flash2_regs<2, false>(q, k, v, y, lse, nonfinite, heads, n, m, d, causal, scale);
}

template <int CB, bool FULL>
__global__ void __launch_bounds__(TILE_THREADS, CB == 1 ? 2 : 1)
flash2_regs_kernel(const float *q, const float *k, const float *v, float *y, float *lse,
                   const int *nonfinite, int64_t heads, int64_t n, int64_t m, int d, int causal,
                   float scale)
{
    wait_for_previous_kernel();
    extern __shared__ __align__(16) float shared[];
    const int width = padded_row<CB>(), p_width = TILE + PAD;
    float *q_rows = shared;                      /* [QUERY_TILE][width] */
    float *k_rows = q_rows + QUERY_TILE * width; /* [TILE][width] */
    float *v_rows = k_rows + TILE * width;       /* [TILE][width] */
    float *p_rows = v_rows + TILE * width;       /* [QUERY_TILE][TILE + PAD] */
    int64_t query_tiles = ceil_div(n, QUERY_TILE), h, tile;
    if (causal) /* longest rows first over every head */
        h = blockIdx.x % heads, tile = query_tiles - 1 - blockIdx.x / heads;
    else /* a head's query tiles together */
        h = blockIdx.x / query_tiles, tile = blockIdx.x % query_tiles;
    int64_t first = tile * QUERY_TILE;
    const float *qh = q + h * n * d, *kh = k + h * m * d, *vh = v + h * m * d;
    int64_t key_tiles = tiles(m);
    if (causal && !nonfinite[h]) /* keys past the block's last query are masked for every row */
        key_tiles = min(key_tiles, (first + QUERY_TILE - 1) / TILE + 1);
    const int depth = FULL ? 64 * CB : (d + 3) / 4 * 4;
    int ty = tile_ty(), tx = tile_tx();
    float out[THREAD_ROWS][4 * CB], row_max[THREAD_ROWS], row_sum[THREAD_ROWS];
    float alpha[THREAD_ROWS];
    zero(out);
    for (int i = 0; i < THREAD_ROWS; i++)
        row_max[i] = -INFINITY, row_sum[i] = 0.0f;
    copy_rows<CB, QUERY_TILE, TILE_THREADS>(q_rows, qh, first, n, d);
    const float *my_q = q_rows + THREAD_ROWS * ty * width, *my_k = k_rows + tx * width;
    const float *my_p = p_rows + THREAD_ROWS * ty * p_width, *my_v = v_rows + 4 * tx;
    /* the last query of this thread's warp (rows of threads 2 w and 2 w + 1) */
    const int64_t warp_last = first + THREAD_ROWS * (2 * (threadIdx.x / 32) + 2) - 1;
    for (int64_t kt = 0; kt < key_tiles; kt++) {
        __syncthreads(); /* the last tile's k, v and p are read */
        copy_rows<CB, TILE, TILE_THREADS>(k_rows, kh, kt * TILE, m, d);
        copy_rows<CB, TILE, TILE_THREADS>(v_rows, vh, kt * TILE, m, d);
        __syncthreads();
        /* Finite scores masked for each of the warp's rows leave its max, sum and y as they
         * are (p 0, alpha 1): the warp skips a tile whose keys all come after its queries. A
         * tile whose keys all come at or before the block's first query masks nothing. */
        const bool skip = causal && !nonfinite[h] && kt * TILE > warp_last;
        const int mask = causal && kt * TILE + TILE - 1 > first;
        if (!skip) {
            float s[THREAD_ROWS][4];
            zero(s);
            rows_by_rows(s, my_q, my_k, width, depth);
#pragma unroll
            for (int i = 0; i < THREAD_ROWS; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    int64_t key = kt * TILE + tx + 16 * j;
                    s[i][j] = key < m ? masked_score(s[i][j], scale,
                                                     first + THREAD_ROWS * ty + i, key, mask)
                                      : -INFINITY;
                }
            online_softmax_tile<THREAD_ROWS, true>(s, row_max, row_sum, alpha);
#pragma unroll
            for (int i = 0; i < THREAD_ROWS; i++)
#pragma unroll
                for (int c = 0; c < 4 * CB; c++)
                    out[i][c] *= alpha[i];
            store_spread(p_rows, s);
        }
        __syncthreads();
        if (!skip)
            rows_by_columns<THREAD_ROWS, CB>(out, my_p, p_width, my_v, width,
                                             rows_present(kt * TILE, m));
    }
    float inverse[THREAD_ROWS];
#pragma unroll
    for (int i = 0; i < THREAD_ROWS; i++) {
        int64_t row = first + THREAD_ROWS * ty + i;
        float sum = row_sum16(row_sum[i]); /* the row's 16 shares (online_softmax_tile) */
        inverse[i] = inverse_sum(sum);
        if (row < n && tx == 0)
            lse[h * n + row] = row_max[i] + logf(sum);
    }
    store_tile_rows<THREAD_ROWS, CB>(out, inverse, y + h * n * d, first, n, d);
}

/* backward.cu -- the gradients of attention (not a rung; every rung's lse serves it), after
 * FlashAttention-2's backward: P recomputed tile by tile from q, k and the saved lse, never an
 * n x m buffer.
 *
 * With P = exp(S - lse) and Dsum_i = dy_i . y_i (the row sums of P * dP):
 *     dv = P^T dy,   dP = dy v^T,   dS = P * (dP - Dsum),   dq = scale dS k,   dk = scale dS^T q.
 * Three kernels: Dsum, a warp per query; the key gradients, a block per tile of TILE keys holding
 * k and v in shared memory, streaming every tile of queries (q, dy) past them and accumulating dk
 * and dv in registers; the query gradients, a block per tile of queries holding q and dy and
 * streaming the key tiles, accumulating dq in registers. Each kernel recomputes S and dP for its
 * tiles (the query gradients' pass is the price of a dq without atomics): every output is written
 * once, by one thread, its sums in a fixed order: the same bits on every run (deterministic).
 *
 * The products are rung 5's register tiles (attention.cuh: rows_by_rows, rows_by_columns): every
 * tile stored by row and copied a float4 at a time, each thread GRADIENT_ROWS rows of its side's
 * tile by 4 of the streamed side's (S^T and dP^T in the key kernel, S and dP in the query kernel)
 * and by 4 columns of each 64 of its gradients. With d <= 64 a thread owns 8 rows (128 threads a
 * block); with d up to 128, 4 (256 threads), so that its accumulators stay 64 registers.
 *
 * Cost model (per head: n queries, m keys, head dimension d; TILE = 64):
 *   memory Dsum, 4 n bytes: linear in n.
 *   bytes  each kernel reads its own tiles once and the other side's once per tile:
 *          about 16 n m d / TILE, written 4 (n + 2 m) d.
 *   FLOPs  S and dP twice (8 n m d) and dv, dk, dq once (6 n m d): 14 n m d (4 n m d forward).
 *   so     compute bound, as the forward; 104 KiB of shared memory a key block at d <= 64
 *          (87 KiB a query block): 2 blocks an SM.
 *
 * Run it: python -m bench.attention_ladder --rungs flash2_regs (the backward is timed beside every run) */
#include "attention.cuh"

/* A thread's rows of its block's tile: 8 for d <= 64 (CB = 1), 4 for d <= 128 (CB = 2). */
template <int CB>
__host__ __device__ constexpr int gradient_rows() { return 8 / CB; }
template <int CB>
__host__ __device__ constexpr int gradient_threads() { return TILE / gradient_rows<CB>() * 16; }

__global__ void dsum_kernel(const float *dy, const float *y, float *dsum, int64_t rows, int d);
template <int CB>
__global__ void key_gradients_kernel(const float *dy, const float *q, const float *k,
                                     const float *v, const float *lse, const float *dsum,
                                     const int *nonfinite, float *dk, float *dv, int64_t heads,
                                     int64_t n, int64_t m, int d, int causal, float scale);
template <int CB>
__global__ void query_gradients_kernel(const float *dy, const float *q, const float *k,
                                       const float *v, const float *lse, const float *dsum,
                                       const int *nonfinite, float *dq, int64_t heads, int64_t n,
                                       int64_t m, int d, int causal, float scale);

/* Shared memory: 4 tiles by row (k, v, q, dy) and 2 of scores (P^T, dS^T) for the key kernel;
 * 4 by row and 1 of scores (dS) for the query kernel. */
template <int CB>
constexpr size_t key_gradients_bytes()
{
    return sizeof(float) * (4 * TILE * padded_row<CB>() + 2 * TILE * (TILE + PAD));
}
template <int CB>
constexpr size_t query_gradients_bytes()
{
    return sizeof(float) * (4 * TILE * padded_row<CB>() + TILE * (TILE + PAD));
}

template <int CB>
static int launch_gradients(const float *dy, const float *q, const float *k, const float *v,
                            const float *lse, const float *dsum, const int *nonfinite, float *dq,
                            float *dk, float *dv, int64_t heads, int64_t n, int64_t m, int64_t d,
                            int causal, float scale)
{
    ALLOW_SHARED(key_gradients_kernel<CB>, key_gradients_bytes<CB>());
    launch_overlapped(key_gradients_kernel<CB>, heads * tiles(m), gradient_threads<CB>(),
                      key_gradients_bytes<CB>(), dy, q, k, v, lse, dsum, nonfinite, dk, dv, heads,
                      n, m, (int)d, causal, scale);
    LAUNCH_CHECK("key_gradients_kernel");
    ALLOW_SHARED(query_gradients_kernel<CB>, query_gradients_bytes<CB>());
    launch_overlapped(query_gradients_kernel<CB>, heads * tiles(n), gradient_threads<CB>(),
                      query_gradients_bytes<CB>(), dy, q, k, v, lse, dsum, nonfinite, dq, heads,
                      n, m, (int)d, causal, scale);
    LAUNCH_CHECK("query_gradients_kernel");
    return S2C_CUDA_OK;
}

extern "C" int s2c_cuda_attention_backward(const float *dy, const float *q, const float *k,
                                           const float *v, const float *y, const float *lse,
                                           float *dq, float *dk, float *dv, float *scratch,
                                           int64_t heads, int64_t n, int64_t m, int64_t d,
                                           int causal, float scale)
{
    if (heads * n * m * d == 0)
        return S2C_CUDA_OK;
    if (d > ATTENTION_MAX_D)
        return S2C_CUDA_BAD_ARGUMENT;
    int *nonfinite = (int *)scratch;
    float *dsum = scratch + heads;
    if (causal) {
        HeadArrays inputs = {{dy, q, k, v, y, lse}, {n * d, n * d, m * d, m * d, n * d, n}, 6};
        int status = attention_nonfinite_flags(inputs, heads, nonfinite);
        if (status != S2C_CUDA_OK)
            return status;
    }
    launch_overlapped(dsum_kernel, blocks_for(heads * n * 32, 256), 256, 0, dy, y, dsum,
                      heads * n, (int)d);
    LAUNCH_CHECK("dsum_kernel");
    if (d <= 64)
        return launch_gradients<1>(dy, q, k, v, lse, dsum, nonfinite, dq, dk, dv, heads, n, m, d,
                                   causal, scale);
    return launch_gradients<2>(dy, q, k, v, lse, dsum, nonfinite, dq, dk, dv, heads, n, m, d,
                               causal, scale);
}

/* Warp r: dsum[r] = dy_r . y_r, the lanes striding along the row, then a warp sum. */
__global__ void dsum_kernel(const float *dy, const float *y, float *dsum, int64_t rows, int d)
{
    wait_for_previous_kernel();
    int64_t row = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    float total = 0.0f;
    if (row < rows)
        for (int c = lane; c < d; c += 32)
            total += dy[row * d + c] * y[row * d + c];
    total = warp_sum(total);
    if (row < rows && lane == 0)
        dsum[row] = total;
}

/* (head, tile) of this block among `heads` x `count` tiles: with a causal mask the tiles of most
 * work first over every head (the last tile's when `last_longest`, else the first's: the short
 * tiles fill the tail of the grid), without one a head's tiles together (they share its inputs in
 * L2). */
static __device__ __forceinline__ void head_and_tile(int64_t heads, int64_t count, int causal,
                                                     bool last_longest, int64_t &h, int64_t &tile)
{
    if (causal) {
        h = blockIdx.x % heads, tile = blockIdx.x / heads;
        if (last_longest)
            tile = count - 1 - tile;
    } else {
        h = blockIdx.x / count, tile = blockIdx.x % count;
    }
}

/* P and dS of one score from its dot products: s = q . k, dp = dy . v; 0 outside the n x m
 * scores. `top` is the query's lse_shift(lse), `row` its Dsum. */
static __device__ __forceinline__ void score_gradients(float &s, float &dp, float top, float row,
                                                       int64_t query, int64_t key, int64_t n,
                                                       int64_t m, int causal, float scale)
{
    float p = query < n && key < m ? __expf(masked_score(s, scale, query, key, causal) - top)
                                   : 0.0f;
    s = p;
    dp = p * (dp - row);
}

/* Block (h, key tile): dk and dv of TILE keys, every query tile that sees them streamed past.
 * Thread (ty, tx): keys ROWS ty .. + ROWS - 1 of the tile by queries tx + 16 j of S^T and dP^T. */
template <int CB>
__global__ void __launch_bounds__(gradient_threads<CB>(), CB == 1 ? 2 : 1)
key_gradients_kernel(const float *dy, const float *q, const float *k, const float *v,
                     const float *lse, const float *dsum, const int *nonfinite, float *dk,
                     float *dv, int64_t heads, int64_t n, int64_t m, int d, int causal,
                     float scale)
{
    wait_for_previous_kernel();
    const int ROWS = gradient_rows<CB>(), THREADS = gradient_threads<CB>();
    const int width = padded_row<CB>(), p_width = TILE + PAD;
    extern __shared__ __align__(16) float shared[];
    float *k_rows = shared;                      /* [TILE keys][width] */
    float *v_rows = k_rows + TILE * width;       /* [TILE keys][width] */
    float *q_rows = v_rows + TILE * width;       /* [TILE queries][width] */
    float *dy_rows = q_rows + TILE * width;      /* [TILE queries][width] */
    float *p_rows = dy_rows + TILE * width;      /* P^T [TILE keys][TILE + PAD] */
    float *ds_rows = p_rows + TILE * p_width;    /* dS^T [TILE keys][TILE + PAD] */
    int64_t h, kt;
    head_and_tile(heads, tiles(m), causal, false, h, kt); /* the first key tiles see most queries */
    int64_t first_key = kt * TILE;
    const float *qh = q + h * n * d, *dyh = dy + h * n * d;
    const float *lse_h = lse + h * n, *dsum_h = dsum + h * n;
    copy_rows<CB, TILE, THREADS>(k_rows, k + h * m * d, first_key, m, d);
    copy_rows<CB, TILE, THREADS>(v_rows, v + h * m * d, first_key, m, d);
    const int depth = (d + 3) / 4 * 4;
    int ty = tile_ty(), tx = tile_tx();
    const float *my_k = k_rows + ROWS * ty * width, *my_v = v_rows + ROWS * ty * width;
    const float *my_p = p_rows + ROWS * ty * p_width, *my_ds = ds_rows + ROWS * ty * p_width;
    bool my_rows = first_key + ROWS * ty < m; /* keys past m skip the products */
    float dk_acc[ROWS][4 * CB], dv_acc[ROWS][4 * CB];
    zero(dk_acc);
    zero(dv_acc);
    /* queries before the first key see none of the tile (when skipping masked tiles) */
    int64_t first_tile = causal && !nonfinite[h] ? kt : 0;
    for (int64_t qt = first_tile; qt < tiles(n); qt++) {
        __syncthreads(); /* the last query tile, P^T and dS^T are read */
        copy_rows<CB, TILE, THREADS>(q_rows, qh, qt * TILE, n, d);
        copy_rows<CB, TILE, THREADS>(dy_rows, dyh, qt * TILE, n, d);
        __syncthreads();
        float s[ROWS][4], dp[ROWS][4];
        zero(s);
        zero(dp);
        if (my_rows) {
            rows_by_rows(s, my_k, q_rows + tx * width, width, depth);
            rows_by_rows(dp, my_v, dy_rows + tx * width, width, depth);
        }
#pragma unroll
        for (int j = 0; j < 4; j++) {
            int64_t query = qt * TILE + tx + 16 * j;
            float top = query < n ? lse_shift(lse_h[query]) : 0.0f;
            float row = query < n ? dsum_h[query] : 0.0f;
#pragma unroll
            for (int i = 0; i < ROWS; i++)
                score_gradients(s[i][j], dp[i][j], top, row, query, first_key + ROWS * ty + i, n,
                                m, causal, scale);
        }
        store_spread(p_rows, s);
        store_spread(ds_rows, dp);
        __syncthreads();
        if (my_rows) {
            int queries = rows_present(qt * TILE, n);
            rows_by_columns<ROWS, CB>(dv_acc, my_p, p_width, dy_rows + 4 * tx, width, queries);
            rows_by_columns<ROWS, CB>(dk_acc, my_ds, p_width, q_rows + 4 * tx, width, queries);
        }
    }
    float scaled[ROWS], unscaled[ROWS];
#pragma unroll
    for (int i = 0; i < ROWS; i++)
        scaled[i] = scale, unscaled[i] = 1.0f;
    store_tile_rows<ROWS, CB>(dk_acc, scaled, dk + h * m * d, first_key, m, d);
    store_tile_rows<ROWS, CB>(dv_acc, unscaled, dv + h * m * d, first_key, m, d);
}

/* Block (h, query tile): dq of TILE queries, every key tile they see streamed past.
 * Thread (ty, tx): queries ROWS ty .. + ROWS - 1 of the tile by keys tx + 16 j of S and dP. */
template <int CB>
__global__ void __launch_bounds__(gradient_threads<CB>(), CB == 1 ? 2 : 1)
query_gradients_kernel(const float *dy, const float *q, const float *k, const float *v,
                       const float *lse, const float *dsum, const int *nonfinite, float *dq,
                       int64_t heads, int64_t n, int64_t m, int d, int causal, float scale)
{
    wait_for_previous_kernel();
    const int ROWS = gradient_rows<CB>(), THREADS = gradient_threads<CB>();
    const int width = padded_row<CB>(), p_width = TILE + PAD;
    extern __shared__ __align__(16) float shared[];
    float *q_rows = shared;                      /* [TILE queries][width] */
    float *dy_rows = q_rows + TILE * width;      /* [TILE queries][width] */
    float *k_rows = dy_rows + TILE * width;      /* [TILE keys][width] */
    float *v_rows = k_rows + TILE * width;       /* [TILE keys][width] */
    float *ds_rows = v_rows + TILE * width;      /* dS [TILE queries][TILE + PAD] */
    int64_t h, qt;
    head_and_tile(heads, tiles(n), causal, true, h, qt); /* the last query tiles see most keys */
    int64_t first = qt * TILE;
    const float *kh = k + h * m * d, *vh = v + h * m * d;
    copy_rows<CB, TILE, THREADS>(q_rows, q + h * n * d, first, n, d);
    copy_rows<CB, TILE, THREADS>(dy_rows, dy + h * n * d, first, n, d);
    const int depth = (d + 3) / 4 * 4;
    int ty = tile_ty(), tx = tile_tx();
    const float *my_q = q_rows + ROWS * ty * width, *my_dy = dy_rows + ROWS * ty * width;
    const float *my_ds = ds_rows + ROWS * ty * p_width;
    float top[ROWS], row[ROWS];
#pragma unroll
    for (int i = 0; i < ROWS; i++) {
        int64_t query = first + ROWS * ty + i;
        top[i] = query < n ? lse_shift(lse[h * n + query]) : 0.0f;
        row[i] = query < n ? dsum[h * n + query] : 0.0f;
    }
    bool my_rows = first + ROWS * ty < n; /* queries past n skip the products */
    float dq_acc[ROWS][4 * CB];
    zero(dq_acc);
    int64_t key_tiles = tiles(m);
    if (causal && !nonfinite[h]) /* keys past the last query's are masked for every row here */
        key_tiles = min(key_tiles, qt + 1);
    for (int64_t kt = 0; kt < key_tiles; kt++) {
        __syncthreads(); /* the last key tile and dS are read */
        copy_rows<CB, TILE, THREADS>(k_rows, kh, kt * TILE, m, d);
        copy_rows<CB, TILE, THREADS>(v_rows, vh, kt * TILE, m, d);
        __syncthreads();
        float s[ROWS][4], dp[ROWS][4];
        zero(s);
        zero(dp);
        if (my_rows) {
            rows_by_rows(s, my_q, k_rows + tx * width, width, depth);
            rows_by_rows(dp, my_dy, v_rows + tx * width, width, depth);
        }
#pragma unroll
        for (int i = 0; i < ROWS; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
                score_gradients(s[i][j], dp[i][j], top[i], row[i], first + ROWS * ty + i,
                                kt * TILE + tx + 16 * j, n, m, causal, scale);
        store_spread(ds_rows, dp);
        __syncthreads();
        if (my_rows)
            rows_by_columns<ROWS, CB>(dq_acc, my_ds, p_width, k_rows + 4 * tx, width,
                                      rows_present(kt * TILE, m));
    }
    float scaled[ROWS];
#pragma unroll
    for (int i = 0; i < ROWS; i++)
        scaled[i] = scale;
    store_tile_rows<ROWS, CB>(dq_acc, scaled, dq + h * n * d, first, n, d);
}

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
 * Cost model (per head: n queries, m keys, head dimension d; TILE = 64):
 *   memory Dsum, 4 n bytes: linear in n.
 *   bytes  each kernel reads its own tiles once and the other side's once per tile:
 *          about 16 n m d / TILE, written 4 (n + 2 m) d.
 *   FLOPs  S and dP twice (8 n m d) and dv, dk, dq once (6 n m d): 14 n m d (4 n m d forward).
 *
 * Run it: python -m bench.attention_ladder --rungs flash2 --backward */
#include "attention.cuh"

__global__ void dsum_kernel(const float *dy, const float *y, float *dsum, int64_t rows, int d);
template <int CB>
__global__ void key_gradients_kernel(const float *dy, const float *q, const float *k,
                                     const float *v, const float *lse, const float *dsum,
                                     const int *nonfinite, float *dk, float *dv, int64_t n,
                                     int64_t m, int d, int causal, float scale);
template <int CB>
__global__ void query_gradients_kernel(const float *dy, const float *q, const float *k,
                                       const float *v, const float *lse, const float *dsum,
                                       const int *nonfinite, float *dq, int64_t n, int64_t m,
                                       int d, int causal, float scale);

template <int CB>
constexpr size_t key_gradients_bytes()
{
    return sizeof(float) * (2 * rows_floats<CB>() + 2 * by_k_floats<CB>() + 2 * square_floats());
}
template <int CB>
constexpr size_t query_gradients_bytes()
{
    return sizeof(float) * (3 * rows_floats<CB>() + 2 * by_k_floats<CB>() + square_floats());
}

template <int CB>
static int launch_gradients(const float *dy, const float *q, const float *k, const float *v,
                            const float *lse, const float *dsum, const int *nonfinite, float *dq,
                            float *dk, float *dv, int64_t heads, int64_t n, int64_t m, int64_t d,
                            int causal, float scale)
{
    ALLOW_SHARED(key_gradients_kernel<CB>, key_gradients_bytes<CB>());
    launch_overlapped(key_gradients_kernel<CB>, heads * tiles(m), TILE_THREADS,
                      key_gradients_bytes<CB>(), dy, q, k, v, lse, dsum, nonfinite, dk, dv, n, m,
                      (int)d, causal, scale);
    LAUNCH_CHECK("key_gradients_kernel");
    ALLOW_SHARED(query_gradients_kernel<CB>, query_gradients_bytes<CB>());
    launch_overlapped(query_gradients_kernel<CB>, heads * tiles(n), TILE_THREADS,
                      query_gradients_bytes<CB>(), dy, q, k, v, lse, dsum, nonfinite, dq, n, m,
                      (int)d, causal, scale);
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

/* This thread's 4 x 4 corner of P and dS for queries first_query + 4 ty + i and keys
 * first_key + 4 tx + j, from its corners of q k^T (in s) and dy v^T (in dp): P = 0 outside the
 * n x m scores. */
static __device__ __forceinline__ void scores_to_gradients(float (&s)[4][4], float (&dp)[4][4],
                                                           const float *lse, const float *dsum,
                                                           int64_t first_query, int64_t first_key,
                                                           int64_t n, int64_t m, int causal,
                                                           float scale)
{
    int ty = tile_ty(), tx = tile_tx();
    for (int i = 0; i < 4; i++) {
        int64_t query = first_query + 4 * ty + i;
        float top = query < n ? lse_shift(lse[query]) : 0.0f;
        float row = query < n ? dsum[query] : 0.0f;
        for (int j = 0; j < 4; j++) {
            int64_t key = first_key + 4 * tx + j;
            float p = query < n && key < m
                          ? __expf(masked_score(s[i][j], scale, query, key, causal) - top)
                          : 0.0f;
            s[i][j] = p;
            dp[i][j] = p * (dp[i][j] - row);
        }
    }
}

/* Block (h, key tile): dk and dv of TILE keys, every query tile that sees them streamed past. */
template <int CB>
__global__ void __launch_bounds__(TILE_THREADS)
key_gradients_kernel(const float *dy, const float *q, const float *k, const float *v,
                     const float *lse, const float *dsum, const int *nonfinite, float *dk,
                     float *dv, int64_t n, int64_t m, int d, int causal, float scale)
{
    wait_for_previous_kernel();
    extern __shared__ __align__(16) float shared[];
    float *q_rows = shared;                      /* [TILE][64 CB + PAD] */
    float *dy_rows = q_rows + rows_floats<CB>(); /* [TILE][64 CB + PAD] */
    float *k_by_k = dy_rows + rows_floats<CB>(); /* [64 CB][TILE + PAD] */
    float *v_by_k = k_by_k + by_k_floats<CB>();  /* [64 CB][TILE + PAD] */
    float *p_rows = v_by_k + by_k_floats<CB>();  /* [TILE queries][TILE + PAD] */
    float *ds_rows = p_rows + square_floats();   /* [TILE queries][TILE + PAD] */
    int64_t key_tiles = tiles(m), h = blockIdx.x / key_tiles, kt = blockIdx.x % key_tiles;
    int64_t first_key = kt * TILE, lse_at = h * n;
    const float *qh = q + h * n * d, *dyh = dy + h * n * d;
    load_tile<CB>(k_by_k, k + h * m * d, first_key, m, d, true);
    load_tile<CB>(v_by_k, v + h * m * d, first_key, m, d, true);
    float dk_acc[4][4 * CB], dv_acc[4][4 * CB];
    zero(dk_acc);
    zero(dv_acc);
    /* queries before the first key see none of the tile (when skipping masked tiles) */
    int64_t first_tile = causal && !nonfinite[h] ? kt : 0;
    for (int64_t qt = first_tile; qt < tiles(n); qt++) {
        __syncthreads(); /* the last query tile, p and dS are read */
        load_tile<CB>(q_rows, qh, qt * TILE, n, d, false);
        load_tile<CB>(dy_rows, dyh, qt * TILE, n, d, false);
        __syncthreads();
        float s[4][4], dp[4][4];
        zero(s);
        zero(dp);
        tile_product<1, true>(s, q_rows, 64 * CB + PAD, k_by_k, TILE + PAD, d);
        tile_product<1, true>(dp, dy_rows, 64 * CB + PAD, v_by_k, TILE + PAD, d);
        scores_to_gradients(s, dp, lse + lse_at, dsum + lse_at, qt * TILE, first_key, n, m,
                            causal, scale);
        store_corner(p_rows, s, false);
        store_corner(ds_rows, dp, false);
        __syncthreads();
        tile_product<CB, false>(dv_acc, p_rows, TILE + PAD, dy_rows, 64 * CB + PAD, TILE);
        tile_product<CB, false>(dk_acc, ds_rows, TILE + PAD, q_rows, 64 * CB + PAD, TILE);
    }
    const float scaled[4] = {scale, scale, scale, scale};
    const float unscaled[4] = {1.0f, 1.0f, 1.0f, 1.0f};
    store_rows<CB>(dk_acc, scaled, dk + h * m * d, first_key, m, d);
    store_rows<CB>(dv_acc, unscaled, dv + h * m * d, first_key, m, d);
}

/* Block (h, query tile): dq of TILE queries, every key tile they see streamed past. */
template <int CB>
__global__ void __launch_bounds__(TILE_THREADS)
query_gradients_kernel(const float *dy, const float *q, const float *k, const float *v,
                       const float *lse, const float *dsum, const int *nonfinite, float *dq,
                       int64_t n, int64_t m, int d, int causal, float scale)
{
    wait_for_previous_kernel();
    extern __shared__ __align__(16) float shared[];
    float *q_rows = shared;                      /* [TILE][64 CB + PAD] */
    float *dy_rows = q_rows + rows_floats<CB>(); /* [TILE][64 CB + PAD] */
    float *k_rows = dy_rows + rows_floats<CB>(); /* [TILE][64 CB + PAD] */
    float *k_by_k = k_rows + rows_floats<CB>();  /* [64 CB][TILE + PAD] */
    float *v_by_k = k_by_k + by_k_floats<CB>();  /* [64 CB][TILE + PAD] */
    float *ds_rows = v_by_k + by_k_floats<CB>(); /* [TILE queries][TILE + PAD] */
    int64_t query_tiles = tiles(n), h = blockIdx.x / query_tiles;
    int64_t qt = query_tiles - 1 - blockIdx.x % query_tiles; /* the longest causal rows first */
    const float *kh = k + h * m * d, *vh = v + h * m * d;
    load_tile<CB>(q_rows, q + h * n * d, qt * TILE, n, d, false);
    load_tile<CB>(dy_rows, dy + h * n * d, qt * TILE, n, d, false);
    float dq_acc[4][4 * CB];
    zero(dq_acc);
    int64_t key_tiles = tiles(m);
    if (causal && !nonfinite[h]) /* keys past the last query's are masked for every row here */
        key_tiles = min(key_tiles, qt + 1);
    for (int64_t kt = 0; kt < key_tiles; kt++) {
        __syncthreads(); /* the last key tile and dS are read */
        load_tile<CB>(k_rows, kh, kt * TILE, m, d, false);
        load_tile<CB>(k_by_k, kh, kt * TILE, m, d, true);
        load_tile<CB>(v_by_k, vh, kt * TILE, m, d, true);
        __syncthreads();
        float s[4][4], dp[4][4];
        zero(s);
        zero(dp);
        tile_product<1, true>(s, q_rows, 64 * CB + PAD, k_by_k, TILE + PAD, d);
        tile_product<1, true>(dp, dy_rows, 64 * CB + PAD, v_by_k, TILE + PAD, d);
        scores_to_gradients(s, dp, lse + h * n, dsum + h * n, qt * TILE, kt * TILE, n, m, causal,
                            scale);
        store_corner(ds_rows, dp, false);
        __syncthreads();
        tile_product<CB, true>(dq_acc, ds_rows, TILE + PAD, k_rows, 64 * CB + PAD, TILE);
    }
    const float scaled[4] = {scale, scale, scale, scale};
    store_rows<CB>(dq_acc, scaled, dq + h * n * d, qt * TILE, n, d);
}

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
 * first over every head (the short diagonal blocks fill the tail of the grid); a full one keeps a
 * head's query tiles together (they share its k and v in L2).
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
#include <stdint.h>

#include "attention.cuh"

#define QUERY_TILE 128 /* queries a block: 16 rows of threads x 8 rows each */
#define THREAD_ROWS 8

/* A row of a q, k or v tile in shared memory: 64 CB floats and PAD; a row of P: TILE + PAD. */
template <int CB>
__host__ __device__ constexpr int padded_row() { return 64 * CB + PAD; }
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
    if (d > ATTENTION_MAX_D)
        return S2C_CUDA_BAD_ARGUMENT;
    int *nonfinite = (int *)scratch;
    if (causal) {
        int status = attention_nonfinite_flags({{q, k, v}, {n * d, m * d, m * d}, 3}, heads,
                                               nonfinite);
        if (status != S2C_CUDA_OK)
            return status;
    }
    if (d == 64)
        return launch_flash2_regs<1, true>(q, k, v, y, lse, nonfinite, heads, n, m, d, causal,
                                           scale);
    if (d < 64)
        return launch_flash2_regs<1, false>(q, k, v, y, lse, nonfinite, heads, n, m, d, causal,
                                            scale);
    return launch_flash2_regs<2, false>(q, k, v, y, lse, nonfinite, heads, n, m, d, causal, scale);
}

/* Whether rows of x [*, d] can be read and written a float4 at a time (16-byte aligned). */
static __device__ __forceinline__ bool by_float4(const float *x, int d)
{
    return d % 4 == 0 && (uintptr_t)x % 16 == 0;
}

/* The float4s of a tile of ROWS rows (64 CB + PAD floats each) that each thread copies. */
template <int CB, int ROWS>
__host__ __device__ constexpr int quads_a_thread() { return ROWS * 16 * CB / TILE_THREADS; }

/* This thread's float4s of rows first .. first + ROWS - 1 of x [total, d] into `part`: every load
 * issued before any is waited on (store_part writes them). Rows past `total` and columns past d
 * are 0 (they add nothing to a product). */
template <int CB, int ROWS>
static __device__ __forceinline__ void fetch_part(float4 (&part)[quads_a_thread<CB, ROWS>()],
                                                  const float *x, int64_t first, int64_t total,
                                                  int d)
{
    const int quads = 16 * CB; /* float4s a row */
    bool quad_reads = by_float4(x, d);
#pragma unroll
    for (int p = 0; p < quads_a_thread<CB, ROWS>(); p++) {
        int e = threadIdx.x + p * TILE_THREADS, r = e / quads, c = 4 * (e % quads);
        float4 value = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (first + r < total) {
            const float *row = x + (first + r) * d;
            if (quad_reads) {
                if (c < d)
                    value = *(const float4 *)(row + c);
            } else {
                value.x = c < d ? row[c] : 0.0f;
                value.y = c + 1 < d ? row[c + 1] : 0.0f;
                value.z = c + 2 < d ? row[c + 2] : 0.0f;
                value.w = c + 3 < d ? row[c + 3] : 0.0f;
            }
        }
        part[p] = value;
    }
}

/* What fetch_part read into `tile` [ROWS][64 CB + PAD]. */
template <int CB, int ROWS>
static __device__ __forceinline__ void store_part(float *tile,
                                                  const float4 (&part)[quads_a_thread<CB, ROWS>()])
{
    const int quads = 16 * CB;
#pragma unroll
    for (int p = 0; p < quads_a_thread<CB, ROWS>(); p++) {
        int e = threadIdx.x + p * TILE_THREADS;
        *(float4 *)(tile + e / quads * padded_row<CB>() + 4 * (e % quads)) = part[p];
    }
}

static __device__ __forceinline__ float dot4(float4 a, float4 b, float acc)
{
    return fmaf(a.w, b.w, fmaf(a.z, b.z, fmaf(a.y, b.y, fmaf(a.x, b.x, acc))));
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
    {
        float4 part[quads_a_thread<CB, QUERY_TILE>()];
        fetch_part<CB, QUERY_TILE>(part, qh, first, n, d);
        store_part<CB, QUERY_TILE>(q_rows, part);
    }
    const float *my_q = q_rows + THREAD_ROWS * ty * width, *my_k = k_rows + tx * width;
    const float *my_p = p_rows + THREAD_ROWS * ty * p_width, *my_v = v_rows + 4 * tx;
    for (int64_t kt = 0; kt < key_tiles; kt++) {
        __syncthreads(); /* the last tile's k, v and p are read */
        float4 k_part[quads_a_thread<CB, TILE>()], v_part[quads_a_thread<CB, TILE>()];
        fetch_part<CB, TILE>(k_part, kh, kt * TILE, m, d);
        store_part<CB, TILE>(k_rows, k_part);
        fetch_part<CB, TILE>(v_part, vh, kt * TILE, m, d);
        store_part<CB, TILE>(v_rows, v_part);
        __syncthreads();
        float s[THREAD_ROWS][4];
        zero(s);
#pragma unroll 1 /* 12 float4 loads and 128 multiply-adds a step: unrolled, it spills */
        for (int c = 0; c < depth; c += 4) {
            float4 key[4];
#pragma unroll
            for (int j = 0; j < 4; j++)
                key[j] = *(const float4 *)(my_k + 16 * j * width + c);
#pragma unroll
            for (int i = 0; i < THREAD_ROWS; i++) {
                float4 query = *(const float4 *)(my_q + i * width + c);
#pragma unroll
                for (int j = 0; j < 4; j++)
                    s[i][j] = dot4(query, key[j], s[i][j]);
            }
        }
#pragma unroll
        for (int i = 0; i < THREAD_ROWS; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) {
                int64_t key = kt * TILE + tx + 16 * j;
                s[i][j] = key < m ? masked_score(s[i][j], scale, first + THREAD_ROWS * ty + i,
                                                 key, causal)
                                  : -INFINITY;
            }
        online_softmax_tile<THREAD_ROWS, true>(s, row_max, row_sum, alpha);
#pragma unroll
        for (int i = 0; i < THREAD_ROWS; i++) {
#pragma unroll
            for (int c = 0; c < 4 * CB; c++)
                out[i][c] *= alpha[i];
            /* an odd row of threads writes its keys in the order 1 0 3 2: the two half warps
             * (rows 8 apart, the same banks) then store to distinct banks at once */
#pragma unroll
            for (int j = 0; j < 4; j++)
                p_rows[(THREAD_ROWS * ty + i) * p_width + tx + 16 * (j ^ (ty & 1))] =
                    ty & 1 ? s[i][j ^ 1] : s[i][j];
        }
        __syncthreads();
#pragma unroll 1
        for (int key = 0; key < TILE; key += 4) {
            float4 value[4][CB];
#pragma unroll
            for (int t = 0; t < 4; t++)
#pragma unroll
                for (int g = 0; g < CB; g++)
                    value[t][g] = *(const float4 *)(my_v + (key + t) * width + 64 * g);
#pragma unroll
            for (int i = 0; i < THREAD_ROWS; i++) {
                float4 p = *(const float4 *)(my_p + i * p_width + key);
#pragma unroll
                for (int g = 0; g < CB; g++) {
                    out[i][4 * g + 0] = dot4(p, make_float4(value[0][g].x, value[1][g].x,
                                                            value[2][g].x, value[3][g].x),
                                             out[i][4 * g + 0]);
                    out[i][4 * g + 1] = dot4(p, make_float4(value[0][g].y, value[1][g].y,
                                                            value[2][g].y, value[3][g].y),
                                             out[i][4 * g + 1]);
                    out[i][4 * g + 2] = dot4(p, make_float4(value[0][g].z, value[1][g].z,
                                                            value[2][g].z, value[3][g].z),
                                             out[i][4 * g + 2]);
                    out[i][4 * g + 3] = dot4(p, make_float4(value[0][g].w, value[1][g].w,
                                                            value[2][g].w, value[3][g].w),
                                             out[i][4 * g + 3]);
                }
            }
        }
    }
    float *yh = y + h * n * d;
    bool quad_writes = by_float4(y, d);
    for (int i = 0; i < THREAD_ROWS; i++) {
        int64_t row = first + THREAD_ROWS * ty + i;
        float sum = row_sum16(row_sum[i]); /* the row's 16 shares (online_softmax_tile) */
        if (row >= n)
            continue;
        float inverse = inverse_sum(sum);
        if (tx == 0)
            lse[h * n + row] = row_max[i] + logf(sum);
        for (int g = 0; g < CB; g++) {
            int col = 4 * tx + 64 * g;
            float *to = yh + row * d + col;
            if (quad_writes) {
                if (col < d)
                    *(float4 *)to = make_float4(inverse * out[i][4 * g], inverse * out[i][4 * g + 1],
                                                inverse * out[i][4 * g + 2],
                                                inverse * out[i][4 * g + 3]);
            } else {
                for (int c = 0; c < 4 && col + c < d; c++)
                    to[c] = inverse * out[i][4 * g + c];
            }
        }
    }
}

/* attention.cuh -- what the rungs of the attention ladder share (csrc/attention/README.md).
 *
 * Every rung computes scaled dot-product attention, for each of `heads` (batch x heads) slices:
 *     S = scale * q @ k^T  [n, m],   P = softmax(S) over each row,   y = P @ v  [n, d],
 *     lse = log(sum over the row of exp(S))  [n]  (FlashAttention's L: the backward's input),
 * with q [heads, n, d], k and v [heads, m, d] row-major float32, d <= 128. `causal` masks key j
 * for query i when j > i (top-left aligned). A masked score is S + (-inf), as PyTorch's math
 * backend adds its mask: -inf, or NaN where S is NaN or +inf, so that a NaN or an infinity
 * anywhere spreads as it does there. Every rung exports the same launcher:
 *
 *     extern "C" int s2c_cuda_attention_<name>(const float *q, const float *k, const float *v,
 *         float *y, float *lse, float *scratch, int64_t heads, int64_t n, int64_t m, int64_t d,
 *         int causal, float scale);
 *
 * scratch: attention_scratch_floats(rung, ...) floats (S for rungs 1 and 2, the running
 * statistics for rung 3, a flag per head for the causal rungs 3 to 5).
 *
 * Given here: the tiles of rungs 3 and 4 (TILE x TILE scores, a block of TILE_THREADS threads each
 * owning a 4 x 4 corner of them) and the product of two such tiles; the register tiles of rung 5
 * and the backward (tiles stored by row, each thread ROWS rows x 4 of a product); the scan for
 * non-finite inputs that lets a causal rung skip masked tiles. */
#ifndef S2C_ATTENTION_CUH
#define S2C_ATTENTION_CUH

#include <stdint.h>

#include "../reduce.cuh"

#define ATTENTION_MAX_D 128 /* the head dimension the tiles hold (two column groups of 64) */
#define SCORE_ROW_THREADS 256 /* rungs 1 and 2: a block per row of S */
#define TILE 64              /* rungs 3 to 5 and the backward: 64 keys (or queries) a tile */
#define TILE_THREADS 256     /* 16 x 16 threads, each 4 rows x 4 columns of a tile */
#define PAD 4                /* a row of a tile in shared memory is 4 floats longer (banks) */

/* The score of query i and key j (dot = q_i . k_j): scaled, and masked as PyTorch masks. */
static __device__ __forceinline__ float masked_score(float dot, float scale, int64_t i, int64_t j,
                                                     int causal)
{
    float s = dot * scale;
    return causal && j > i ? s + -INFINITY : s;
}

/* What exp(S - lse) subtracts: lse, or +inf for a row whose every score is -inf (lse -inf), so
 * that its P is exp(-inf) = 0 (PyTorch's safe softmax) where -inf - -inf would be NaN. */
static __device__ __forceinline__ float lse_shift(float lse)
{
    return lse == -INFINITY ? INFINITY : lse;
}

/* 1 / sum for the outputs of a row, 0 for a row whose every score is -inf (sum 0): its P is 0,
 * so its y is 0 (or NaN where v is not finite, 0 x inf), never 0 / 0. */
static __device__ __forceinline__ float inverse_sum(float sum)
{
    return sum == 0.0f ? 0.0f : 1.0f / sum;
}

/* --- rungs 1 and 2 ----------------------------------------------------------------------------- */

/* S = masked scale q k^T into s [heads, n, m] (01_naive.cu; rung 2 calls it too). */
int attention_scores(const float *q, const float *k, float *s, int64_t heads, int64_t n,
                     int64_t m, int64_t d, int causal, float scale);

/* --- rungs 3 and 4: tiles in shared memory ------------------------------------------------------ */

/* Thread t of a tile block owns rows 4 ty .. 4 ty + 3 and columns 4 tx + 64 b .. + 3 of a tile
 * product (ty = t / 16, tx = t % 16): a row's 16 threads are half a warp, whose shuffles reduce
 * over the row. */
static __device__ __forceinline__ int tile_ty(void) { return threadIdx.x / 16; }
static __device__ __forceinline__ int tile_tx(void) { return threadIdx.x % 16; }

/* acc[i][4 b + j] += sum over k < depth of A(k, 4 ty + i) * B(k, 4 tx + 64 b + j): this thread's
 * corner of a product of two tiles in shared memory, both stored by k ([k][row], row length lda;
 * [k][column], ldb): a float4 of 4 rows and CB float4s of 4 columns a step, 16 CB fused
 * multiply-adds for 1 + CB loads. */
template <int CB>
static __device__ __forceinline__ void tile_product(float (&acc)[4][4 * CB], const float *a,
                                                    int lda, const float *b, int ldb, int depth)
{
    int ty = tile_ty(), tx = tile_tx();
#pragma unroll 4
    for (int k = 0; k < depth; k++) {
        float4 quad = *(const float4 *)(a + k * lda + 4 * ty);
        float left[4] = {quad.x, quad.y, quad.z, quad.w};
#pragma unroll
        for (int g = 0; g < CB; g++) {
            float4 right = *(const float4 *)(b + k * ldb + 4 * tx + 64 * g);
#pragma unroll
            for (int i = 0; i < 4; i++) {
                acc[i][4 * g + 0] += left[i] * right.x;
                acc[i][4 * g + 1] += left[i] * right.y;
                acc[i][4 * g + 2] += left[i] * right.z;
                acc[i][4 * g + 3] += left[i] * right.w;
            }
        }
    }
}

template <int R, int C>
static __device__ __forceinline__ void zero(float (&acc)[R][C])
{
#pragma unroll
    for (int i = 0; i < R; i++)
#pragma unroll
        for (int j = 0; j < C; j++)
            acc[i][j] = 0.0f;
}

/* Rows first .. first + TILE - 1 of x [total, d] into `tile`, by row ([TILE][width + PAD]) or,
 * when `by_k`, transposed ([width][TILE + PAD]); rows past `total` and columns past d as 0 (they
 * add nothing to a product). width = 64 CB >= d. Every thread of the block takes part. */
template <int CB>
static __device__ __forceinline__ void load_tile(float *tile, const float *x, int64_t first,
                                                 int64_t total, int d, bool by_k)
{
    const int width = 64 * CB;
    for (int e = threadIdx.x; e < TILE * width; e += blockDim.x) {
        int r = e / width, c = e % width;
        float value = first + r < total && c < d ? x[(first + r) * d + c] : 0.0f;
        if (by_k)
            tile[c * (TILE + PAD) + r] = value;
        else
            tile[r * (width + PAD) + c] = value;
    }
}

/* This thread's 4 x 4 corner p of a square tile (rows 4 ty + i, columns 4 tx + j) into `tile`
 * by column ([column][TILE + PAD]: the 4 rows of a column are one float4 store) or by row. */
static __device__ __forceinline__ void store_corner(float *tile, const float (&p)[4][4],
                                                    bool by_column)
{
    int ty = tile_ty(), tx = tile_tx();
#pragma unroll
    for (int j = 0; j < 4; j++) {
        if (by_column)
            *(float4 *)(tile + (4 * tx + j) * (TILE + PAD) + 4 * ty) =
                make_float4(p[0][j], p[1][j], p[2][j], p[3][j]);
        else
            *(float4 *)(tile + (4 * ty + j) * (TILE + PAD) + 4 * tx) =
                make_float4(p[j][0], p[j][1], p[j][2], p[j][3]);
    }
}

/* The maximum and the sum of `value` over a tile row's 16 threads (half a warp), for each. */
static __device__ __forceinline__ float row_max16(float value)
{
    for (int offset = 8; offset > 0; offset /= 2)
        value = nan_max(value, __shfl_xor_sync(FULL_WARP, value, offset));
    return value;
}
static __device__ __forceinline__ float row_sum16(float value)
{
    for (int offset = 8; offset > 0; offset /= 2)
        value += __shfl_xor_sync(FULL_WARP, value, offset);
    return value;
}

/* The online softmax of rungs 3 to 5 over one tile of scores: s[i][j] (this thread's R x 4,
 * masked; the row's others are with the 15 other threads of its half warp) becomes
 * p = exp(s - new max) and each row's running {max, sum} takes the tile in; returns in alpha[i]
 * the factor exp(old max - new max) by which what was accumulated against the old maximum is
 * rescaled. A row that has seen only -inf keeps max -inf and sum 0 (alpha 1, p 0:
 * never exp(-inf - -inf)). With LANE_SUMS, sum[i] is this thread's share of the row's sum (the
 * caller adds the 16 shares once, after the last tile: row_sum16), not the whole row's. */
template <int R, bool LANE_SUMS = false>
static __device__ __forceinline__ void online_softmax_tile(float (&s)[R][4], float (&max)[R],
                                                           float (&sum)[R], float (&alpha)[R])
{
#pragma unroll
    for (int i = 0; i < R; i++) {
        float top = row_max16(nan_max(nan_max(s[i][0], s[i][1]), nan_max(s[i][2], s[i][3])));
        float new_max = nan_max(max[i], top);
        bool empty = new_max == -INFINITY;
        alpha[i] = empty ? 1.0f : __expf(max[i] - new_max);
        float row = 0.0f;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            s[i][j] = empty ? 0.0f : __expf(s[i][j] - new_max);
            row += s[i][j];
        }
        sum[i] = sum[i] * alpha[i] + (LANE_SUMS ? row : row_sum16(row));
        max[i] = new_max;
    }
}

/* Shared memory of a tile by row (width 64 CB + PAD floats a row) and by k (TILE + PAD). */
template <int CB>
__host__ __device__ constexpr int rows_floats() { return TILE * (64 * CB + PAD); }
template <int CB>
__host__ __device__ constexpr int by_k_floats() { return 64 * CB * (TILE + PAD); }
__host__ __device__ constexpr int square_floats() { return TILE * (TILE + PAD); }

/* --- rung 5 and the backward: register tiles over tiles stored by row ---------------------------- */

/* A row of a q, k, v or dy tile in shared memory: 64 CB floats and PAD (a row of P: TILE + PAD). */
template <int CB>
__host__ __device__ constexpr int padded_row() { return 64 * CB + PAD; }

/* Whether rows of x [*, d] can be read and written a float4 at a time (16-byte aligned). */
static __device__ __forceinline__ bool by_float4(const float *x, int64_t d)
{
    return d % 4 == 0 && (uintptr_t)x % 16 == 0;
}

/* The float4s of a tile of ROWS rows (64 CB + PAD floats each) that each of THREADS copies. */
template <int CB, int ROWS, int THREADS>
__host__ __device__ constexpr int quads_a_thread() { return ROWS * 16 * CB / THREADS; }

/* This thread's float4s of rows first .. first + ROWS - 1 of x [total, d] into `part`: every load
 * issued before any is waited on (store_part writes them). Rows past `total` and columns past d
 * are 0 (they add nothing to a product). */
template <int CB, int ROWS, int THREADS>
static __device__ __forceinline__ void fetch_part(
    float4 (&part)[quads_a_thread<CB, ROWS, THREADS>()], const float *x, int64_t first,
    int64_t total, int d)
{
    const int quads = 16 * CB; /* float4s a row */
    bool quad_reads = by_float4(x, d);
#pragma unroll
    for (int p = 0; p < quads_a_thread<CB, ROWS, THREADS>(); p++) {
        int e = threadIdx.x + p * THREADS, r = e / quads, c = 4 * (e % quads);
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
template <int CB, int ROWS, int THREADS>
static __device__ __forceinline__ void store_part(
    float *tile, const float4 (&part)[quads_a_thread<CB, ROWS, THREADS>()])
{
    const int quads = 16 * CB;
#pragma unroll
    for (int p = 0; p < quads_a_thread<CB, ROWS, THREADS>(); p++) {
        int e = threadIdx.x + p * THREADS;
        *(float4 *)(tile + e / quads * padded_row<CB>() + 4 * (e % quads)) = part[p];
    }
}

/* Rows first .. first + ROWS - 1 of x [total, d] into `tile` by row, copied by THREADS threads. */
template <int CB, int ROWS, int THREADS>
static __device__ __forceinline__ void copy_rows(float *tile, const float *x, int64_t first,
                                                 int64_t total, int d)
{
    float4 part[quads_a_thread<CB, ROWS, THREADS>()];
    fetch_part<CB, ROWS, THREADS>(part, x, first, total, d);
    store_part<CB, ROWS, THREADS>(tile, part);
}

static __device__ __forceinline__ float dot4(float4 a, float4 b, float acc)
{
    return fmaf(a.w, b.w, fmaf(a.z, b.z, fmaf(a.y, b.y, fmaf(a.x, b.x, acc))));
}

/* acc[i][j] += sum over c < depth of mine[i width + c] * theirs[16 j width + c]: this thread's
 * ROWS x 4 corner of A B^T, A and B tiles stored by row (width floats a row), `mine` A's first
 * row of the thread's, `theirs` B's (its rows tx, tx + 16, tx + 32, tx + 48: a half warp's float4s
 * of B in distinct banks). Per 4 steps of the depth: ROWS + 4 float4 loads (a row of A the same
 * address for a half warp: a broadcast) for 16 ROWS fused multiply-adds. depth: a multiple of 4. */
template <int ROWS>
static __device__ __forceinline__ void rows_by_rows(float (&acc)[ROWS][4], const float *mine,
                                                    const float *theirs, int width, int depth)
{
#pragma unroll 1 /* unrolled, the loads of several steps spill */
    for (int c = 0; c < depth; c += 4) {
        float4 other[4];
#pragma unroll
        for (int j = 0; j < 4; j++)
            other[j] = *(const float4 *)(theirs + 16 * j * width + c);
#pragma unroll
        for (int i = 0; i < ROWS; i++) {
            float4 row = *(const float4 *)(mine + i * width + c);
#pragma unroll
            for (int j = 0; j < 4; j++)
                acc[i][j] = dot4(row, other[j], acc[i][j]);
        }
    }
}

/* acc[i][4 g + c] += sum over k < depth of weights[i p_width + k] * columns[k width + 64 g + c]:
 * this thread's ROWS x 4 CB corner of W X, W (e.g. P) stored by row (p_width floats a row;
 * `weights` the thread's first row), X by row (width floats; `columns` its column 4 tx). Per 4
 * steps of the depth: ROWS + 4 CB float4 loads for 16 ROWS CB fused multiply-adds. */
template <int ROWS, int CB>
static __device__ __forceinline__ void rows_by_columns(float (&acc)[ROWS][4 * CB],
                                                       const float *weights, int p_width,
                                                       const float *columns, int width, int depth)
{
#pragma unroll 1
    for (int k = 0; k < depth; k += 4) {
        float4 x[4][CB];
#pragma unroll
        for (int t = 0; t < 4; t++)
#pragma unroll
            for (int g = 0; g < CB; g++)
                x[t][g] = *(const float4 *)(columns + (k + t) * width + 64 * g);
#pragma unroll
        for (int i = 0; i < ROWS; i++) {
            float4 w = *(const float4 *)(weights + i * p_width + k);
#pragma unroll
            for (int g = 0; g < CB; g++) {
                acc[i][4 * g + 0] = dot4(w, make_float4(x[0][g].x, x[1][g].x, x[2][g].x, x[3][g].x),
                                         acc[i][4 * g + 0]);
                acc[i][4 * g + 1] = dot4(w, make_float4(x[0][g].y, x[1][g].y, x[2][g].y, x[3][g].y),
                                         acc[i][4 * g + 1]);
                acc[i][4 * g + 2] = dot4(w, make_float4(x[0][g].z, x[1][g].z, x[2][g].z, x[3][g].z),
                                         acc[i][4 * g + 2]);
                acc[i][4 * g + 3] = dot4(w, make_float4(x[0][g].w, x[1][g].w, x[2][g].w, x[3][g].w),
                                         acc[i][4 * g + 3]);
            }
        }
    }
}

/* The depth over which a product reads the rows first .. first + TILE - 1 of `total`: those
 * present, rounded up to 4 (the tiles' rows past `total` are zero). A short sequence (a vision
 * transformer's 16 patches) then multiplies over its rows, not over a whole tile of them. */
static __device__ __forceinline__ int rows_present(int64_t first, int64_t total)
{
    int64_t present = total - first < TILE ? total - first : TILE;
    return (int)(present + 3) / 4 * 4;
}

/* This thread's ROWS x 4 corner s (rows ROWS ty + i, columns tx + 16 j) into `tile`
 * [rows][TILE + PAD]. When the two half warps' rows (ROWS apart) fall in the same banks, an odd
 * row of threads writes its columns in the order 1 0 3 2, so that they store to distinct banks. */
template <int ROWS>
static __device__ __forceinline__ void store_spread(float *tile, const float (&s)[ROWS][4])
{
    const bool same_banks = ROWS * (TILE + PAD) % 32 == 0;
    int ty = tile_ty(), tx = tile_tx();
    bool swap = same_banks && ty & 1;
#pragma unroll
    for (int i = 0; i < ROWS; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) /* s indexed by constants only: it stays in registers */
            tile[(ROWS * ty + i) * (TILE + PAD) + tx + 16 * (swap ? j ^ 1 : j)] =
                swap ? s[i][j ^ 1] : s[i][j];
}

/* This thread's rows of a ROWS x 4 CB register tile, factor[i] acc[i] (row first + ROWS ty + i,
 * columns 4 tx + 64 g .. + 3), into x [total, d]: the rows and columns inside it only, a float4 at
 * a time where x allows. */
template <int ROWS, int CB>
static __device__ __forceinline__ void store_tile_rows(const float (&acc)[ROWS][4 * CB],
                                                       const float (&factor)[ROWS], float *x,
                                                       int64_t first, int64_t total, int d)
{
    int ty = tile_ty(), tx = tile_tx();
    bool quad_writes = by_float4(x, d);
#pragma unroll /* acc indexed by constants: it stays in registers */
    for (int i = 0; i < ROWS; i++) {
        int64_t row = first + ROWS * ty + i;
#pragma unroll
        for (int g = 0; g < CB; g++) {
            int col = 4 * tx + 64 * g;
            float *to = x + row * d + col;
            if (row >= total || col >= d)
                continue;
            if (quad_writes) {
                *(float4 *)to = make_float4(factor[i] * acc[i][4 * g], factor[i] * acc[i][4 * g + 1],
                                            factor[i] * acc[i][4 * g + 2],
                                            factor[i] * acc[i][4 * g + 3]);
            } else {
#pragma unroll
                for (int c = 0; c < 4; c++)
                    if (col + c < d)
                        to[c] = factor[i] * acc[i][4 * g + c];
            }
        }
    }
}

/* --- skipping masked tiles --------------------------------------------------------------------- */

/* Up to six arrays of `heads` slices each (slice h of array a: per_head[a] floats from
 * data[a] + h per_head[a]). */
struct HeadArrays {
    const float *data[6];
    int64_t per_head[6];
    int count;
};

/* flags[h] = 1 when a slice h of `arrays` holds a NaN or an infinity, else 0 (a block per head).
 * A causal rung skips the tiles where every key is masked, which is exact when every input is
 * finite (those entries are exp(-inf) = 0 times finite values); with a non-finite input PyTorch's
 * masked entries can be NaN (NaN + -inf, 0 x inf), so the rung computes every tile of that head. */
int attention_nonfinite_flags(HeadArrays arrays, int64_t heads, int *flags);

/* What a flash rung (3 to 5) checks before it launches: S2C_CUDA_BAD_ARGUMENT for d past
 * ATTENTION_MAX_D; with a causal mask, the flags of the heads whose q, k or v is not finite. */
int flash_rung_checks(const float *q, const float *k, const float *v, int64_t heads, int64_t n,
                      int64_t m, int64_t d, int causal, int *flags);

/* The number of tiles of TILE rows covering `count`. */
static inline __host__ __device__ int64_t tiles(int64_t count) { return ceil_div(count, TILE); }

/* Let a tile kernel use `bytes` of dynamic shared memory (above 48 KB it must ask). */
#define ALLOW_SHARED(kernel, bytes) CUDA_CHECK(allow_dynamic_shared(kernel, bytes))

#endif

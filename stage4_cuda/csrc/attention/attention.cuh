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
 * Given here: the tiles of rungs 3 and 4 and of the backward (TILE x TILE scores, a block of
 * TILE_THREADS threads each owning a 4 x 4 corner of them), the product of two tiles in shared
 * memory, and the scan for non-finite inputs that lets a causal rung skip masked tiles. */
#ifndef S2C_ATTENTION_CUH
#define S2C_ATTENTION_CUH

#include "../reduce.cuh"

#define ATTENTION_MAX_D 128 /* the head dimension the tiles hold (two column groups of 64) */
#define SCORE_ROW_THREADS 256 /* rungs 1 and 2: a block per row of S */
#define TILE 64              /* rungs 3 and 4, backward: 64 queries x 64 keys a tile */
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

/* --- rungs 3 and 4 and the backward: tiles in shared memory ------------------------------------ */

/* Thread t of a tile block owns rows 4 ty .. 4 ty + 3 and columns 4 tx + 64 b .. + 3 of a tile
 * product (ty = t / 16, tx = t % 16): a row's 16 threads are half a warp, whose shuffles reduce
 * over the row. */
static __device__ __forceinline__ int tile_ty(void) { return threadIdx.x / 16; }
static __device__ __forceinline__ int tile_tx(void) { return threadIdx.x % 16; }

/* acc[i][4 b + j] += sum over k < depth of A(k, 4 ty + i) * B(k, 4 tx + 64 b + j): this thread's
 * corner of a product of two tiles in shared memory. B is stored by k ([k][column], row length
 * ldb): a float4 of 4 columns a load. A is stored by k too ([k][row], a float4 of the 4 rows)
 * or, when A_BY_ROW, by row ([row][k], 4 loads, each the same address for half a warp: a
 * broadcast). Each k: 4 x 4 CB fused multiply-adds for 1 + CB (or 4 + CB) loads. */
template <int CB, bool A_BY_ROW>
static __device__ __forceinline__ void tile_product(float (&acc)[4][4 * CB], const float *a,
                                                    int lda, const float *b, int ldb, int depth)
{
    int ty = tile_ty(), tx = tile_tx();
#pragma unroll 4
    for (int k = 0; k < depth; k++) {
        float left[4];
        if (A_BY_ROW) {
#pragma unroll
            for (int i = 0; i < 4; i++)
                left[i] = a[(4 * ty + i) * lda + k];
        } else {
            float4 quad = *(const float4 *)(a + k * lda + 4 * ty);
            left[0] = quad.x, left[1] = quad.y, left[2] = quad.z, left[3] = quad.w;
        }
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

/* This thread's rows of a product, acc[i] (row first + 4 ty + i, columns 4 tx + 64 g + j) times
 * factor[i], into x [rows, d] (row-major): the rows and columns inside it only. */
template <int CB>
static __device__ __forceinline__ void store_rows(const float (&acc)[4][4 * CB],
                                                  const float (&factor)[4], float *x,
                                                  int64_t first, int64_t rows, int d)
{
    int ty = tile_ty(), tx = tile_tx();
    for (int i = 0; i < 4; i++) {
        int64_t row = first + 4 * ty + i;
        if (row >= rows)
            break;
        for (int g = 0; g < CB; g++)
            for (int j = 0; j < 4; j++) {
                int col = 4 * tx + 64 * g + j;
                if (col < d)
                    x[row * d + col] = factor[i] * acc[i][4 * g + j];
            }
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

/* The number of tiles of TILE rows covering `count`. */
static inline __host__ __device__ int64_t tiles(int64_t count) { return ceil_div(count, TILE); }

/* Let a tile kernel use `bytes` of dynamic shared memory (above 48 KB it must ask). */
#define ALLOW_SHARED(kernel, bytes) CUDA_CHECK(allow_dynamic_shared(kernel, bytes))

#endif

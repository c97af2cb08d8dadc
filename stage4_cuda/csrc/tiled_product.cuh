/* tiled_product.cuh -- the register-tiled product that matmul.cu's gemm (the dense layer), rungs 3
 * and 4 of the conv2d ladder and its backward share, its operands read through loaders instead of
 * from stored matrices.
 *
 *     out[z][row, col] = sum over k < depth of A[z](row, k) * B[z](k, col)
 *
 * A convolution is a product whose operands need not exist: the forward's B(k, col) is
 * x[n, c, oh*stride + r - padding, ...] for k = (c, r, s) and col = (n, oh, ow), an im2col entry
 * computed where it is loaded (implicit GEMM). So the kernel takes three small function objects:
 *
 *     load_a(z, row, k)        -> float, A's element (row < rows, k < depth)
 *     load_b.column(z, col)    -> a Column: what B's loads depend on through col only, computed
 *                                 once per thread (each thread loads from one column throughout)
 *     load_b(column, k)        -> float, B's element (k < depth)
 *     store(z, row, col, sum)  -> where the result goes (bias, layout: the caller's)
 *
 * The tiling is the SGEMM ladder's rung 5 with a prefetch and rung 6's shared-memory reads: a
 * block of 256 threads (16 x 16) owns a BM x BN tile of the output, each thread TM x TN = BM/16 x
 * BN/16 of it. Each step of depth 16 stores the registers loaded during the previous step into
 * shared memory (A's tile transposed), then loads the next step's elements into registers while
 * computing on the shared tiles: the loads' latency hides behind the arithmetic. Out-of-range
 * elements load as zero and out-of-range outputs are not stored, so any sizes work.
 *
 * A thread's rows come in runs of 4 when it has 4 or more (rows 4 ty .. 4 ty + 3, then 64 further
 * on: tile_row), so that one 16-byte shared load brings 4 of A's values; its columns are
 * tx + 16 j, so that neighbouring threads read and store neighbouring columns. At each depth a
 * thread with 8 x 8 outputs then makes 10 shared loads for 64 multiply-adds, not 16 (the
 * multiprocessor reads 128 bytes of shared memory a cycle and multiplies-adds 128 floats). B's
 * columns stay one apart: in runs of 4, a warp's stores would spread over twice the bytes.
 *
 * The z index of the grid is either a batch of independent products (Winograd's 16) or, with
 * split_depth > 0, a split of the depth: block z sums k in [z * split_depth, (z+1) * split_depth)
 * and the caller adds the partial sums in a fixed order (deterministic, without atomics). */
#ifndef S2C_TILED_PRODUCT_CUH
#define S2C_TILED_PRODUCT_CUH

#include <climits>

#include "common.h"

#define PRODUCT_THREADS 256
#define PRODUCT_DEPTH 16 /* depth of one step (BK) */
#define SPLIT_MINIMUM 64 /* the shortest piece of depth worth a block of its own */

/* How a product's depth is split: `pieces` of `piece` each (a multiple of the step; the last may
 * be shorter). When its output has too few tiles to fill the GPU, as many pieces as fit in one
 * wave of blocks, each SPLIT_MINIMUM or longer; else one piece of all the depth. The tiles
 * counted are those launch_tiled_product takes for a split product of many rows and columns,
 * 128 x 128 (64 sums a thread: 180 registers, so one block a multiprocessor), else 64 x 64 (two
 * blocks a multiprocessor). A wave, not more: a last wave of a few blocks would run alone. */
struct depth_split {
    int64_t pieces, piece;
};
static depth_split split_depth(int64_t rows, int64_t cols, int64_t depth)
{
    int64_t tile = rows > 64 && cols > 64 ? 128 : 64;
    int64_t tiles = ceil_div(rows, tile) * ceil_div(cols, tile);
    int64_t per_multiprocessor = tile == 128 ? 1 : 2;
    int64_t wanted = per_multiprocessor * device_multiprocessors() / tiles;
    if (wanted < 1) wanted = 1;
    int64_t piece = ceil_div(ceil_div(depth, wanted), PRODUCT_DEPTH) * PRODUCT_DEPTH;
    if (piece < SPLIT_MINIMUM) piece = SPLIT_MINIMUM;
    return {depth > 0 ? ceil_div(depth, piece) : 1, piece};
}

/* Adding a split product's pieces: partial[piece * outputs + i] for every piece, in a fixed order
 * (the same sums on every run). A block of `wide` outputs x `deep` threads: thread (x, y) adds
 * pieces y, y + deep, ... of output x in order, then each thread adds the rows' sums in order:
 * one thread per output would wait on each load before the next (hundreds of pieces for a few
 * hundred outputs, as in a first layer's weight gradient). A block has 256 threads or more:
 * blocks of 32 leave a multiprocessor too few threads when there are many outputs and few
 * pieces (the dense layer's backward). Launch with pieces_threads(pieces) threads and
 * pieces_blocks(outputs, pieces) blocks; i = blockIdx.x * blockDim.x + threadIdx.x, and the
 * total is for the threads of row 0 (threadIdx.y == 0) whose i < outputs. */
#define PIECES_THREADS 256 /* the threads of a block with one row of them */
#define PIECES_WIDE 32     /* the fewest outputs a block adds: a warp's */
#define PIECES_DEEPEST 32
static inline dim3 pieces_threads(int64_t pieces)
{
    unsigned deep = 1; /* a thread for every 8 pieces or so */
    while (deep < PIECES_DEEPEST && deep * 8 < pieces) deep *= 2;
    unsigned wide = PIECES_THREADS / deep;
    return dim3(wide > PIECES_WIDE ? wide : PIECES_WIDE, deep);
}
static inline int64_t pieces_blocks(int64_t outputs, int64_t pieces)
{
    return blocks_for(outputs, pieces_threads(pieces).x);
}
__device__ inline float sum_of_pieces(const float *partial, int64_t pieces, int64_t outputs,
                                      int64_t i)
{
    /* thread (x, y)'s sum at y * wide + x: a warp's 32 lanes are neighbours in one row (wide is
     * 32 or more), as they write and as they read down their columns */
    __shared__ float sums[PIECES_DEEPEST * PIECES_WIDE]; /* deep x wide <= 1024 */
    float total = 0.0f;
    if (i < outputs)
        for (int64_t piece = threadIdx.y; piece < pieces; piece += blockDim.y)
            total += partial[piece * outputs + i];
    sums[threadIdx.y * blockDim.x + threadIdx.x] = total;
    __syncthreads();
    total = 0.0f;
    for (unsigned y = 0; y < blockDim.y; y++)
        total += sums[y * blockDim.x + threadIdx.x];
    return total;
}

/* The row of a thread's i-th output within its block's tile (TM of them, the thread at ty): runs
 * of 4, 64 apart, when TM is a multiple of 4, else ty + 16 i. */
template <int TM>
__device__ __forceinline__ int tile_row(int ty, int i)
{
    return TM % 4 == 0 ? 4 * ty + 64 * (i / 4) + i % 4 : ty + 16 * i;
}

/* The epilogue: a thread's TN sums of one row of the tile, at columns first + 16 j, each given to
 * store(z, row, col, sum) where col < cols. A Store that needs a thread's sums of a row together
 * declares its own store_row, which overload resolution prefers (inference's fused convolution
 * max-pools them before they are written). */
template <int TN, class Store>
__device__ __forceinline__ void store_row(const Store &store, int z, int row, int first, int cols,
                                          const float (&sums)[TN])
{
#pragma unroll
    for (int j = 0; j < TN; j++)
        if (first + 16 * j < cols)
            store(z, row, first + 16 * j, sums[j]);
}

template <int BM, int BN, class LoadA, class LoadB, class Store>
__global__ void __launch_bounds__(PRODUCT_THREADS)
    tiled_product_kernel(LoadA load_a, LoadB load_b, Store store, int rows, int cols, int depth,
                         int split_depth)
{
    wait_for_previous_kernel();
    constexpr int TM = BM / 16, TN = BN / 16, BK = PRODUCT_DEPTH;
    constexpr int A_LOADS = BM * BK / PRODUCT_THREADS, B_LOADS = BN * BK / PRODUCT_THREADS;
    constexpr int B_ROWS_APART = PRODUCT_THREADS / BN; /* the k distance between a thread's loads */
    /* A's rows padded by 4 floats: 16-byte aligned for the float4 reads, and a warp's transposed
     * stores (16 depths of 2 rows) fall two to a bank (unpadded, 16 to a bank). */
    __shared__ __align__(16) float a_tile[BK][BM + 4];
    __shared__ float b_tile[BK][BN];
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    const int z = blockIdx.z, row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int k_begin = split_depth ? z * split_depth : 0;
    const int k_end = split_depth ? min(depth, k_begin + split_depth) : depth;
    const int b_col = tid % BN, b_k = tid / BN;
    const bool b_col_inside = col0 + b_col < cols;
    const typename LoadB::Column column = load_b.column(z, b_col_inside ? col0 + b_col : 0);

    float a_next[A_LOADS], b_next[B_LOADS];
    auto fetch = [&](int k0) { /* the step at depth k0 into registers, zeros past the edges */
#pragma unroll
        for (int l = 0; l < A_LOADS; l++) {
            int e = tid + l * PRODUCT_THREADS, row = row0 + e / BK, k = k0 + e % BK;
            a_next[l] = row < rows && k < k_end ? load_a(z, row, k) : 0.0f;
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; l++) {
            int k = k0 + b_k + l * B_ROWS_APART;
            b_next[l] = b_col_inside && k < k_end ? load_b(column, k) : 0.0f;
        }
    };

    float sums[TM][TN] = {};
    fetch(k_begin);
    for (int k0 = k_begin; k0 < k_end; k0 += BK) {
#pragma unroll
        for (int l = 0; l < A_LOADS; l++) {
            int e = tid + l * PRODUCT_THREADS;
            a_tile[e % BK][e / BK] = a_next[l];
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; l++)
            b_tile[b_k + l * B_ROWS_APART][b_col] = b_next[l];
        __syncthreads();
        if (k0 + BK < k_end)
            fetch(k0 + BK);
#pragma unroll
        for (int k = 0; k < BK; k++) {
            float a[TM], b[TN];
            if constexpr (TM % 4 == 0) {
#pragma unroll
                for (int i = 0; i < TM; i += 4) {
                    const float *run = &a_tile[k][tile_row<TM>(ty, i)];
                    float4 four = *reinterpret_cast<const float4 *>(run);
                    a[i] = four.x, a[i + 1] = four.y, a[i + 2] = four.z, a[i + 3] = four.w;
                }
            } else {
#pragma unroll
                for (int i = 0; i < TM; i++)
                    a[i] = a_tile[k][tile_row<TM>(ty, i)];
            }
#pragma unroll
            for (int j = 0; j < TN; j++)
                b[j] = b_tile[k][tx + 16 * j];
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++)
                    sums[i][j] = fmaf(a[i], b[j], sums[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; i++) {
        int row = row0 + tile_row<TM>(ty, i);
        if (row < rows)
            store_row(store, z, row, col0 + tx, cols, sums[i]);
    }
}

/* Stored operands and results: a stack of matrices, matrix z at z * slice. Element (i, k) of an
 * operand lies at i * row_stride + k * depth_stride: as A, i is a row of the product; as B, a
 * column, and each thread loads from one column throughout (column). A matrix stored as it is
 * used has (row_stride, depth_stride) = (its depth, 1) as A, (1, its columns) as B; stored
 * transposed, the same loader with the two strides swapped reads it where it lies. gemm's
 * operands (matmul.cu) and Winograd's 16 products (conv/04_winograd.cu) are these. */
struct StridedOperand {
    const float *data;
    int64_t slice, row_stride, depth_stride;
    __device__ float operator()(int z, int i, int k) const
    {
        return __ldg(data + z * slice + i * row_stride + k * depth_stride);
    }
    typedef const float *Column;
    __device__ Column column(int z, int i) const { return data + z * slice + i * row_stride; }
    __device__ float operator()(Column at, int k) const { return __ldg(at + k * depth_stride); }
};

/* out[z][i, j] = sum (+ bias[j] when bias is not NULL, then its ReLU when relu) at
 * data[z * slice + i * row_stride + j]: a product's result, a batch of them (Winograd), or a split
 * product's partial tiles, matrix z the piece z (gemm, the conv weight gradient). */
struct StridedResult {
    float *data;
    const float *bias;
    int64_t slice, row_stride;
    bool relu; /* inference's dense layer followed by a ReLU (gemm_epilogue, matmul.cu) */
    __device__ void operator()(int z, int i, int j, float sum) const
    {
        float value = bias != NULL ? sum + bias[j] : sum;
        data[z * slice + i * row_stride + j] = relu && value <= 0.0f ? 0.0f : value;
    }
};

/* Launch the product on the default stream with a tile that suits its shape: a short one
 * (BM = 16 or 32 rows) when there are few rows, so that fewer loads and FMAs go to waste; for a
 * split product (split_depth > 0), whose pieces were counted to fill the GPU, 128 x 128 when that
 * gives at least every other multiprocessor a block: the most reuse of each load (a depth too
 * short to split further keeps smaller tiles, which occupy more multiprocessors);
 * 128 x 64 when even those large tiles give every multiprocessor two blocks; else 64 x 64. A
 * narrow tile (BN = 32 columns) when there are few columns, or when the wide one would leave
 * multiprocessors with fewer than two blocks: a small product (LeNet-5's conv2 at batch 64: 16
 * rows, 6,400 columns, 50 blocks of 16 x 128 for 132 multiprocessors) then runs as 200 blocks of
 * a quarter of the work each, side by side, instead of one block per multiprocessor waiting on
 * each step's loads in turn. 16 columns for 16 or fewer, and more than 32 rows: the weight
 * gradient of a one-channel 3x3 layer (9 taps and the bias) would compute 22 of 32 columns for
 * nothing. z_count products (or depth splits, with split_depth > 0) along the grid's z. */
template <class LoadA, class LoadB, class Store>
static int launch_tiled_product(const char *name, LoadA load_a, LoadB load_b, Store store,
                                int64_t rows, int64_t cols, int64_t depth, int64_t z_count,
                                int64_t split_depth)
{
    if (rows > INT_MAX || cols > INT_MAX || depth > INT_MAX || z_count > 65535 ||
        ceil_div(rows, 64) > 65535) /* rows > 64 take tiles of 64 or 128 rows */
        return S2C_CUDA_BAD_ARGUMENT;
    if (rows == 0 || cols == 0 || z_count == 0)
        return S2C_CUDA_OK;
    int r = (int)rows, c = (int)cols, d = (int)depth, split = (int)split_depth;
    auto grid = [&](int bm, int bn) {
        return dim3((unsigned)ceil_div(cols, bn), (unsigned)ceil_div(rows, bm), (unsigned)z_count);
    };
#define PRODUCT(BM, BN)                                                                          \
    launch_overlapped(tiled_product_kernel<BM, BN, LoadA, LoadB, Store>, grid(BM, BN),           \
                      PRODUCT_THREADS, 0, load_a, load_b, store, r, c, d, split)
    auto fills = [&](int bm, int bn) { /* two blocks or more for every multiprocessor */
        return ceil_div(rows, bm) * ceil_div(cols, bn) * z_count >= 2 * device_multiprocessors();
    };
    bool largest = split > 0 && rows > 64 && cols > 64 &&
                   2 * ceil_div(rows, 128) * ceil_div(cols, 128) * z_count >=
                       device_multiprocessors();
    bool large = rows > 64 && fills(128, 64);
    bool narrow = cols <= 32 || !fills(rows <= 16 ? 16 : rows <= 32 ? 32 : 64,
                                       rows <= 32 ? 128 : 64);
    if (rows <= 16 && narrow)
        PRODUCT(16, 32);
    else if (rows <= 16)
        PRODUCT(16, 128);
    else if (rows <= 32 && narrow)
        PRODUCT(32, 32);
    else if (rows <= 32)
        PRODUCT(32, 128);
    else if (cols <= 16)
        PRODUCT(64, 16);
    else if (largest)
        PRODUCT(128, 128);
    else if (large)
        PRODUCT(128, 64);
    else if (narrow)
        PRODUCT(64, 32);
    else
        PRODUCT(64, 64);
#undef PRODUCT
    LAUNCH_CHECK(name);
    return S2C_CUDA_OK;
}

#endif

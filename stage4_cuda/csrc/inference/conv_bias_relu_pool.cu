/* inference/conv_bias_relu_pool.cu -- inference's fused convolution (week 16): conv + bias +
 * ReLU, then max-pooling over pool x pool windows at stride pool, in ONE kernel that keeps
 * nothing for a backward: no argmax, no [n, k, oh, ow] activation in device memory, only the
 * pooled output y [n, k, oh / pool, ow / pool] written (pool 1: no pooling).
 *
 * The bias and ReLU are applied after the max: rounding v + b is monotone in v, as ReLU is, so
 * both commute with the max (and a NaN wins the max, then stays NaN), which does them once per
 * window instead of once per output. Each convolution output is the training path's sum, its
 * taps in order from 0 (the same numbers as rung 1, 3 and 7 of the conv2d ladder, csrc/conv/),
 * except where the product's depth is split (below): there, pieces of it added in a fixed order,
 * the same numbers on every run, within the grader's tolerance for sums of C*R*S terms.
 *
 * Three kernels; fused_kernel_for chooses by the layer's shape, in one place:
 *
 * - shallow (C*R*S <= S2C_CUDA_SHALLOW_DEPTH: a first layer): a thread per pooled output, the
 *   conv2d ladder's rung 7 applied to each position of its window in turn: the position's
 *   C*R*S pixels in registers, every filter of the block's group (staged in shared memory,
 *   read 4 at a time as one broadcast) applied to them, a running max per filter in registers.
 *   Where that grid leaves multiprocessors idle (a batch of one or two) and the window is 1, 4
 *   or 16 positions (pool 1, 2 or 4), its spread form: a thread per position, the pool x pool
 *   threads of a window side by side in a warp, their max taken by shuffles in the walk's order
 *   (the same bits), smaller blocks and groups of filters: more multiprocessors share the work.
 * - product (pool 1 or 2, deeper layers): rung 3's implicit GEMM (tiled_product.cuh), filters
 *   as rows and convolution outputs as columns, the columns ordered so that the pool x pool
 *   outputs of a window land in ONE thread's registers (window_of): its epilogue (store_row)
 *   takes their max, + bias, ReLU, and writes only the pooled value. A product whose tiles leave
 *   most multiprocessors idle (a batch of one or two) has its depth split, as the dense layer's
 *   gemm does (matmul.cu): the pieces' partial sums go to `scratch`, and a second kernel adds them
 *   in a fixed order, then pools.
 * - direct (the rest: deep layers pooled 3x3 or more): a thread per output of y, summing its
 *   window's convolution outputs from global memory, the definition as it is written.
 *
 * Padding reads as zero and is still multiplied, so a NaN weight gives NaN there, as in PyTorch.
 * `scratch` holds s2c_cuda_conv2d_bias_relu_pool_scratch floats (NULL: nothing is split).
 * Run it on a GPU: python -m grader --stage 4 --variant nvcc --ops conv2d_bias_relu_pool */
#include "../conv/conv.cuh"
#include "../reduce.cuh"
#include "../tiled_product.cuh"

#define SHALLOW_THREADS 256    /* pooled outputs a block of the shallow kernel */
#define SHALLOW_NARROW 12      /* a 3x3 window of one channel (9 taps), rounded up to 4 */
#define SHALLOW_FEW_FILTERS 8  /* the group of a layer of 8 filters or fewer (LeNet-5's 6) */
#define SHALLOW_FILTERS 32     /* the group of a wider layer */
#define SPREAD_THREADS 64      /* positions a block of the shallow kernel's spread form */
#define SPREAD_FILTERS 4       /* its group of filters */
#define PRODUCT_COLUMNS 64     /* the product's tile: 16 threads wide, 4 columns a thread */
#define WINDOW_RUN 16          /* windows side by side in a run of columns (the tile's tx) */
#define DIRECT_THREADS 256

static int64_t fused_scratch(const conv_geometry &g, int pool);
static int fused_conv(const float *x, const float *w, const float *b, float *y, float *scratch,
                      const conv_geometry &g, int pool);

extern "C" int s2c_cuda_conv2d_bias_relu_pool_scratch(const struct s2c_conv_geometry *g,
                                                      int64_t pool, int64_t *floats)
{
    // BEGIN SOLUTION week 16, task conv2d_bias_relu_pool
    if (pool < 1 || g->out_height < pool || g->out_width < pool) return S2C_CUDA_BAD_ARGUMENT;
    *floats = fused_scratch(*g, (int)pool);
    return S2C_CUDA_OK;
    // END SOLUTION
}

extern "C" int s2c_cuda_conv2d_bias_relu_pool(const float *x, const float *w, const float *b,
                                              float *y, float *scratch,
                                              const struct s2c_conv_geometry *g, int64_t pool)
{
    // BEGIN SOLUTION week 16, task conv2d_bias_relu_pool
    if (pool < 1 || g->out_height < pool || g->out_width < pool) return S2C_CUDA_BAD_ARGUMENT;
    return fused_conv(x, w, b, y, scratch, *g, (int)pool);
}

/* The kernels, and the layers each computes best. */
enum fused_kernel { FUSED_SHALLOW, FUSED_SHALLOW_SPREAD, FUSED_PRODUCT, FUSED_DIRECT };
static fused_kernel fused_kernel_for(const conv_geometry &g, int pool);

/* ---- shallow: a window in registers ----------------------------------------------------------
 * Cost: 2 N K (PH pool)(PW pool) C R S FLOPs; device memory 4 (N C H W + K C R S + N K PH PW)
 * bytes: x read once (neighbouring windows' pixels come from L1), y pooled, so a quarter of the
 * training path's stores at pool 2 (Fashion-CNN conv1 at batch 256: 0.2 GFLOP, 11 MB written:
 * bound by its FMAs and its stores). */
template <int DEPTH, int FILTERS, int KH, int KW>
__global__ void __launch_bounds__(SHALLOW_THREADS)
    fused_shallow_kernel(const float *x, const float *w, const float *b, float *y,
                         conv_geometry g, int pool)
{
    wait_for_previous_kernel();
    __shared__ __align__(16) float filters[FILTERS][DEPTH];
    const int depth = (int)conv_rows(g), first = blockIdx.y * FILTERS;
    const int group = min(FILTERS, (int)g.filters - first);
    stage_filters(filters, w, first, group, depth);
    __syncthreads();

    const int pooled_width = (int)g.out_width / pool;
    const int64_t pooled = (g.out_height / pool) * pooled_width;
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= g.n * pooled) return;
    const int64_t n = index_div(i, pooled);
    const int p = (int)(i - n * pooled), py = p / pooled_width, px = p % pooled_width;
    const int height = (int)g.height, width = (int)g.width;
    const int kh = KH ? KH : (int)g.kh, kw = KW ? KW : (int)g.kw;
    const float *image = x + n * g.channels * height * width;

    float best[FILTERS] = {};
    for (int di = 0; di < pool; di++)
        for (int dj = 0; dj < pool; dj++) {
            int top = (py * pool + di) * (int)g.stride - (int)g.padding;
            int left = (px * pool + dj) * (int)g.stride - (int)g.padding;
            float window[DEPTH];
            load_window(window, image, top, left, depth, kh, kw, height, width);
#pragma unroll
            for (int f = 0; f < FILTERS; f++) {
                float sum = window_dot(window, filters[f]);
                best[f] = di == 0 && dj == 0 ? sum : nan_max(best[f], sum);
            }
        }
    float *out = y + (n * g.filters + first) * pooled + p;
#pragma unroll
    for (int f = 0; f < FILTERS; f++)
        if (f < group) {
            float value = best[f] + __ldg(b + first + f);
            out[f * pooled] = value <= 0.0f ? 0.0f : value;
        }
}

/* ---- shallow, spread: a window's positions side by side ----------------------------------------
 * A batch of one or two gives the kernel above a block or two on an empty GPU (LeNet-5's conv1 at
 * batch 1: 144 windows, one block on one multiprocessor of 132), and each of its threads a long
 * chain: pool^2 positions one after the other, each C*R*S loads then DEPTH FMAs and DEPTH / 4
 * shared loads a filter (pool 2, 8 filters, DEPTH 32: 1,400 loads and FMAs a thread, besides
 * their indices, two warps on each scheduler of one multiprocessor). Here a thread computes one
 * position: lane `tap` of the pool x pool lanes of its window (taps = 1, 4 or 16, which divide a
 * warp's 32) takes position (tap / pool, tap % pool), and the lanes meet by shuffles, each time
 * with the lane of the earlier positions on nan_max's left: the max over the window's positions
 * in order, as the walk above takes it (the first NaN, else the last of equal maxima), so the
 * same bits. Lane 0 of each window adds the bias and writes. Blocks of SPREAD_THREADS positions
 * and SPREAD_FILTERS filters: each thread's chain is DEPTH loads, all in flight with the block's
 * filter loads before its barrier, then SPREAD_FILTERS x DEPTH FMAs and 2 log2(pool) shuffles a
 * filter (DEPTH 32: 190 loads and FMAs and 8 shuffles, a warp a scheduler), over
 * N PH pool PW pool / 64 x K / 4 blocks (LeNet-5's conv1 at batch 1: 18, the Fashion CNN's:
 * 176, two a multiprocessor at most).
 * Cost: the same FLOPs and writes as above; x read K / SPREAD_FILTERS times, from L1 and L2. */
template <int DEPTH, int KH, int KW>
__global__ void __launch_bounds__(SPREAD_THREADS)
    fused_shallow_spread_kernel(const float *x, const float *w, const float *b, float *y,
                                conv_geometry g, int pool)
{
    wait_for_previous_kernel();
    __shared__ __align__(16) float filters[SPREAD_FILTERS][DEPTH];
    const int depth = (int)conv_rows(g), first = blockIdx.y * SPREAD_FILTERS;
    const int group = min(SPREAD_FILTERS, (int)g.filters - first);
    /* int indices: a grid this small (fused_kernel_for) holds fewer than 2^31 positions */
    const int pooled_width = (int)g.out_width / pool, taps = pool * pool;
    const int pooled = (int)(g.out_height / pool) * pooled_width;
    const int thread = blockIdx.x * blockDim.x + threadIdx.x;
    const int window = thread / taps, tap = thread % taps;
    const bool inside = window < g.n * pooled; /* lanes past the last window still shuffle */
    const int i = inside ? window : 0, n = i / pooled;
    const int p = i - n * pooled, py = p / pooled_width, px = p % pooled_width;
    const int height = (int)g.height, width = (int)g.width;
    const int kh = KH ? KH : (int)g.kh, kw = KW ? KW : (int)g.kw;
    const float *image = x + n * g.channels * height * width;
    const int top = (py * pool + tap / pool) * (int)g.stride - (int)g.padding;
    const int left = (px * pool + tap % pool) * (int)g.stride - (int)g.padding;
    float pixels[DEPTH]; /* loaded before the barrier: in flight with the filters' loads */
    load_window(pixels, image, top, left, depth, kh, kw, height, width);
    float bias[SPREAD_FILTERS];
#pragma unroll
    for (int f = 0; f < SPREAD_FILTERS; f++) bias[f] = f < group ? __ldg(b + first + f) : 0.0f;
    stage_filters(filters, w, first, group, depth);
    __syncthreads();

    float *out = y + (n * g.filters + first) * pooled + p;
#pragma unroll
    for (int f = 0; f < SPREAD_FILTERS; f++) {
        float best = window_dot(pixels, filters[f]);
#pragma unroll
        for (int lanes = 1; lanes < 32; lanes *= 2) /* lanes [0, lanes) meet [lanes, 2 lanes) */
            if (lanes < taps) best = nan_max(best, __shfl_xor_sync(FULL_WARP, best, lanes));
        if (inside && tap == 0 && f < group) {
            float value = best + bias[f];
            out[f * pooled] = value <= 0.0f ? 0.0f : value;
        }
    }
}

/* The blocks of the shallow kernel: windows of SHALLOW_THREADS by groups of filters. */
static dim3 shallow_blocks(const conv_geometry &g, int pool)
{
    int64_t windows = g.n * (g.out_height / pool) * (g.out_width / pool);
    bool few = g.filters <= SHALLOW_FEW_FILTERS;
    return dim3((unsigned)blocks_for(windows, SHALLOW_THREADS),
                (unsigned)blocks_for(g.filters, few ? SHALLOW_FEW_FILTERS : SHALLOW_FILTERS));
}

static int launch_shallow(const float *x, const float *w, const float *b, float *y,
                          const conv_geometry &g, int pool, bool spread)
{
    bool few = g.filters <= SHALLOW_FEW_FILTERS, narrow = conv_rows(g) <= SHALLOW_NARROW;
    int64_t positions = g.n * (g.out_height / pool) * (g.out_width / pool) * pool * pool;
    dim3 spread_blocks((unsigned)blocks_for(positions, SPREAD_THREADS),
                       (unsigned)blocks_for(g.filters, SPREAD_FILTERS));
    return with_kernel_size(g, [&](auto kh, auto kw) {
        constexpr int KH = kh.value, KW = kw.value, DEEP = S2C_CUDA_SHALLOW_DEPTH;
        constexpr int FEW = SHALLOW_FEW_FILTERS, MANY = SHALLOW_FILTERS;
        if (spread) {
            auto kernel = narrow ? fused_shallow_spread_kernel<SHALLOW_NARROW, KH, KW>
                                 : fused_shallow_spread_kernel<DEEP, KH, KW>;
            launch_overlapped(kernel, spread_blocks, SPREAD_THREADS, 0, x, w, b, y, g, pool);
            LAUNCH_CHECK("fused_shallow_spread_kernel");
            return S2C_CUDA_OK;
        }
        auto kernel = few ? (narrow ? fused_shallow_kernel<SHALLOW_NARROW, FEW, KH, KW>
                                    : fused_shallow_kernel<DEEP, FEW, KH, KW>)
                          : (narrow ? fused_shallow_kernel<SHALLOW_NARROW, MANY, KH, KW>
                                    : fused_shallow_kernel<DEEP, MANY, KH, KW>);
        launch_overlapped(kernel, shallow_blocks(g, pool), SHALLOW_THREADS, 0, x, w, b, y, g,
                          pool);
        LAUNCH_CHECK("fused_shallow_kernel");
        return S2C_CUDA_OK;
    });
}

/* ---- product: an implicit GEMM whose epilogue pools ------------------------------------------
 * The product's columns are the convolution outputs, ordered by pooling window: a run of
 * WINDOW_RUN * taps columns (taps = pool * pool) holds WINDOW_RUN windows, column
 * run * WINDOW_RUN * taps + 16 tap + t holding tap `tap` of window run * WINDOW_RUN + t. A tile's
 * thread tx holds columns tx + 16 j (tiled_product.cuh), so its 4 columns of a 64-wide tile are
 * the 4 taps of one window at pool 2 (4 windows at pool 1).
 * Cost: 2 K (C R S)(N PH pool PW pool) FLOPs (the outputs no window covers are not computed);
 * device memory x and w once (x's R*S-fold reuse from L2 and shared memory), y pooled:
 * 4 (N C H W + K C R S + N K PH PW) bytes (Fashion-CNN conv2 at batch 256: 3.8 GFLOP, 5 MB:
 * bound by the FMAs and the loads from shared memory, 64 FMAs for 10 shared loads a thread). */
static __host__ __device__ inline int window_of(int column, int taps)
{
    return column / (WINDOW_RUN * taps) * WINDOW_RUN + column % WINDOW_RUN;
}

/* The column of tap `tap` of window `window` (window_of's inverse). */
static __host__ __device__ inline int column_of(int window, int tap, int taps)
{
    return window / WINDOW_RUN * WINDOW_RUN * taps + WINDOW_RUN * tap + window % WINDOW_RUN;
}

/* B(j, column) = x's pixel under weight j = (c, r, s) of the convolution output at `column`; the
 * kernel size KH x KW known at compile time, or read from kh, kw when 0 (with_kernel_size). A
 * column past the last window computes the last window again, never stored. */
template <int KH, int KW>
struct PooledWindowColumns {
    const float *x;
    int channels, height, width, kh, kw, stride, padding, pool, pooled_width, pooled, windows;
    struct Column {
        const float *image;
        int top, left; /* the window's corner, in the padded image */
    };
    __device__ Column column(int, int col) const
    {
        int taps = pool * pool, window = min(window_of(col, taps), windows - 1);
        int tap = col / WINDOW_RUN % taps, n = window / pooled, p = window % pooled;
        int oh = p / pooled_width * pool + tap / pool, ow = p % pooled_width * pool + tap % pool;
        return {x + (int64_t)n * channels * height * width, oh * stride - padding,
                ow * stride - padding};
    }
    __device__ float operator()(const Column &at, int j) const
    {
        const int taps_wide = KW ? KW : kw, taps = KH ? KH * KW : kh * kw;
        int c = j / taps, rs = j % taps, h = at.top + rs / taps_wide, v = at.left + rs % taps_wide;
        bool inside = 0 <= h && h < height && 0 <= v && v < width;
        return inside ? __ldg(at.image + ((int64_t)c * height + h) * width + v) : 0.0f;
    }
};

/* y[n, k, p] = relu(max over the window's taps of the sums + b[k]) for window (n, p). */
struct PooledOutput {
    float *y;
    const float *b;
    int filters, taps, pooled, windows;
};

/* The product's epilogue for PooledOutput (tiled_product.cuh's store_row): sums[j] is column
 * first + 16 j, so each `taps` consecutive j are one window's outputs. */
template <int TN>
__device__ __forceinline__ void store_row(const PooledOutput &out, int, int k, int first, int,
                                          const float (&sums)[TN])
{
    static_assert(TN % 4 == 0, "a thread's columns hold whole 2x2 windows");
    float best = 0.0f;
#pragma unroll
    for (int j = 0; j < TN; j++) {
        best = j % out.taps == 0 ? sums[j] : nan_max(best, sums[j]);
        if (j % out.taps != out.taps - 1) continue;
        int window = window_of(first + 16 * (j + 1 - out.taps), out.taps);
        if (window >= out.windows) continue;
        int n = window / out.pooled, p = window % out.pooled;
        float value = best + __ldg(out.b + k);
        out.y[((int64_t)n * out.filters + k) * out.pooled + p] = value <= 0.0f ? 0.0f : value;
    }
}

/* The product's rows (filters) a tile: 16 or 32 for layers that few (LeNet-5's conv2: 16), 128
 * when those large tiles still give every multiprocessor two blocks, else 64, as
 * launch_tiled_product chooses (the columns are fixed at 64 here: whole windows a thread). */
static int product_tile_rows(int64_t rows, int64_t column_tiles)
{
    if (rows <= 16) return 16;
    if (rows <= 32) return 32;
    bool large = rows > 64 && ceil_div(rows, 128) * column_tiles >= 2 * device_multiprocessors();
    return large ? 128 : 64;
}

/* The product's columns: whole runs of windows, so that every tile holds whole windows. */
static int64_t product_columns(const conv_geometry &g, int pool)
{
    int64_t windows = g.n * (g.out_height / pool) * (g.out_width / pool);
    return ceil_div(windows, WINDOW_RUN) * WINDOW_RUN * pool * pool;
}

/* The product's depth split: split_depth's rule (tiled_product.cuh), gemm's, in this one place.
 * A layer whose tiles leave most multiprocessors idle, each walking the whole depth in turn
 * (the Fashion CNN's conv2 at batch 1: 4 tiles of 64 x 64, 36 steps of depth each, for 132
 * multiprocessors), is cut into pieces of 64 deep or more, one block per tile and piece; a
 * batch whose tiles fill the GPU (256 images on these layers) keeps one piece: one launch. */
static depth_split product_split(const conv_geometry &g, int pool)
{
    return split_depth(g.filters, product_columns(g, pool), conv_rows(g));
}

/* The pieces' partial sums, pieces x filters x product columns floats (0 when not split). */
static int64_t fused_scratch(const conv_geometry &g, int pool)
{
    if (fused_kernel_for(g, pool) != FUSED_PRODUCT) return 0;
    depth_split split = product_split(g, pool);
    return split.pieces > 1 ? split.pieces * g.filters * product_columns(g, pool) : 0;
}

/* A split product's second kernel: y[n, k, p] = relu(max over the taps of window (n, p) of the
 * pieces' partial sums of (k, its column), added in a fixed order (sum_of_pieces) + b[k]). A
 * column of threads per element of y, in y's order (pieces_threads and pieces_blocks), every
 * thread of a block taking part in each tap's sum (a block's rows of threads share it). */
__global__ void add_pooled_pieces_kernel(const float *partial, int64_t pieces, int columns,
                                         PooledOutput out)
{
    wait_for_previous_kernel();
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    const int64_t outputs = (int64_t)out.filters * columns; /* a piece's partial sums */
    const bool inside = i < (int64_t)out.windows * out.filters;
    const int64_t n = inside ? index_div(i, (int64_t)out.filters * out.pooled) : 0;
    const int k = inside ? (int)(i / out.pooled % out.filters) : 0;
    const int window = (int)(n * out.pooled + i % out.pooled);
    float best = 0.0f;
    for (int tap = 0; tap < out.taps; tap++) {
        int64_t at = inside ? (int64_t)k * columns + column_of(window, tap, out.taps) : outputs;
        float sum = sum_of_pieces(partial, pieces, outputs, at);
        best = tap == 0 ? sum : nan_max(best, sum);
        __syncthreads(); /* the block's shared sums are written again for the next tap */
    }
    if (threadIdx.y != 0 || !inside) return;
    float value = best + __ldg(out.b + k);
    out.y[i] = value <= 0.0f ? 0.0f : value;
}

/* The product of tiles of `tile_rows` x PRODUCT_COLUMNS, its sums given to `store`. */
template <class Columns, class Store>
static void launch_pooled_product(int tile_rows, dim3 grid, StridedOperand filters,
                                  Columns windows, Store store, int rows, int cols, int depth,
                                  int split)
{
#define POOLED_PRODUCT(BM)                                                                       \
    launch_overlapped(tiled_product_kernel<BM, PRODUCT_COLUMNS, StridedOperand, Columns, Store>, \
                      grid, PRODUCT_THREADS, 0, filters, windows, store, rows, cols, depth, split)
    if (tile_rows == 16)
        POOLED_PRODUCT(16);
    else if (tile_rows == 32)
        POOLED_PRODUCT(32);
    else if (tile_rows == 64)
        POOLED_PRODUCT(64);
    else
        POOLED_PRODUCT(128);
#undef POOLED_PRODUCT
}

static int launch_product(const float *x, const float *w, const float *b, float *y,
                          float *scratch, const conv_geometry &g, int pool)
{
    int pooled_width = (int)(g.out_width / pool);
    int pooled = (int)(g.out_height / pool) * pooled_width;
    int64_t rows = g.filters, cols = product_columns(g, pool), depth = conv_rows(g);
    StridedOperand filters = {w, 0, depth, 1}; /* A(k, j) = w[k, j]: w as [K, C*R*S] */
    PooledOutput out = {y, b, (int)g.filters, pool * pool, pooled, (int)g.n * pooled};
    depth_split split = scratch != NULL ? product_split(g, pool) : depth_split{1, depth};
    bool split_up = split.pieces > 1; /* then piece z's partial sums go to scratch[z] */
    int64_t column_tiles = ceil_div(cols, PRODUCT_COLUMNS);
    int tile_rows = product_tile_rows(rows, column_tiles);
    dim3 grid((unsigned)column_tiles, (unsigned)ceil_div(rows, tile_rows), (unsigned)split.pieces);
    return with_kernel_size(g, [&](auto kh, auto kw) {
        typedef PooledWindowColumns<kh.value, kw.value> Columns;
        Columns windows = {x, (int)g.channels, (int)g.height, (int)g.width, (int)g.kh, (int)g.kw,
                           (int)g.stride, (int)g.padding, pool, pooled_width, pooled,
                           (int)g.n * pooled};
        if (!split_up) {
            launch_pooled_product(tile_rows, grid, filters, windows, out, (int)rows, (int)cols,
                                  (int)depth, 0);
            LAUNCH_CHECK("fused conv tiled_product_kernel");
            return S2C_CUDA_OK;
        }
        StridedResult pieces = {scratch, NULL, rows * cols, cols};
        launch_pooled_product(tile_rows, grid, filters, windows, pieces, (int)rows, (int)cols,
                              (int)depth, (int)split.piece);
        LAUNCH_CHECK("fused conv tiled_product_kernel (split)");
        /* a thread's loads come one after another, its pieces' for each tap in turn: threads as
         * deep as for taps x pieces (the Fashion CNN's conv2 at batch 1: 8 deep, 2 loads a tap) */
        int64_t outputs = (int64_t)out.windows * out.filters, loads = split.pieces * pool * pool;
        launch_overlapped(add_pooled_pieces_kernel, pieces_blocks(outputs, loads),
                          pieces_threads(loads), 0, scratch, split.pieces, (int)cols, out);
        LAUNCH_CHECK("add_pooled_pieces_kernel");
        return S2C_CUDA_OK;
    });
}

/* ---- direct: the definition -----------------------------------------------------------------
 * Cost: 2 N K PH PW pool^2 C R S FLOPs, each pixel and weight read from L1/L2 for every FMA:
 * bound by those loads. Only for what the two above do not take. */
__global__ void fused_direct_kernel(const float *x, const float *w, const float *b, float *y,
                                    conv_geometry g, int pool)
{
    wait_for_previous_kernel();
    int64_t ph = g.out_height / pool, pw = g.out_width / pool;
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= g.n * g.filters * ph * pw) return;
    int64_t image = i / (g.filters * ph * pw), filter = i / (ph * pw) % g.filters;
    int64_t py = i / pw % ph, px = i % pw;
    const float *pixels = x + image * g.channels * g.height * g.width;
    const float *kernel = w + filter * conv_rows(g);
    float best = 0.0f;
    for (int64_t oy = py * pool; oy < py * pool + pool; oy++)
        for (int64_t ox = px * pool; ox < px * pool + pool; ox++) {
            float sum = 0.0f;
            for (int64_t c = 0; c < g.channels; c++)
                for (int64_t r = 0; r < g.kh; r++)
                    for (int64_t s = 0; s < g.kw; s++) {
                        int64_t h = oy * g.stride - g.padding + r;
                        int64_t v = ox * g.stride - g.padding + s;
                        bool inside = 0 <= h && h < g.height && 0 <= v && v < g.width;
                        float pixel = inside ? pixels[(c * g.height + h) * g.width + v] : 0.0f;
                        sum = fmaf(pixel, kernel[(c * g.kh + r) * g.kw + s], sum);
                    }
            best = oy == py * pool && ox == px * pool ? sum : nan_max(best, sum);
        }
    float value = best + b[filter];
    y[i] = value <= 0.0f ? 0.0f : value;
}

/* The kernel for a layer: shallow for first layers (their window fits in registers, where a
 * product's depth of 9 or 25 would be padded to one step of 16 and reuse little), spread where
 * its blocks are fewer than the multiprocessors and a window's positions divide a warp, the
 * product for deeper ones pooled 2x2 or not at all (a thread's 4 columns hold whole windows),
 * direct for the rest; each only where its grid and its int indices hold the layer. */
static fused_kernel fused_kernel_for(const conv_geometry &g, int pool)
{
    int64_t outputs = g.n * g.filters * g.out_height * g.out_width;
    bool shallow = conv_rows(g) <= S2C_CUDA_SHALLOW_DEPTH;
    if (shallow && ceil_div(g.filters, SHALLOW_FEW_FILTERS) <= 65535) {
        dim3 blocks = shallow_blocks(g, pool);
        bool idle = (int64_t)blocks.x * blocks.y < device_multiprocessors();
        return idle && (pool == 1 || pool == 2 || pool == 4) ? FUSED_SHALLOW_SPREAD
                                                             : FUSED_SHALLOW;
    }
    if ((pool == 1 || pool == 2) && product_columns(g, pool) <= INT_MAX && outputs <= INT_MAX &&
        conv_rows(g) <= INT_MAX && ceil_div(g.filters, 16) <= 65535)
        return FUSED_PRODUCT;
    return FUSED_DIRECT;
}

static int fused_conv(const float *x, const float *w, const float *b, float *y, float *scratch,
                      const conv_geometry &g, int pool)
{
    switch (fused_kernel_for(g, pool)) {
    case FUSED_SHALLOW: return launch_shallow(x, w, b, y, g, pool, false);
    case FUSED_SHALLOW_SPREAD: return launch_shallow(x, w, b, y, g, pool, true);
    case FUSED_PRODUCT: return launch_product(x, w, b, y, scratch, g, pool);
    case FUSED_DIRECT: break;
    }
    int64_t outputs = g.n * g.filters * (g.out_height / pool) * (g.out_width / pool);
    launch_overlapped(fused_direct_kernel, blocks_for(outputs, DIRECT_THREADS), DIRECT_THREADS, 0,
                      x, w, b, y, g, pool);
    LAUNCH_CHECK("fused_direct_kernel");
    return S2C_CUDA_OK;
    // END SOLUTION
}

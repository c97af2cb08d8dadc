/* backward_dw.cu -- conv2d's backward, the weight gradient: dw and db (week 16).
 *
 *   dw[k, c, r, s] = sum over n, oh, ow of dy[n, k, oh, ow] * x[n, c, oh*stride + r - padding, ...]
 *   db[k]          = sum over n, oh, ow of dy[n, k, oh, ow]
 *
 * Three ways, chosen per layer:
 *
 *   - One product of depth N*OH*OW (the whole batch; tiled_product.cuh), dy as A and the im2col
 *     entries gathered from x as B, with one more column of ones: its sums are db. Its output is
 *     small (K x C*R*S+1) and its depth long (50,176 at LeNet-5's conv1, batch 64), so one block
 *     per output tile would leave the GPU idle: the depth is split into pieces, one block each,
 *     enough to give every multiprocessor two blocks, and each writes its partial sums to
 *     scratch; a last kernel adds the pieces in a fixed order. Deterministic: the same sums in the
 *     same order on every run, no atomics.
 *   - A window of SHALLOW_GRADIENT_TAPS taps or fewer (a one-channel 3x3 layer, a first layer)
 *     takes a kernel of its own, which reads dy 16 bytes at a time
 *     (shallow_weight_gradient_kernel), into the same pieces.
 *   - A 3x3 stride-1 layer with enough channels and filters (conv_backward_takes_winograd,
 *     dispatch.cu) takes Winograd, as dx does: dw[k, c] is a sum over dy's 2x2 blocks of the 3x3
 *     correlation of x's 4x4 patch under the block with the block itself, Winograd's F(3x3, 2x2)
 *     (winograd_weight_gradient): 16 products of K x C over the blocks, 16 multiplications per
 *     block and channel pair where the product above spends 36; or over dy's 4x4 blocks and x's
 *     6x6 patches, F(3x3, 4x4) (06_winograd_4x4.cu's transforms), 36 where it spends 144, by the
 *     blocks winograd_block picks. Its transforms carry a pixel into taps whose coefficient is
 *     exactly 0 (a pixel in a patch's second row reaches the tap of row 2), and 0 x NaN is NaN:
 *     when x holds a NaN or an Inf, dw is computed again by its definition (nan_recompute.cu).
 *
 * Cost model: 2 N K OH OW C R S FLOPs (with Winograd 2 x E K C T for E = 16 or 36 entries and
 * T = N ceil(OH/b) ceil(OW/b) blocks of b = 2 or 4); device memory x and dy once, dw once, plus
 * the partial sums (pieces x K x (C R S + 1) floats, or E x pieces x K x C with Winograd) written
 * and read once, and with Winograd the transformed blocks (E (K + C) T floats), written and read
 * once.
 *
 * Run it: python -m bench.conv_ladder (the backward row of each layer) */
#include "../reduce.cuh"
#include "../tiled_product.cuh"
#include "conv.cuh"

#define TRANSFORM_THREADS 256 /* gradient_transform_kernel's block */

__global__ void add_pieces_kernel(const float *partial, float *dw, float *db, int64_t pieces,
                                  int64_t filters, int64_t columns);
/* How the weight gradient's depth N*OH*OW is split (its output is K x (C*R*S + 1)). */
static depth_split weight_split(const conv_geometry &g)
{
    return split_depth(g.filters, conv_rows(g) + 1, g.n * conv_positions(g));
}

/* Winograd's weight gradient: its 16 products of K x C, each of depth T (the blocks), in pieces
 * that fill two waves of 128 x 64 blocks, two on every multiprocessor (tiled_product.cuh takes
 * that tile only when there are that many blocks, else 64 x 64). One wave of them is not enough,
 * and a few more than one is a second wave as long as the first, its last blocks running
 * alone. */
static depth_split winograd_weight_split(const conv_geometry &g)
{
    int block = winograd_block(g);
    int64_t entries = block == 4 ? WINOGRAD_4X4_ENTRIES : WINOGRAD_ENTRIES;
    int64_t tiles = entries * ceil_div(g.filters, 128) * ceil_div(g.channels, 64);
    int64_t depth = winograd_tiles(g, block).tiles;
    int64_t pieces = 2 * (2 * device_multiprocessors()) / tiles;
    if (pieces < 1) pieces = 1;
    int64_t piece = ceil_div(ceil_div(depth, pieces), PRODUCT_DEPTH) * PRODUCT_DEPTH;
    if (piece < SPLIT_MINIMUM) piece = SPLIT_MINIMUM;
    return {ceil_div(depth, piece), piece};
}

/* The weight gradient of a window of SHALLOW_GRADIENT_TAPS taps or fewer (C*R*S: a one-channel
 * 3x3 layer, the first layer of a CNN, and few others): the product above pads its 10 columns
 * (9 taps and the bias) to a tile of 16 and its depth steps of 16 to one barrier pair each, far
 * slower than reading dy. shallow_weight_gradient_kernel gives a thread
 * 4 neighbouring positions of an image at a time: dy's 4 values for each of its
 * SHALLOW_GRADIENT_FILTERS filters are one 16-byte load (OH*OW a multiple of 4, dy 16-byte
 * aligned), so that enough of dy is on its way to keep the memory busy (a position and 4 scalar
 * loads at a time keep too few bytes in flight), and it multiplies each pixel of
 * their windows into its SHALLOW_GRADIENT_FILTERS x (SHALLOW_GRADIENT_TAPS + 1) sums. Positions,
 * and pixels within an image, index an int. */
#define SHALLOW_GRADIENT_TAPS 12 /* a 3x3 window of one channel, rounded up to 4 */
#define SHALLOW_GRADIENT_FILTERS 4
#define SHALLOW_GRADIENT_THREADS 256
static bool shallow_weight_gradient_applies(const float *dy, const conv_geometry &g)
{
    return conv_rows(g) <= SHALLOW_GRADIENT_TAPS && conv_positions(g) % 4 == 0 &&
           (uintptr_t)dy % 16 == 0 && g.n * conv_positions(g) <= INT_MAX / 2 &&
           g.channels * g.height * g.width <= INT_MAX;
}
/* The pieces (blocks along x, each a grid stride over the positions, 4 at a time): about four
 * blocks for every multiprocessor, counting the groups of filters, and no more than the
 * positions fill. */
static int64_t shallow_weight_split(const conv_geometry &g)
{
    int64_t groups = ceil_div(g.filters, SHALLOW_GRADIENT_FILTERS);
    int64_t pieces = ceil_div(4 * (int64_t)device_multiprocessors(), groups);
    int64_t most = ceil_div(g.n * conv_positions(g) / 4, SHALLOW_GRADIENT_THREADS);
    pieces = pieces < most ? pieces : most;
    return pieces > 0 ? pieces : 1;
}

/* The weight gradient's scratch: the partial sums, pieces x K x (C*R*S + 1); with Winograd, the
 * transformed blocks of dy [entries, K, T] and of x [entries, T, C], then the partial products
 * [entries x pieces, K, C] (16 entries with 2x2 blocks, 36 with 4x4: winograd_block), and with
 * 4x4 blocks the flags of rung 6's input transform (its blocks that found a NaN or an Inf in x). */
int64_t conv_weight_gradient_scratch(const conv_geometry &g)
{
    if (!conv_backward_takes_winograd(g)) {
        /* the larger of the two, as dy's alignment is not known here */
        int64_t pieces = weight_split(g).pieces;
        int64_t shallow = conv_rows(g) <= SHALLOW_GRADIENT_TAPS ? shallow_weight_split(g) : 0;
        if (shallow > pieces) pieces = shallow;
        return pieces * g.filters * (conv_rows(g) + 1);
    }
    int block = winograd_block(g);
    int64_t entries = block == 4 ? WINOGRAD_4X4_ENTRIES : WINOGRAD_ENTRIES;
    int64_t tiles = winograd_tiles(g, block).tiles, pieces = winograd_weight_split(g).pieces;
    int64_t x_flags = block == 4 ? winograd_4x4_input_transform_blocks(g) : 0;
    return entries * (g.filters * tiles + tiles * g.channels + pieces * g.filters * g.channels) +
           x_flags;
}

static int product_weight_gradient(const float *x, const float *dy, float *dw, float *db,
                                   float *partial, const conv_geometry &g);
static int winograd_weight_gradient(const float *x, const float *dy, float *dw, float *db,
                                    float *scratch, float *flags, const conv_geometry &g);

/* dw and db, by Winograd where conv_backward_takes_winograd says so (`x_flags`: where its
 * transform of x flags a NaN or an Inf), else by the product or the shallow kernel; `work` is
 * conv_weight_gradient_scratch(g) floats. */
int conv_weight_gradient(const float *x, const float *dy, float *dw, float *db, float *work,
                         float *x_flags, const conv_geometry &g)
{
    // BEGIN SOLUTION week 16, task conv2d_backward
    return conv_backward_takes_winograd(g)
               ? winograd_weight_gradient(x, dy, dw, db, work, x_flags, g)
               : product_weight_gradient(x, dy, dw, db, work, g);
}

/* A(k, j) = dy[n, k, p] for j = (n, p): the whole batch along the depth. */
struct GradientRows {
    const float *dy;
    int filters, positions;
    fast_divider by_positions;
    __device__ float operator()(int, int k, int j) const
    {
        int n = by_positions.quotient(j), p = j - n * positions;
        return __ldg(dy + ((int64_t)n * filters + k) * positions + p);
    }
};

/* B(j, col) = x[n, c, oh*stride + r - padding, ow*stride + s - padding] for j = (n, oh, ow) and
 * col = (c, r, s); 1 in the last column (col = C*R*S), whose sums are the bias gradient. */
struct InputTaps {
    const float *x;
    int channels, height, width, kh, kw, stride, padding, out_width, positions;
    fast_divider by_positions, by_out_width;
    struct Column {
        const float *plane; /* channel c of image 0 */
        int r, s;           /* the tap, minus the padding */
        bool ones;
    };
    __device__ Column column(int, int col) const
    {
        int taps = kh * kw, c = col / taps, rs = col % taps;
        return {x + (int64_t)c * height * width, rs / kw - padding, rs % kw - padding,
                col == channels * taps};
    }
    __device__ float operator()(const Column &at, int j) const
    {
        if (at.ones) return 1.0f;
        int n = by_positions.quotient(j), p = j - n * positions;
        int oh = by_out_width.quotient(p), ow = p - oh * out_width;
        int h = oh * stride + at.r, w = ow * stride + at.s;
        bool inside = 0 <= h && h < height && 0 <= w && w < width;
        return inside ? __ldg(at.plane + (int64_t)n * channels * height * width + h * width + w)
                      : 0.0f;
    }
};

template <int KH, int KW, bool PADDED>
__global__ void shallow_weight_gradient_kernel(const float *x, const float *dy, float *partial,
                                               conv_geometry g, fast_divider by_quads,
                                               fast_divider by_out_width);

/* Component e of v (e known at compile time where the loop over it is unrolled). */
static __device__ __forceinline__ float component(float4 v, int e)
{
    return e == 0 ? v.x : e == 1 ? v.y : e == 2 ? v.z : v.w;
}

/* dw and db of a shallow layer by shallow_weight_gradient_kernel, into shallow_weight_split(g)
 * pieces of partial sums. */
static int shallow_weight_gradient(const float *x, const float *dy, float *partial,
                                   const conv_geometry &g)
{
    int64_t groups = ceil_div(g.filters, SHALLOW_GRADIENT_FILTERS);
    dim3 blocks((unsigned)shallow_weight_split(g), (unsigned)groups);
    fast_divider by_quads((int)(conv_positions(g) / 4)), by_out_width((int)g.out_width);
    return with_kernel_size(g, [&](auto kh, auto kw) {
        auto kernel = g.padding > 0 ? shallow_weight_gradient_kernel<kh.value, kw.value, true>
                                    : shallow_weight_gradient_kernel<kh.value, kw.value, false>;
        launch_overlapped(kernel, blocks, SHALLOW_GRADIENT_THREADS, 0, x, dy, partial, g, by_quads,
                          by_out_width);
        LAUNCH_CHECK("shallow_weight_gradient_kernel");
        return S2C_CUDA_OK;
    });
}

/* partial[piece, k, j] for the SHALLOW_GRADIENT_FILTERS filters from
 * k = blockIdx.y * SHALLOW_GRADIENT_FILTERS: over the positions (n, p) of piece blockIdx.x (a grid
 * stride over N*OH*OW / 4 quads of 4 positions), the sum of dy[n, k, p] times the window's tap
 * j = (c, r, s) (x[n, c, oh*stride + r - padding, ...], 0 in the padding), and at j = C*R*S the
 * sum of dy[n, k, p] (db). The block then adds its threads' sums, warps by shuffles and the 8
 * warps in order: the same order on every run. KH x KW as in with_kernel_size; without PADDED
 * (padding 0) every tap of a window is inside the image, and its bounds are not checked (with
 * the checks, the 9 taps' checks and 64-bit addresses are most of the instructions a thread
 * issues). */
template <int KH, int KW, bool PADDED>
__global__ void __launch_bounds__(SHALLOW_GRADIENT_THREADS, 2) /* two blocks a multiprocessor */
    shallow_weight_gradient_kernel(const float *x, const float *dy, float *partial,
                                   conv_geometry g, fast_divider by_quads,
                                   fast_divider by_out_width)
{
    wait_for_previous_kernel();
    /* the window's taps: 9 for a 3x3 layer (of one channel: no other applies), else up to 12 */
    constexpr int TAPS = KH && KH * KW <= SHALLOW_GRADIENT_TAPS ? KH * KW : SHALLOW_GRADIENT_TAPS;
    constexpr int COLUMNS = TAPS + 1, SUMS = SHALLOW_GRADIENT_FILTERS * COLUMNS;
    __shared__ float warp_sums[SHALLOW_GRADIENT_THREADS / 32][SUMS];
    const int depth = (int)conv_rows(g), positions = (int)conv_positions(g);
    const int quads = (int)(g.n * positions / 4), per_image = positions / 4;
    const int first = blockIdx.y * SHALLOW_GRADIENT_FILTERS;
    const int height = (int)g.height, width = (int)g.width;
    const int out_width = (int)g.out_width, stride = (int)g.stride, padding = (int)g.padding;
    const int kh = KH ? KH : (int)g.kh, kw = KW ? KW : (int)g.kw;
    float sums[SHALLOW_GRADIENT_FILTERS][COLUMNS] = {};
    for (int q = blockIdx.x * blockDim.x + threadIdx.x; q < quads; q += gridDim.x * blockDim.x) {
        int n = by_quads.quotient(q), p0 = (q - n * per_image) * 4;
        float4 gradients[SHALLOW_GRADIENT_FILTERS];
#pragma unroll
        for (int f = 0; f < SHALLOW_GRADIENT_FILTERS; f++) {
            const float *plane = dy + ((int64_t)n * g.filters + first + f) * positions;
            gradients[f] = first + f < g.filters
                               ? __ldg(reinterpret_cast<const float4 *>(plane + p0))
                               : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
        const float *image = x + (int64_t)n * g.channels * height * width;
#pragma unroll
        for (int e = 0; e < 4; e++) {
            int p = p0 + e, oh = by_out_width.quotient(p), ow = p - oh * out_width;
            int top = oh * stride - padding, left = ow * stride - padding;
#pragma unroll
            for (int j = 0; j < TAPS; j++) { /* tap j = (c, r, s), 0 in the padding */
                int c = j / (kh * kw), r = j / kw % kh, s = j % kw, h = top + r, v = left + s;
                bool inside = j < depth &&
                              (!PADDED || (0 <= h && h < height && 0 <= v && v < width));
                float pixel = inside ? __ldg(image + (c * height + h) * width + v) : 0.0f;
#pragma unroll
                for (int f = 0; f < SHALLOW_GRADIENT_FILTERS; f++)
                    sums[f][j] = fmaf(component(gradients[f], e), pixel, sums[f][j]);
            }
#pragma unroll
            for (int f = 0; f < SHALLOW_GRADIENT_FILTERS; f++)
                sums[f][TAPS] += component(gradients[f], e);
        }
    }
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
    for (int f = 0; f < SHALLOW_GRADIENT_FILTERS; f++)
#pragma unroll
        for (int j = 0; j < COLUMNS; j++) {
            float total = warp_sum(sums[f][j]);
            if (lane == 0) warp_sums[warp][f * COLUMNS + j] = total;
        }
    __syncthreads();
    int columns = depth + 1; /* partial's: the taps, then db's */
    for (int i = threadIdx.x; i < SHALLOW_GRADIENT_FILTERS * columns; i += blockDim.x) {
        int f = i / columns, j = i % columns;
        if (first + f >= g.filters) continue;
        float total = 0.0f;
        for (int w = 0; w < SHALLOW_GRADIENT_THREADS / 32; w++)
            total += warp_sums[w][f * COLUMNS + (j == depth ? TAPS : j)];
        partial[((int64_t)blockIdx.x * g.filters + first + f) * columns + j] = total;
    }
}

/* dw and db: partial sums of pieces of the depth N*OH*OW, by the shallow kernel or the product,
 * then added in order. */
static int product_weight_gradient(const float *x, const float *dy, float *dw, float *db,
                                   float *partial, const conv_geometry &g)
{
    int64_t columns = conv_rows(g) + 1, pieces;
    int status;
    if (shallow_weight_gradient_applies(dy, g)) {
        pieces = shallow_weight_split(g);
        status = shallow_weight_gradient(x, dy, partial, g);
    } else {
        depth_split split = weight_split(g);
        int positions = (int)conv_positions(g);
        fast_divider by_positions(positions), by_out_width((int)g.out_width);
        GradientRows rows = {dy, (int)g.filters, positions, by_positions};
        InputTaps taps = {x, (int)g.channels, (int)g.height, (int)g.width, (int)g.kh, (int)g.kw,
                          (int)g.stride, (int)g.padding, (int)g.out_width, positions,
                          by_positions, by_out_width};
        /* partial[piece, k, col] = the sum over the piece's depth */
        StridedResult sums = {partial, NULL, g.filters * columns, columns};
        pieces = split.pieces;
        status = launch_tiled_product("conv backward (dw) tiled_product_kernel", rows, taps, sums,
                                      g.filters, columns, g.n * positions, split.pieces,
                                      split.piece);
    }
    if (status != S2C_CUDA_OK) return status;
    int64_t outputs = g.filters * columns;
    launch_overlapped(add_pieces_kernel, pieces_blocks(outputs, pieces), pieces_threads(pieces), 0,
                      partial, dw, db, pieces, g.filters, columns);
    LAUNCH_CHECK("add_pieces_kernel");
    return S2C_CUDA_OK;
}

__global__ void gradient_transform_kernel(const float *dy, float *e, conv_geometry g,
                                          winograd_shape shape);
__global__ void bias_from_blocks_kernel(const float *entry, float *db, int64_t tiles,
                                        float scale);
/* One block per filter adds T blocks' values: with 256 threads, each thread's loads would wait in
 * turns one after another. */
#define BIAS_THREADS 1024
#define PAIRS_A_BLOCK 16 /* weights_from_products_kernel's block: 16 pairs x 16 entries */

/* Piece p of product xi of a stored operand, as product z = xi * pieces + p of depth `piece`: its
 * depth k is the product's p * piece + k (0 past the product's depth). The split products of
 * tiled_product.cuh sum one product's pieces; these are 16 products, each in pieces. */
struct PieceOf {
    StridedOperand whole;
    int pieces, piece, depth;
    __device__ float operator()(int z, int i, int k) const
    {
        int first = z % pieces * piece;
        return first + k < depth ? whole(z / pieces, i, first + k) : 0.0f;
    }
    struct Column {
        const float *at; /* the piece's first element of the column */
        int left;        /* the product's depth left from there */
    };
    __device__ Column column(int z, int i) const
    {
        int first = z % pieces * piece;
        return {whole.column(z / pieces, i) + first * whole.depth_stride, depth - first};
    }
    __device__ float operator()(const Column &at, int k) const
    {
        return k < at.left ? __ldg(at.at + k * whole.depth_stride) : 0.0f;
    }
};
__global__ void weights_from_products_kernel(const float *partial, float *dw, int64_t pieces,
                                             int64_t pairs);

/* dw and db by Winograd's F(3x3, 2x2). For dy's 2x2 block e[k, t] of output block t = (n, th, tw)
 * and x's 4x4 patch d[c, t] under it (rung 4's patch), the block's share of dw[k, c] is the 3x3
 * correlation of d with e, so, with rung 4's B and G' = [1 0; 1/2 1/2; 1/2 -1/2; 0 1],
 * A'^T = [1 1 1 0; 0 1 -1 0; 0 1 1 -1]:
 *
 *     E[xi][k, t] = (G' e[k, t] G'^T)[xi]                   gradient_transform_kernel
 *     V[xi][t, c] = (B^T d[c, t] B)[xi]                     rung 4's input transform, tile-major
 *     M[xi][k, c] = sum over t of E[xi][k, t] V[xi][t, c]   16 products, split along t
 *     dw[k, c]    = A'^T M[.][k, c] A'                      weights_from_products_kernel
 *
 * and db[k] = 4 x the sum over t of E[5][k, t] ((G' e G'^T)[1][1] is a quarter of e's sum). Where
 * winograd_block takes 4x4 blocks, the same with rung 6's 36 entries, F(3x3, 4x4)
 * (06_winograd_4x4.cu), and db the sum of E[7] (e's whole sum). Then, when x holds a NaN or an
 * Inf, dw again by the definition (nan_recompute.cu). */
static int winograd_weight_gradient(const float *x, const float *dy, float *dw, float *db,
                                    float *scratch, float *flags, const conv_geometry &g)
{
    bool large = winograd_block(g) == 4;
    winograd_shape shape = winograd_tiles(g, large ? 4 : 2);
    int64_t k = g.filters, c = g.channels, t = shape.tiles;
    int64_t entries = large ? WINOGRAD_4X4_ENTRIES : WINOGRAD_ENTRIES;
    depth_split split = winograd_weight_split(g);
    float *e = scratch, *v = e + entries * k * t, *partial = v + entries * t * c;
    int status = S2C_CUDA_OK;
    if (large) {
        status = winograd_4x4_gradient_transform(dy, e, g);
    } else {
        launch_overlapped(gradient_transform_kernel, blocks_for(k * t, TRANSFORM_THREADS),
                          TRANSFORM_THREADS, 0, dy, e, g, shape);
        LAUNCH_CHECK("gradient_transform_kernel");
    }
    if (status != S2C_CUDA_OK) return status;
    const float *sum_entry = e + (large ? 7 : 5) * k * t;
    launch_overlapped(bias_from_blocks_kernel, (unsigned)k, BIAS_THREADS, 0, sum_entry, db, t,
                      large ? 1.0f : 4.0f);
    LAUNCH_CHECK("bias_from_blocks_kernel");
    /* rung 6's transform flags the blocks of patches that hold a NaN or an Inf as it reads x,
     * where rung 4's leaves it to conv_flag_nonfinite below */
    float *x_flags = large ? partial + entries * split.pieces * k * c : flags;
    int64_t flag_count = large ? winograd_4x4_input_transform_blocks(g) : CONV_FLAG_BLOCKS;
    status = large ? winograd_4x4_input_transform(x, v, x_flags, g, true)
                   : winograd_input_transform(x, v, g, true);
    if (status != S2C_CUDA_OK) return status;
    /* product xi: M[xi] [k, c] = E[xi] [k, t] @ V[xi] [t, c]; its pieces are products of their
     * own (z = xi * pieces + piece), each into partial[z] */
    int pieces = (int)split.pieces, piece = (int)split.piece, depth = (int)t;
    PieceOf rows = {{e, k * t, t, 1}, pieces, piece, depth};
    PieceOf columns = {{v, t * c, 1, c}, pieces, piece, depth};
    StridedResult sums = {partial, NULL, k * c, c};
    status = launch_tiled_product("conv backward (dw) winograd tiled_product_kernel", rows,
                                  columns, sums, k, c, split.piece, entries * split.pieces, 0);
    if (status != S2C_CUDA_OK) return status;
    if (large) {
        status = winograd_4x4_weights(partial, dw, split.pieces, k * c);
        if (status != S2C_CUDA_OK) return status;
    } else {
        int64_t pair_blocks = blocks_for(k * c, PAIRS_A_BLOCK);
        launch_overlapped(weights_from_products_kernel, pair_blocks,
                          PAIRS_A_BLOCK * WINOGRAD_ENTRIES, 0, partial, dw, split.pieces, k * c);
        LAUNCH_CHECK("weights_from_products_kernel");
    }
    if (!large) {
        status = conv_flag_nonfinite(x, g.n * c * g.height * g.width, x_flags);
        if (status != S2C_CUDA_OK) return status;
    }
    return conv_recompute_weight_gradient(x, dy, dw, x_flags, flag_count, g);
}

/* E[xi][k, t] = (G' e G'^T)[xi] for e = dy[n, k, 2th .. 2th + 1, 2tw .. 2tw + 1] (0 past the
 * edge), t = (n, th, tw). */
__global__ void gradient_transform_kernel(const float *dy, float *e, conv_geometry g,
                                          winograd_shape shape)
{
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; /* k * T + t */
    if (i >= g.filters * shape.tiles) return;
    float block[2][2];
    winograd_gradient_block<2>(dy, g, shape, i, block);
    float ge[4][2]; /* G' e */
    for (int b = 0; b < 2; b++) {
        ge[0][b] = block[0][b];
        ge[1][b] = 0.5f * (block[0][b] + block[1][b]);
        ge[2][b] = 0.5f * (block[0][b] - block[1][b]);
        ge[3][b] = block[1][b];
    }
    int64_t entry = g.filters * shape.tiles; /* the distance between entries xi and xi+1 */
    for (int a = 0; a < 4; a++) { /* (G' e) G'^T, row a */
        float h0 = ge[a][0], h1 = ge[a][1];
        float row[4] = {h0, 0.5f * (h0 + h1), 0.5f * (h0 - h1), h1};
        for (int j = 0; j < 4; j++)
            e[(a * 4 + j) * entry + i] = row[j];
    }
}

/* db[k] = scale x the sum over t of entry[k, t]: a block of BIAS_THREADS per filter, its threads'
 * sums added in a fixed order (block_sum: the same bits on every run). */
__global__ void bias_from_blocks_kernel(const float *entry, float *db, int64_t tiles, float scale)
{
    wait_for_previous_kernel();
    float total = 0.0f;
#pragma unroll 4 /* four loads in flight before their additions */
    for (int64_t t = threadIdx.x; t < tiles; t += blockDim.x)
        total += entry[blockIdx.x * tiles + t];
    total = block_sum(total);
    if (threadIdx.x == 0) db[blockIdx.x] = scale * total;
}

/* dw[k, c] = A'^T M[.][k, c] A' for the block's PAIRS_A_BLOCK pairs i = k * C + c, M[xi] the sum
 * of its pieces (product xi's piece at z = xi * pieces + piece), added in order: thread (xi, pair)
 * adds one entry's pieces, then a thread per pair transforms its 16 entries: a thread per pair
 * adding all 16 would make hundreds of loads, too few threads to keep them in flight. */
__global__ void weights_from_products_kernel(const float *partial, float *dw, int64_t pieces,
                                             int64_t pairs)
{
    wait_for_previous_kernel();
    __shared__ float m[PAIRS_A_BLOCK][WINOGRAD_ENTRIES + 1];
    int64_t i = winograd_sum_pieces<PAIRS_A_BLOCK, WINOGRAD_ENTRIES>(partial, pieces, pairs, m);
    if (i < 0) return;
    const float *entry = m[i % PAIRS_A_BLOCK];
    float am[3][4]; /* A'^T M */
    for (int e = 0; e < 4; e++) {
        float m0 = entry[e], m1 = entry[4 + e], m2 = entry[8 + e], m3 = entry[12 + e];
        am[0][e] = m0 + m1 + m2;
        am[1][e] = m1 - m2;
        am[2][e] = m1 + m2 - m3;
    }
    for (int r = 0; r < 3; r++) { /* (A'^T M) A', row r */
        float out[3] = {am[r][0] + am[r][1] + am[r][2], am[r][1] - am[r][2],
                        am[r][1] + am[r][2] - am[r][3]};
        for (int s = 0; s < 3; s++)
            dw[i * 9 + r * 3 + s] = out[s];
    }
}

/* dw[k, col] (or db[k] for the last column) = the pieces' sums added in a fixed order. */
__global__ void add_pieces_kernel(const float *partial, float *dw, float *db, int64_t pieces,
                                  int64_t filters, int64_t columns)
{
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    float total = sum_of_pieces(partial, pieces, filters * columns, i);
    if (threadIdx.y != 0 || i >= filters * columns) return;
    int64_t k = i / columns, col = i % columns;
    if (col == columns - 1)
        db[k] = total;
    else
        dw[k * (columns - 1) + col] = total;
    // END SOLUTION
}

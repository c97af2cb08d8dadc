/* conv.cuh -- what the rungs of the conv2d ladder (week 16) share.
 *
 * Every forward rung computes the same cross-correlation of the contract,
 *
 *     y[n, k, oh, ow] = b[k] + sum over c, r, s of w[k, c, r, s] * x[n, c, oh*stride + r - padding,
 *                                                                     ow*stride + s - padding]
 *
 * (x read as zero outside the image), from x [N, C, H, W], w [K, C, R, S], b [K] into
 * y [N, K, OH, OW], and exports the same launcher on the default stream:
 *
 *     extern "C" int s2c_cuda_conv2d_<name>(const float *x, const float *w, const float *b,
 *                                           float *y, float *scratch, const conv_geometry *g);
 *
 * `scratch` is the caller's device memory of s2c_cuda_conv2d_scratch(g, rung) floats (NULL when
 * that is 0). The rungs, in ladder order, and the files that hold them:
 *
 *     1 direct         01_direct.cu         a thread per output, the definition
 *     2 im2col         02_im2col_gemm.cu    im2col into scratch, then the SGEMM ladder's best rung
 *     3 implicit_gemm  03_implicit_gemm.cu  the same product, its loads gathering from x directly
 *     4 winograd       04_winograd.cu       F(2x2, 3x3): 16 products instead of 36 per 2x2 tile
 *     5 fft            05_fft.cu            products of spectra, through cuFFT (loaded at run time)
 *     6 winograd_4x4   06_winograd_4x4.cu   F(4x4, 3x3): 36 products instead of 144 per 4x4 tile
 *     7 shallow        07_shallow.cu        direct again for C*R*S <= 32: a window in registers,
 *                                           every filter of a group applied to it
 *
 * Beside them: dispatch.cu makes the ladder's choices (the rung "best" runs, the backward's
 * Winograd, the scratch sizes); backward.cu is the backward, dw and db in backward_dw.cu, dx in
 * backward_dx.cu, and the passes of the definition for a NaN or an Inf in nan_recompute.cu;
 * im2col.cu holds the ops im2col and col2im. */
#ifndef S2C_CONV_CUH
#define S2C_CONV_CUH

#include <type_traits>

#include "../common.h"

typedef struct s2c_conv_geometry conv_geometry;

/* The rungs' numbers (s2c_cuda_conv2d_scratch's `rung`); 0 is the backward's scratch. */
enum conv_rung {
    CONV_BACKWARD = 0,
    CONV_DIRECT = 1,
    CONV_IM2COL = 2,
    CONV_IMPLICIT_GEMM = 3,
    CONV_WINOGRAD = 4,
    CONV_FFT = 5,
    CONV_WINOGRAD_4X4 = 6,
    CONV_SHALLOW = 7
};

/* The deepest window (C*R*S) rung 7 holds in registers is S2C_CUDA_SHALLOW_DEPTH (s2c_cuda.h): a
 * 5x5 layer of one channel (25), a 3x3 layer of up to three (27). */

/* One output of a shallow convolution (rung 7, and the fused inference kernel built on it): the
 * window held in registers times a filter in shared memory (16-byte aligned), rung 1's sum, the
 * taps in order from 0 (padding multiplied too: a NaN weight gives NaN there, as in PyTorch); the
 * zeros past the depth add nothing. */
template <int DEPTH>
static __device__ __forceinline__ float window_dot(const float (&window)[DEPTH],
                                                   const float (&filter)[DEPTH])
{
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < DEPTH; j += 4) {
        float4 four = *reinterpret_cast<const float4 *>(&filter[j]);
        sum = fmaf(window[j], four.x, sum);
        sum = fmaf(window[j + 1], four.y, sum);
        sum = fmaf(window[j + 2], four.z, sum);
        sum = fmaf(window[j + 3], four.w, sum);
    }
    return sum;
}

/* The fused inference kernels' shared pieces (inference/conv_bias_relu_pool.cu). */

/* filters[f][j] = filter first + f's tap j for the `group` filters from `first`, each `depth`
 * taps deep, by the block's threads; zeros past the group and the depth add nothing. The caller
 * synchronizes before reading. */
template <int FILTERS, int DEPTH>
static __device__ __forceinline__ void stage_filters(float (&filters)[FILTERS][DEPTH],
                                                     const float *w, int first, int group,
                                                     int depth)
{
    for (int e = threadIdx.x; e < FILTERS * DEPTH; e += blockDim.x) {
        int f = e / DEPTH, j = e % DEPTH;
        filters[f][j] = f < group && j < depth ? w[(int64_t)(first + f) * depth + j] : 0.0f;
    }
}

/* window[j] = tap j = (c, r, s) of the kh x kw window at (top, left) of `image` (its channels
 * height x width each): padding, and taps past `depth`, read as zero. */
template <int DEPTH>
static __device__ __forceinline__ void load_window(float (&window)[DEPTH], const float *image,
                                                   int top, int left, int depth, int kh, int kw,
                                                   int height, int width)
{
#pragma unroll
    for (int j = 0; j < DEPTH; j++) {
        int c = j / (kh * kw), h = top + j / kw % kh, v = left + j % kw;
        bool inside = j < depth && 0 <= h && h < height && 0 <= v && v < width;
        window[j] = inside ? __ldg(image + ((int64_t)c * height + h) * width + v) : 0.0f;
    }
}

static inline __host__ __device__ int64_t conv_rows(const conv_geometry &g)
{
    return g.channels * g.kh * g.kw; /* C*R*S: the depth of the forward's product */
}
static inline __host__ __device__ int64_t conv_positions(const conv_geometry &g)
{
    return g.out_height * g.out_width; /* OH*OW */
}

/* Call f(KH, KW) with the layer's kernel size as compile-time constants (std::integral_constant)
 * for the curriculum's 3x3 and 5x5 layers, else with 0, 0 (the loaders then read it at run time).
 * The loaders split an index of C*R*S into (c, r, s) for every element they load: a division by
 * a variable costs about 20 instructions, as many as the FMAs that element feeds; by a constant
 * the compiler makes it a multiplication and a shift. */
template <class F>
static int with_kernel_size(const conv_geometry &g, F f)
{
    using std::integral_constant;
    if (g.kh == 3 && g.kw == 3) return f(integral_constant<int, 3>(), integral_constant<int, 3>());
    if (g.kh == 5 && g.kw == 5) return f(integral_constant<int, 5>(), integral_constant<int, 5>());
    return f(integral_constant<int, 0>(), integral_constant<int, 0>());
}

/* n / divisor for 0 <= n < 2^31, the divisor fixed for a whole launch, as a multiplication and a
 * shift (Granlund and Montgomery, 1994; CUTLASS's FastDivmod): with m = ceil(2^p / divisor) for
 * p = 31 + ceil(log2 divisor), n / divisor = (n * m) >> p. The weight gradient's loaders split
 * every index they load into (image, row, column) by the layer's sizes, which no template fixes. */
struct fast_divider {
    int divisor;
    unsigned multiplier, shift;
    fast_divider(int d) : divisor(d), multiplier(0), shift(0)
    {
        int log = 0;
        while ((1u << log) < (unsigned)d) log++;
        if (d > 1) {
            multiplier = (unsigned)(((1ull << (31 + log)) + d - 1) / d);
            shift = log - 1; /* p - 32 */
        }
    }
    __device__ int quotient(int n) const
    {
        return divisor == 1 ? n : (int)(__umulhi((unsigned)n, multiplier) >> shift);
    }
};

/* Blocks that look for a NaN or an Inf in w (or x) in the backward, one flag each
 * (nan_recompute.cu): a grid of them keeps enough loads in flight, where one block's threads
 * would wait for theirs one after another. */
#define CONV_FLAG_BLOCKS 256

/* The scratch floats each rung needs (defined by the rung's file; 0 for none). */
int64_t conv_im2col_scratch(const conv_geometry &g);
int64_t conv_winograd_scratch(const conv_geometry &g);
int64_t conv_fft_scratch(const conv_geometry &g);
int64_t conv_winograd_4x4_scratch(const conv_geometry &g);
int64_t conv_backward_scratch(const conv_geometry &g);

/* Rung 4 on a 3x3 stride-1 geometry, also for the backward's dx (04_winograd.cu): y = x convolved
 * with w (+ b, unless b is NULL); with `turned`, w is read as the [C, K, 3, 3] filters
 * w[c, k, 2 - r, 2 - s] of a w stored [K, C, 3, 3]. */
int conv_winograd(const float *x, const float *w, const float *b, float *y, float *scratch,
                  const conv_geometry &g, bool turned);
/* The same by rung 6, F(4x4, 3x3) (06_winograd_4x4.cu). */
int conv_winograd_4x4(const float *x, const float *w, const float *b, float *y, float *scratch,
                      const conv_geometry &g, bool turned);

/* Winograd's tiles: the blocks of 2x2 (rung 4) or 4x4 (rung 6) outputs, and the entries of a
 * transformed tile, 4x4 or 6x6. */
#define WINOGRAD_ENTRIES 16
#define WINOGRAD_4X4_ENTRIES 36
struct winograd_shape {
    int64_t tiles_high, tiles_wide, tiles; /* ceil(OH/block), ceil(OW/block), all (N of each) */
};
static inline winograd_shape winograd_tiles(const conv_geometry &g, int64_t block = 2)
{
    int64_t high = ceil_div(g.out_height, block), wide = ceil_div(g.out_width, block);
    return {high, wide, g.n * high * wide};
}
/* The patch of thread i of a transform kernel: plane c (a channel, or a filter) of image n, and the
 * top left corner of its block of block x block outputs, for i = c * T + t, or t * C + c when
 * `tile_major` (t = (n, th, tw) a block). */
struct winograd_patch {
    int64_t c, n, top, left;
};
static inline __host__ __device__ winograd_patch winograd_patch_of(int64_t i, int64_t planes,
                                                                   winograd_shape shape,
                                                                   int64_t block, bool tile_major)
{
    int64_t c = tile_major ? i % planes : i / shape.tiles;
    int64_t t = tile_major ? i / planes : i % shape.tiles;
    int64_t per_image = shape.tiles_high * shape.tiles_wide;
    return {c, t / per_image, t % per_image / shape.tiles_wide * block,
            t % shape.tiles_wide * block};
}
/* The grid of a pass that recomputes a result by its definition where a NaN or an Inf was flagged
 * (a grid stride over `blocks` blocks' work): two blocks a multiprocessor at most, since each
 * block first reads every flag and, as nearly always, returns: more blocks would only read the
 * flags more often. */
static inline int64_t by_definition_blocks(int64_t blocks)
{
    int64_t most = 2 * (int64_t)device_multiprocessors();
    return blocks < most ? blocks : most;
}
/* Whether any of flags[0 .. count) is not 0, for every thread of the block (all must call it):
 * the flags a kernel's blocks set on finding a NaN or an Inf, read by the pass that then
 * recomputes a result by its definition. */
static __device__ bool any_flag_set(const float *flags, int64_t count)
{
    int set = 0;
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) set |= flags[i] != 0.0f;
    return __syncthreads_or(set);
}

/* The weight gradient's dy block of thread i = k * T + t: block[a][b] = dy[n, k, top + a,
 * left + b], 0 past dy's edge (dy is the forward's output, [N, K, OH, OW]). */
template <int BLOCK>
static __device__ void winograd_gradient_block(const float *dy, const conv_geometry &g,
                                               winograd_shape shape, int64_t i,
                                               float block[BLOCK][BLOCK])
{
    winograd_patch at = winograd_patch_of(i, g.filters, shape, BLOCK, false);
    const float *plane = dy + (at.n * g.filters + at.c) * g.out_height * g.out_width;
    for (int a = 0; a < BLOCK; a++)
        for (int b = 0; b < BLOCK; b++) {
            bool inside = at.top + a < g.out_height && at.left + b < g.out_width;
            block[a][b] = inside ? plane[(at.top + a) * g.out_width + at.left + b] : 0.0f;
        }
}

/* The first half of a kernel that turns the weight gradient's products into dw: a block of
 * PAIRS x ENTRIES threads, thread (xi, pair) adding the pieces of entry xi of pair
 * i = blockIdx.x * PAIRS + pair (product xi's piece at z = xi * pieces + piece) in order, into
 * m[pair][xi]. Returns the pair i for the thread that then transforms the pair's ENTRIES
 * entries (xi 0), else -1. */
template <int PAIRS, int ENTRIES>
static __device__ int64_t winograd_sum_pieces(const float *partial, int64_t pieces, int64_t pairs,
                                              float m[PAIRS][ENTRIES + 1])
{
    int xi = threadIdx.x / PAIRS, local = threadIdx.x % PAIRS;
    int64_t i = blockIdx.x * (int64_t)PAIRS + local;
    float total = 0.0f;
    if (i < pairs)
        for (int64_t piece = 0; piece < pieces; piece++)
            total += partial[(xi * pieces + piece) * pairs + i];
    m[local][xi] = total;
    __syncthreads();
    return xi == 0 && i < pairs ? i : -1;
}

/* The block Winograd takes for a layer's outputs ("best" and the backward, dispatch.cu): 4
 * (rung 6) when its 36 products a block come to fewer than rung 4's 16 a block, else 2. Blocks
 * past the edge count: 13x13 outputs take 16 blocks of 4x4 (576 products) or 49 of 2x2 (784). */
static inline int winograd_block(const conv_geometry &g)
{
    int64_t large = WINOGRAD_4X4_ENTRIES * winograd_tiles(g, 4).tiles;
    return large < WINOGRAD_ENTRIES * winograd_tiles(g, 2).tiles ? 4 : 2;
}

/* The input transforms, V [entries, C, T], or [entries, T, C] when tile_major (the backward's
 * dw): rung 4's and rung 6's. Rung 6's also sets flags[block] (unless flags is NULL) to 1 when
 * the block's patches hold a NaN or an Inf, else 0, for each of its
 * winograd_4x4_input_transform_blocks(g) blocks. */
int winograd_input_transform(const float *x, float *v, const conv_geometry &g, bool tile_major);
int winograd_4x4_input_transform(const float *x, float *v, float *flags, const conv_geometry &g,
                                 bool tile_major);
int64_t winograd_4x4_input_transform_blocks(const conv_geometry &g);
/* Rung 6's weight gradient transforms (06_winograd_4x4.cu): E [36, K, T] from dy's 4x4 blocks,
 * and dw [K, C, 3, 3] from the 36 products' partial sums [36 x pieces, K, C]. */
int winograd_4x4_gradient_transform(const float *dy, float *e, const conv_geometry &g);
int winograd_4x4_weights(const float *partial, float *dw, int64_t pieces, int64_t pairs);

/* dx as a forward convolution (stride 1): dy [N, K, OH, OW] through the turned filters, K
 * channels in and C filters out, into [N, C, H, W]. */
static inline conv_geometry conv_input_gradient_geometry(const conv_geometry &g)
{
    conv_geometry turned = g;
    turned.channels = g.filters, turned.filters = g.channels;
    turned.height = g.out_height, turned.width = g.out_width;
    turned.out_height = g.height, turned.out_width = g.width;
    turned.padding = g.kh - 1 - g.padding;
    return turned;
}

/* The backward's parts (backward.cu calls them; dispatch.cu decides which way each goes). */
bool conv_backward_takes_winograd(const conv_geometry &g); /* dispatch.cu */
/* dw and db (backward_dw.cu); `work` is conv_weight_gradient_scratch(g) floats, `x_flags`
 * CONV_FLAG_BLOCKS floats. */
int64_t conv_weight_gradient_scratch(const conv_geometry &g);
int conv_weight_gradient(const float *x, const float *dy, float *dw, float *db, float *work,
                         float *x_flags, const conv_geometry &g);
/* dx (backward_dx.cu); `winograd` is conv_input_gradient_scratch(g) floats, `flags`
 * CONV_FLAG_BLOCKS floats. */
int64_t conv_input_gradient_scratch(const conv_geometry &g);
int conv_input_gradient(const float *w, const float *dy, float *dx, float *winograd, float *flags,
                        const conv_geometry &g);
/* The passes of the definition (nan_recompute.cu): flags[block] = 1 where a block's share of
 * values[0 .. count) holds a NaN or an Inf (CONV_FLAG_BLOCKS blocks), else 0; dx or dw again by
 * the definition when any of the flags is set. */
int conv_flag_nonfinite(const float *values, int64_t count, float *flags);
int conv_recompute_input_gradient(const float *w, const float *dy, float *dx, const float *flags,
                                  const conv_geometry &g);
int conv_recompute_weight_gradient(const float *x, const float *dy, float *dw, const float *flags,
                                   int64_t flag_count, const conv_geometry &g);

#endif

/* inference.c -- inference's fused convolution (week 13): conv + bias + ReLU, then max-pooling
 * over pool x pool windows at stride pool, in one call that keeps nothing for a backward (no
 * argmax, no copy of x, no [n, k, oh, ow] activation in memory: only the pooled output leaves).
 * x [n, c, h, w]; weights [k, c, r, s]; bias [k]; y [n, k, oh / pool, ow / pool], where
 * oh = (h + 2 * padding - r) / stride + 1 (likewise ow); pool = 1 is no pooling.
 *
 * A layer takes one of three paths (numbers: one core of the AMD EPYC CI machine, 256 images):
 * - direct loops, for layers of few filters (K <= DIRECT_FILTERS, LeNet-5's 6 and 16), whose GEMM
 *   tiles of 12 filters would be half empty, or of few taps (C * R * S <= DIRECT_TAPS, the
 *   Fashion CNN's first layer: 9), whose im2col copies cost as much as their products: a register
 *   tile of 8 filters x 16 outputs of a row over a zero-padded copy of the image takes every tap
 *   in turn; with 2 x 2 pooling the tile holds two rows, and is pooled, biased and ReLU'd in the
 *   registers, so the convolution never reaches memory (the Fashion CNN's conv1 8.0 -> 2.5 ms,
 *   LeNet-5's conv1 and conv2 1.3 + 1.8 -> 0.5 + 0.9 ms);
 * - Winograd's F(2 x 2, 3 x 3) (winograd.c) for 3 x 3 filters at stride 1 pooled 2 x 2 over enough
 *   channels: 2.7x fewer multiplies, through 16 GEMMs (the Fashion CNN's conv2 27 -> 14 ms);
 * - otherwise im2col and s2c_gemm (whose micro-kernel is the widest SIMD the CPU runs, chosen at
 *   run time: MATMUL.md) over a group of images, the convolution landing in a scratch that stays
 *   in the cache, and an epilogue that reads it once: the max of each window, plus the bias,
 *   through ReLU.
 * Adding the bias and ReLU after the max gives the same numbers as before it: rounding v + b is
 * monotone in v, as ReLU is, so both commute with the max, and a NaN wins the max and stays NaN
 * through both; the epilogue then does them once per window, not once per element. */
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define DIRECT_FILTERS 16 /* a layer of at most this many filters is convolved by direct loops, */
#define DIRECT_TAPS 32 /* and so is one whose filters have at most this many taps (c * r * s) */
#define GROUP_FLOATS 131072 /* 512 KB: the most a group's convolution holds, in the L2 cache */
#define WINOGRAD_CHANNELS 8 /* the fewest input channels a layer goes through winograd.c with */
#define WINOGRAD_IMAGES 2 /* the fewest images a call goes through winograd.c with */
#define WINOGRAD_TILES 256 /* about how many 2 x 2 tiles one Winograd group of images takes */

/* Every size >= 1, the convolution's window fits the padded input, and the pooling window fits
 * the convolution's output. */
static inline int fused_sizes_ok(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k,
                                 int64_t r, int64_t s, int64_t stride, int64_t padding,
                                 int64_t pool)
{
    return n >= 1 && c >= 1 && h >= 1 && w >= 1 && k >= 1 && r >= 1 && s >= 1 && stride >= 1 &&
           padding >= 0 && pool >= 1 && h + 2 * padding >= r && w + 2 * padding >= s &&
           s2c_out_size(h, r, stride, padding) >= pool && s2c_out_size(w, s, stride, padding) >= pool;
}

/* y_plane [ph, pw] = relu(max over each pool x pool window of plane [oh, ow] + bias). Window
 * offsets (i, j) challenge the window's first element in row-major order along a whole output
 * row (a loop the compiler vectorizes); a NaN wins and then stays. Returns S2C_OK. */
static inline int pool_bias_relu(const float *plane, int64_t ow, float bias, int64_t pool,
                                  float *y_plane, int64_t ph, int64_t pw)
{
    /* BEGIN SOLUTION week 13, task conv2d_bias_relu_pool */
    for (int64_t py = 0; py < ph; py++) {
        float *y_row = y_plane + py * pw;
        const float *top = plane + py * pool * ow;
        for (int64_t px = 0; px < pw; px++)
            y_row[px] = top[px * pool];
        for (int64_t i = 0; i < pool; i++)
            for (int64_t j = (i == 0); j < pool; j++)
                for (int64_t px = 0; px < pw; px++) {
                    float value = top[i * ow + px * pool + j], best = y_row[px];
                    /* best == best: best is not NaN; !(value <= best): value is greater or NaN */
                    y_row[px] = best == best && !(value <= best) ? value : best;
                }
        for (int64_t px = 0; px < pw; px++) {
            float value = y_row[px] + bias;
            y_row[px] = value <= 0.0f ? 0.0f : value; /* ReLU; NaN <= 0 is false: NaN stays */
        }
    }
    return S2C_OK;
    /* END SOLUTION */
}

/* The direct loops' register tile: FILTER_BLOCK filters x LANES outputs of a row, whose sums stay
 * in registers while every tap of the window is added. `lanes` is GCC's vector type of LANES
 * floats (also clang's): arithmetic on it compiles to the widest SIMD the build targets (one
 * AVX-512 register, two AVX2 ones, four SSE ones), as the flags that choose the matmul ladder's
 * micro-kernel (matmul.c) do; a tile is 8 registers of sums on AVX-512. */
#define FILTER_BLOCK 8
#define LANES 16
typedef float lanes __attribute__((vector_size(LANES * sizeof(float))));

/* packed [ceil(k / FILTER_BLOCK)][taps][FILTER_BLOCK]: each block's weights tap by tap, a
 * missing filter of the last block as zeros (computed, never stored). */
static inline void pack_filters(const float *weights, int64_t k, int64_t taps, float *packed)
{
    for (int64_t k0 = 0; k0 < k; k0 += FILTER_BLOCK)
        for (int64_t tap = 0; tap < taps; tap++)
            for (int64_t f = 0; f < FILTER_BLOCK; f++)
                packed[(k0 * taps) + tap * FILTER_BLOCK + f] =
                    k0 + f < k ? weights[(k0 + f) * taps + tap] : 0.0f;
}

/* The 2 x 2 max-pooling of a register tile: `lane_mask` holds a comparison's lanes (all bits set
 * where it holds), and the selects below are bitwise, as SIMD code makes them. */
typedef int32_t lane_mask __attribute__((vector_size(LANES * sizeof(int32_t))));

/* Lane by lane, *best = *value where it beats *best (greater, or NaN) and *best is not NaN: a NaN
 * wins and then stays, as in pool_bias_relu. (Vectors pass by pointer: a 64-byte vector passed
 * by value has no fixed calling convention on builds without AVX-512, and gcc warns of it.) */
static inline void nan_max(lanes *best, const lanes *value)
{
    lane_mask take = (*best == *best) & ~(*value <= *best);
    *best = (lanes)(((lane_mask)*value & take) | ((lane_mask)*best & ~take));
}

/* y_row[0 : count] = relu(max over each 2 x 2 window of the rows *top and *bottom + bias):
 * column pairs (2l, 2l + 1) of the row-wise max, its even and odd lanes shuffled side by side,
 * give output l < LANES / 2. */
static inline void store_pooled(const lanes *top, const lanes *bottom, float bias, float *y_row,
                                int64_t count)
{
    const lane_mask evens = {0, 2, 4, 6, 8, 10, 12, 14}, odds = {1, 3, 5, 7, 9, 11, 13, 15};
    lanes rows = *top;
    nan_max(&rows, bottom);
    lanes pooled = __builtin_shuffle(rows, evens), odd = __builtin_shuffle(rows, odds);
    nan_max(&pooled, &odd);
    pooled += bias;
    pooled = (lanes)((lane_mask)pooled & ~(pooled <= 0.0f)); /* ReLU; NaN <= 0 is false */
    if (count == LANES / 2) {
        memcpy(y_row, &pooled, LANES / 2 * sizeof(float)); /* one unaligned store */
    } else {
        for (int64_t l = 0; l < count; l++)
            y_row[l] = pooled[l];
    }
}

/* The convolution of one image [c, h, w] by direct loops over `padded` (the image with its zero
 * border, and LANES floats of slack after it: at stride 1 a tile's lanes past the row read there,
 * and are not stored), every tap multiplied, padding included (a NaN weight gives NaN there, as in
 * PyTorch and the im2col path). `packed`: pack_filters' weights. pool2 == 0: out [k, oh, ow] is
 * the convolution; pool2 == 1: out [k, oh / 2, ow / 2] is already relu(its 2 x 2 max-pooling +
 * bias): the tile holds two rows of outputs (16 registers of sums on AVX-512), which store_pooled
 * reduces, so the convolution never leaves the registers. */
static inline __attribute__((always_inline)) int
direct_convolution(const float *padded, const float *packed, const float *bias, float *out,
                   int64_t c, int64_t padded_h, int64_t padded_w, int64_t k, int64_t r, int64_t s,
                   int64_t stride, int64_t oh, int64_t ow, int pool2)
{
    /* BEGIN SOLUTION week 13, task conv2d_bias_relu_pool */
    const int64_t taps = c * r * s, rows = pool2 ? 2 : 1;
    const int64_t out_h = oh / rows, out_w = ow / rows;
    for (int64_t k0 = 0; k0 < k; k0 += FILTER_BLOCK) {
        const float *block = packed + k0 * taps;
        const int64_t filters = s2c_min(FILTER_BLOCK, k - k0);
        for (int64_t out_y = 0; out_y < out_h; out_y++)
            for (int64_t ox0 = 0; ox0 < out_w * rows; ox0 += LANES) {
                const int64_t lanes_left = s2c_min(LANES, ow - ox0);
                lanes sums[2][FILTER_BLOCK];
                for (int q = 0; q < rows; q++)
                    for (int f = 0; f < FILTER_BLOCK; f++)
                        sums[q][f] = (lanes){0.0f};
                const float *tap_weights = block;
                for (int64_t channel = 0; channel < c; channel++)
                    for (int64_t i = 0; i < r; i++)
                        for (int64_t j = 0; j < s; j++, tap_weights += FILTER_BLOCK)
                            for (int q = 0; q < rows; q++) {
                                const float *in_row =
                                    padded + (channel * padded_h + (out_y * rows + q) * stride + i) *
                                                 padded_w + ox0 * stride;
                                lanes pixels;
                                if (stride == 1) {
                                    memcpy(&pixels, in_row + j, sizeof pixels); /* unaligned load */
                                } else { /* a gather, lanes past the row left at zero */
                                    for (int l = 0; l < LANES; l++)
                                        pixels[l] = l < lanes_left ? in_row[l * stride + j] : 0.0f;
                                }
                                for (int f = 0; f < FILTER_BLOCK; f++)
                                    sums[q][f] += tap_weights[f] * pixels;
                            }
                /* constant bounds, unrolled: the sums stay in registers (a loop to `filters`
                 * would index them at run time, from memory) */
                #pragma GCC unroll 8
                for (int f = 0; f < FILTER_BLOCK; f++) {
                    if (f >= filters)
                        break;
                    float *out_row = out + ((k0 + f) * out_h + out_y) * out_w + ox0 / rows;
                    if (pool2) {
                        store_pooled(&sums[0][f], &sums[1][f], bias[k0 + f], out_row,
                                     s2c_min(LANES / 2, out_w - ox0 / 2));
                    } else if (lanes_left == LANES) {
                        memcpy(out_row, &sums[0][f], sizeof sums[0][f]); /* one unaligned store */
                    } else {
                        for (int64_t l = 0; l < lanes_left; l++)
                            out_row[l] = sums[0][f][l];
                    }
                }
            }
    }
    return S2C_OK;
    /* END SOLUTION */
}

/* What the images of one call share: the sizes, whether they go through Winograd's (use_winograd),
 * and the weights packed for the direct loops or transformed for Winograd's (NULL when the layer
 * goes through the im2col GEMM). */
struct fused_layer {
    int64_t c, h, w, k, r, s, stride, padding, pool, oh, ow;
    const float *weights, *bias, *packed;
    int winograd;
};

/* No NaN or infinity among values[0 .. count-1]: one vectorized pass, |v| <= FLT_MAX. */
static inline int all_finite(const float *values, int64_t count)
{
    int outside = 0;
    #pragma omp simd reduction(| : outside)
    for (int64_t i = 0; i < count; i++)
        outside |= !(fabsf(values[i]) <= FLT_MAX);
    return !outside;
}

static inline int is_direct(const struct fused_layer *l)
{
    return l->k <= DIRECT_FILTERS || l->c * l->r * l->s <= DIRECT_TAPS;
}

/* Winograd's (winograd.c) for 3 x 3 filters at stride 1 pooled 2 x 2, over enough channels that
 * its 16 products of depth c are worth a GEMM each, and at least WINOGRAD_IMAGES images: its
 * filter transform costs about one image's convolution (measured, the Fashion CNN's conv2: 0.21
 * against the GEMM's 0.18 ms for one image, 0.27 against 0.31 for two). Its transforms mix a
 * filter's taps: an infinity there would spread (Inf - Inf = NaN) to outputs that the
 * definition's sums keep finite, so weights holding a NaN or infinity take the GEMM, which
 * multiplies as the definition does (and so does a group of images holding one: fused_group). */
static inline int use_winograd(const struct fused_layer *l, int64_t n)
{
    return !is_direct(l) && l->r == 3 && l->s == 3 && l->stride == 1 && l->pool == 2 &&
           l->c >= WINOGRAD_CHANNELS && n >= WINOGRAD_IMAGES &&
           all_finite(l->weights, l->k * l->c * 9);
}

/* Images a work item takes: one for the direct loops; for Winograd's, about WINOGRAD_TILES tiles
 * (wide enough GEMMs, their operands, 12 KB a tile for the Fashion CNN's conv2, still in the L3
 * cache; measured best near 256); for the GEMM, as many as keep their convolution
 * [images, k, oh, ow] within GROUP_FLOATS (in the cache for the pooling). */
static inline int64_t images_per_group(const struct fused_layer *l, int64_t n)
{
    if (is_direct(l))
        return 1;
    if (l->winograd) {
        int64_t tiles = (l->oh / 2) * (l->ow / 2);
        return s2c_min(n, tiles >= WINOGRAD_TILES ? 1 : WINOGRAD_TILES / tiles);
    }
    int64_t fit = GROUP_FLOATS / (l->k * l->oh * l->ow);
    return s2c_min(n, fit > 1 ? fit : 1);
}

/* A work item's scratch: for the direct loops, the padded image with the loops' slack, then the
 * image's convolution [k, oh, ow] (unused when pooling 2 x 2); for Winograd's, what winograd.c
 * asks; for the GEMM, the group's convolution. */
static inline int64_t group_scratch(const struct fused_layer *l, int64_t images)
{
    int64_t convolution = images * l->k * l->oh * l->ow;
    if (l->winograd) /* or the GEMM's, for a group Winograd's cannot take */
        return s2c_max(s2c_winograd_scratch(images, l->c, l->h, l->w, l->k, l->padding),
                       convolution);
    int64_t padded = l->c * (l->h + 2 * l->padding) * (l->w + 2 * l->padding) + LANES;
    return (is_direct(l) ? padded : 0) + convolution;
}

/* Images [first, first + images) of x into y: through Winograd's (winograd.c) or the direct loops
 * pooling 2 x 2, straight; else their convolution into `out` [images, k, oh, ow] (with the bias,
 * for the GEMM: s2c_conv2d_forward, im2col + s2c_gemm over the group), then each plane of out
 * pooled into y. */
static inline int fused_group(const struct fused_layer *l, const float *x, float *y, int64_t first,
                              int64_t images, float *scratch)
{
    /* BEGIN SOLUTION week 13, task conv2d_bias_relu_pool */
    int64_t ph = l->oh / l->pool, pw = l->ow / l->pool, columns = l->oh * l->ow;
    const float *image = x + first * l->c * l->h * l->w;
    float *out = scratch;
    /* a group with a NaN or infinity in its images takes the GEMM (see use_winograd) */
    if (l->winograd && all_finite(image, images * l->c * l->h * l->w))
        return s2c_winograd_bias_relu_pool(image, l->packed, l->bias, y + first * l->k * ph * pw,
                                           images, l->c, l->h, l->w, l->k, l->padding, scratch);
    int status;
    int bias_added = !is_direct(l);
    if (is_direct(l)) {
        float *padded = scratch;
        s2c_pad_image(image, padded, l->c, l->h, l->w, l->padding, LANES);
        int64_t padded_h = l->h + 2 * l->padding, padded_w = l->w + 2 * l->padding;
        /* 2 x 2 pooling goes straight to y; stride 1 (the usual) and the pooling as constants:
         * the lanes' loads are then one contiguous vector, and the tile's rows known */
        int pool2 = l->pool == 2;
        out = pool2 ? y + first * l->k * ph * pw : scratch + group_scratch(l, 0);
        if (l->stride == 1 && pool2)
            status = direct_convolution(padded, l->packed, l->bias, out, l->c, padded_h, padded_w,
                                        l->k, l->r, l->s, 1, l->oh, l->ow, 1);
        else if (l->stride == 1)
            status = direct_convolution(padded, l->packed, l->bias, out, l->c, padded_h, padded_w,
                                        l->k, l->r, l->s, 1, l->oh, l->ow, 0);
        else
            status = direct_convolution(padded, l->packed, l->bias, out, l->c, padded_h, padded_w,
                                        l->k, l->r, l->s, l->stride, l->oh, l->ow, pool2);
        if (pool2)
            return status;
    } else {
        status = s2c_conv2d_forward(image, l->weights, l->bias, out, images, l->c, l->h, l->w,
                                    l->k, l->r, l->s, l->stride, l->padding);
    }
    for (int64_t plane = 0; plane < images * l->k && status == S2C_OK; plane++)
        status = pool_bias_relu(out + plane * columns, l->ow,
                                bias_added ? 0.0f : l->bias[plane % l->k], l->pool,
                                y + (first * l->k + plane) * ph * pw, ph, pw);
    return status;
    /* END SOLUTION */
}

int s2c_conv2d_bias_relu_pool(const float *x, const float *weights, const float *bias, float *y,
                              int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t r,
                              int64_t s, int64_t stride, int64_t padding, int64_t pool)
{
    S2C_REQUIRE(fused_sizes_ok(n, c, h, w, k, r, s, stride, padding, pool));
    /* BEGIN SOLUTION week 13, task conv2d_bias_relu_pool */
    /* The threads split the groups of images, each with its own scratch (s2c_conv2d_forward and
     * s2c_gemm called inside the parallel loop run on their caller's thread); a single group
     * leaves the threads to them. */
    struct fused_layer l = {c, h, w, k, r, s, stride, padding, pool,
                            s2c_out_size(h, r, stride, padding), s2c_out_size(w, s, stride, padding),
                            weights, bias, NULL, 0};
    l.winograd = use_winograd(&l, n);
    int64_t group = images_per_group(&l, n), groups = (n + group - 1) / group;
    int64_t blocks = (k + FILTER_BLOCK - 1) / FILTER_BLOCK;
    int64_t packed_size = l.winograd      ? S2C_WINOGRAD_POSITIONS * k * c
                          : is_direct(&l) ? blocks * FILTER_BLOCK * c * r * s
                                          : 0;
    size_t per_thread = (size_t)group_scratch(&l, group);
    int threads = groups > 1 ? s2c_get_num_threads() : 1;
    float *scratch = malloc(((size_t)packed_size + (size_t)threads * per_thread) * sizeof(float));
    if (scratch == NULL)
        return S2C_OUT_OF_MEMORY;
    if (l.winograd)
        s2c_winograd_filters(weights, k, c, scratch);
    if (is_direct(&l))
        pack_filters(weights, k, c * r * s, scratch);
    l.packed = packed_size > 0 ? scratch : NULL;
    int status = S2C_OK;
    #pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1)
    for (int64_t index = 0; index < groups; index++) {
        float *mine = scratch + packed_size + (size_t)omp_get_thread_num() * per_thread;
        int64_t first = index * group;
        int group_status = fused_group(&l, x, y, first, s2c_min(group, n - first), mine);
        if (group_status != S2C_OK) {
            #pragma omp atomic write
            status = group_status;
        }
    }
    free(scratch);
    return status;
    /* END SOLUTION */
}

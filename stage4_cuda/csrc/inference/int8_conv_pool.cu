/* inference/int8_conv_pool.cu -- the int8 twin of conv2d_bias_relu_pool (week 19): an int8
 * convolution, its requantization to the next layer's codes (+ ReLU: none below y_zero) and a
 * pool x pool max-pooling at stride pool, in ONE kernel that writes only the pooled codes
 *     q [n, m, oh / pool, ow / pool] int8 (pool 1: no pooling).
 * The unfused path takes three or four launches and two passes over [n, m, oh, ow]: quantize_int8
 * (a first layer), conv_rows_kernel (the receptive fields as rows), the GEMM writing every
 * output's code, maxpool2d_int8. Here the receptive fields are read straight from x (as codes, or
 * as float32 pixels quantized on the way in: a first layer), nothing but q is written, and the
 * weights come packed once, when the model is loaded (s2c_cuda_int8_pack_weights).
 *
 * The same numbers, bit for bit: each output's int32 sum is exact whatever the order of its
 * terms, it is rescaled by the GEMM's own expression (rescaled_sum) and coded by the same
 * int8_code, and the pooling takes the max of those codes, as maxpool2d_int8 does. (The max of
 * the sums, coded once, would agree wherever the rescaling rises with the sum, i.e. scale > 0;
 * the max of the codes agrees for any scale, at one rescaling per output instead of per window.)
 *
 * A thread computes one pooled output for FUSED_INT8_FILTERS channels: for each position of its
 * window, 16 codes of the receptive field at a time gathered into 4 ints (the padding is x_zero,
 * the code of 0.0; past C*R*S zeros, which meet the packed weights' zeros), then 4 __dp4a per
 * channel against one 16-byte load of its packed weights (the same address in every thread of
 * the block: a broadcast from L1).
 * Cost: 2 n m oh ow C R S int8 operations (only the outputs a window covers); device memory x
 * (or its floats) once, each pixel from L1/L2 R S times per channel group, and q pooled. */
#include "../common.h"
#include "../int8/codes.cuh"

#define FUSED_INT8_THREADS 128 /* pooled outputs a block */
#define FUSED_INT8_FILTERS 16  /* channels a thread (the grid's y: channel groups) */
#define FUSED_INT8_STEP 16     /* codes a step: 4 ints; K32 is a multiple of it */
#define FUSED_INT8_K_STEP 32   /* the packed weights' rows: K padded to a multiple of it */

struct int8_conv_pool {
    const int8_t *x;     /* the input's codes [n, c, h, width], or */
    const float *pixels; /* its float32 values, quantized here by x_scale and x_zero */
    float x_scale;
    int x_zero;
    const int8_t *packed; /* [m, k32] */
    const int32_t *weight_sums;
    const float *scale, *b;
    int8_t *q;
    int y_zero, y_low;
    int64_t n, c, h, width, m, r, s, stride, padding, pool, pooled_height, pooled_width, k, k32;
};

/* The code of input pixel (channel, iy, ix) of `image`: x_zero in the padding. */
static __device__ __forceinline__ int8_t input_code(const int8_conv_pool &a, int64_t image,
                                                     int64_t channel, int64_t iy, int64_t ix)
{
    if (iy < 0 || iy >= a.h || ix < 0 || ix >= a.width)
        return (int8_t)a.x_zero;
    const int64_t at = ((image * a.c + channel) * a.h + iy) * a.width + ix;
    if (a.pixels) /* quantize_int8's expression: IEEE division, then the code */
        return int8_code(__fdiv_rn(__ldg(a.pixels + at), a.x_scale), a.x_zero, -128);
    return __ldg(a.x + at);
}

/* Where the gathering stands in the receptive field: tap (channel, row, column), w's order. */
struct field_tap {
    int64_t channel, row, column;
};

/* The next 16 codes of the receptive field of output (oy, ox) from `tap` on, four to an int
 * (zeros past C*R*S); `tap` moves on past them. */
static __device__ __forceinline__ void gather(const int8_conv_pool &a, int64_t image, int64_t oy,
                                              int64_t ox, field_tap &tap, int words[4])
{
    for (int word = 0; word < 4; word++) {
        uint32_t four = 0;
        for (int byte = 0; byte < 4; byte++) {
            const int8_t code = tap.channel < a.c
                ? input_code(a, image, tap.channel, oy * a.stride - a.padding + tap.row,
                             ox * a.stride - a.padding + tap.column)
                : (int8_t)0;
            four |= (uint32_t)(uint8_t)code << (8 * byte);
            if (++tap.column == a.s) {
                tap.column = 0;
                if (++tap.row == a.r) {
                    tap.row = 0;
                    tap.channel++;
                }
            }
        }
        words[word] = (int)four;
    }
}

__global__ void __launch_bounds__(FUSED_INT8_THREADS) int8_conv_pool_kernel(const int8_conv_pool a)
{
    wait_for_previous_kernel();
    const int64_t pooled = a.pooled_height * a.pooled_width;
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n * pooled)
        return;
    const int64_t image = index_div(i, pooled), p = i - image * pooled;
    const int64_t py = index_div(p, a.pooled_width), px = p - py * a.pooled_width;
    const int64_t first_filter = (int64_t)blockIdx.y * FUSED_INT8_FILTERS;
    int8_t best[FUSED_INT8_FILTERS];
    for (int64_t dy = 0; dy < a.pool; dy++)
        for (int64_t dx = 0; dx < a.pool; dx++) {
            const int64_t oy = py * a.pool + dy, ox = px * a.pool + dx;
            int sums[FUSED_INT8_FILTERS] = {};
            field_tap tap = {0, 0, 0};
            for (int64_t k0 = 0; k0 < a.k; k0 += FUSED_INT8_STEP) {
                int words[4];
                gather(a, image, oy, ox, tap, words);
#pragma unroll
                for (int f = 0; f < FUSED_INT8_FILTERS; f++) {
                    /* a channel past m reads the last one's weights, and is never written */
                    const int64_t j = min(first_filter + f, a.m - 1);
                    const int4 w = __ldg(reinterpret_cast<const int4 *>(a.packed + j * a.k32 + k0));
                    sums[f] = __dp4a(words[0], w.x, sums[f]);
                    sums[f] = __dp4a(words[1], w.y, sums[f]);
                    sums[f] = __dp4a(words[2], w.z, sums[f]);
                    sums[f] = __dp4a(words[3], w.w, sums[f]);
                }
            }
#pragma unroll
            for (int f = 0; f < FUSED_INT8_FILTERS; f++) {
                const int64_t j = min(first_filter + f, a.m - 1);
                const float y = rescaled_sum(sums[f], a.x_zero, __ldg(a.weight_sums + j),
                                             __ldg(a.scale + j), __ldg(a.b + j));
                const int8_t code = int8_code(y, a.y_zero, a.y_low);
                best[f] = (dy == 0 && dx == 0) || code > best[f] ? code : best[f];
            }
        }
    for (int f = 0; f < FUSED_INT8_FILTERS; f++) {
        const int64_t j = first_filter + f;
        if (j < a.m)
            a.q[((image * a.m + j) * a.pooled_height + py) * a.pooled_width + px] = best[f];
    }
}

/* q from the codes x (pixels NULL) or from the float32 pixels (x NULL) quantized by x_scale and
 * x_zero; packed [m, k32] and weight_sums [m] from s2c_cuda_int8_pack_weights. */
extern "C" int s2c_cuda_int8_conv2d_pool_to_int8(
    const int8_t *x, const float *pixels, float x_scale, int x_zero, const int8_t *packed,
    const int32_t *weight_sums, const float *scale, const float *b, int y_zero, int relu,
    int8_t *q, int64_t n, int64_t c, int64_t h, int64_t width, int64_t m, int64_t r, int64_t s,
    int64_t stride, int64_t padding, int64_t pool)
{
    if ((x == nullptr) == (pixels == nullptr) || (pixels && !(x_scale > 0.0f)) || n < 1 ||
        c < 1 || h < 1 || width < 1 || m < 1 || r < 1 || s < 1 || stride < 1 || padding < 0 ||
        pool < 1 || x_zero < -128 || x_zero > 127 || y_zero < -128 || y_zero > 127)
        return S2C_CUDA_BAD_ARGUMENT;
    const int64_t oh = (h + 2 * padding - r) / stride + 1;
    const int64_t ow = (width + 2 * padding - s) / stride + 1;
    if (h + 2 * padding < r || width + 2 * padding < s || oh < pool || ow < pool ||
        ceil_div(m, FUSED_INT8_FILTERS) > 65535)
        return S2C_CUDA_BAD_ARGUMENT;
    const int64_t k = c * r * s;
    const int8_conv_pool a = {x, pixels, x_scale, x_zero, packed, weight_sums, scale, b, q, y_zero,
                              relu ? y_zero : -128, n, c, h, width, m, r, s, stride, padding, pool,
                              oh / pool, ow / pool, k,
                              ceil_div(k, FUSED_INT8_K_STEP) * FUSED_INT8_K_STEP};
    const dim3 grid((unsigned)blocks_for(n * (oh / pool) * (ow / pool), FUSED_INT8_THREADS),
                    (unsigned)ceil_div(m, FUSED_INT8_FILTERS));
    launch_overlapped(int8_conv_pool_kernel, grid, dim3(FUSED_INT8_THREADS), 0, a);
    LAUNCH_CHECK("int8_conv_pool_kernel");
    return S2C_CUDA_OK;
}

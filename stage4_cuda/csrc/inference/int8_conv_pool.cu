/* inference/int8_conv_pool.cu -- the int8 twin of conv2d_bias_relu_pool (week 19): an int8
 * convolution, its requantization to the next layer's codes (+ ReLU: none below y_zero) and a
 * 2x2 max-pooling at stride 2 (or none), in ONE kernel that writes only the pooled codes
 *     q [n, m, oh / pool, ow / pool] int8.
 * The unfused path takes three or four launches and two passes over [n, m, oh, ow]: quantize_int8
 * (a first layer), conv_rows_kernel (the receptive fields as rows in device memory), the GEMM
 * writing every output's code, maxpool2d_int8. Here the receptive fields go straight from x (its
 * codes, or float32 pixels quantized on the way in: a first layer) to shared memory, nothing but
 * q is written, and the weights come packed once, when the model is loaded
 * (s2c_cuda_int8_pack_weights: [m, k32], each channel's sum beside).
 *
 * The same numbers, bit for bit: each output's int32 sum is exact whatever the order of its
 * terms, it is rescaled by the GEMM's own expression (rescaled_sum) and coded by the same
 * int8_code, and the pooling takes the max of those codes, as maxpool2d_int8 does. (The max of
 * the sums, coded once, would agree wherever the rescaling rises with the sum, i.e. scale > 0;
 * the max of the codes agrees for any scale, at one rescaling per output instead of per window.)
 *
 * An implicit GEMM on int8_gemm's rung 1 (int8/gemm.cu, gemm_dp4a_kernel): a block of 256
 * threads computes 64 convolution outputs x 64 channels (256 x 16 for a layer of 16 channels or
 * fewer, which a 64-channel tile would mostly waste), 4 x 4 a thread, K_STEP codes at a time
 * through shared memory. Its rows are ordered by pooling window: the 4 outputs of a 2x2 window are rows
 * 4w .. 4w + 3, the 4 rows of one thread, so that its epilogue takes their max in registers and
 * writes one code per channel (pool 1: 4 windows of one output each). Each thread gathers the
 * same rows at every step (rows thread / 8 + 32 p, 4 codes at quad thread % 8): their
 * receptive fields' corners are found once.
 * Cost: 2 n m (ph pool)(pw pool) C R S int8 operations (only the outputs a window covers); device
 * memory x (or its floats) read R S times over (from L1/L2), the packed weights once per tile
 * row, q pooled: no [n, m, oh, ow] tensor, no rows [n oh ow, k32]. */
#include "../common.h"
#include "../int8/codes.cuh"

#define CONV_THREADS 256
#define CONV_NARROW 16 /* the channels of a block for layers of that many or fewer, else 64 */
#define CONV_K_STEP 32 /* codes a step; the packed weights' rows are padded to a multiple */

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
    int64_t rows; /* n * pooled_height * pooled_width * pool * pool */
};

/* The receptive field of one row of the product: where its image starts in x (-1 past the last
 * row), and its corner in the padded image (ints: the launcher refuses a larger image). */
struct receptive_field {
    int64_t image_start;
    int top, left;
};

/* Row `row`: tap row % pool^2 of pooling window row / pool^2. */
static __device__ receptive_field field_of(const int8_conv_pool &a, int64_t row)
{
    const int64_t taps = a.pool * a.pool, window = index_div(row, taps), tap = row - window * taps;
    const int64_t pooled = a.pooled_height * a.pooled_width, image = index_div(window, pooled);
    const int64_t p = window - image * pooled, py = index_div(p, a.pooled_width);
    const int64_t oy = py * a.pool + tap / a.pool, ox = (p - py * a.pooled_width) * a.pool + tap % a.pool;
    return {row < a.rows ? image * a.c * a.h * a.width : -1, (int)(oy * a.stride - a.padding),
            (int)(ox * a.stride - a.padding)};
}

/* The code of input pixel (channel, iy, ix) of the image at image_start: x_zero in the
 * padding. */
static __device__ __forceinline__ int8_t input_code(const int8_conv_pool &a, int64_t image_start,
                                                     int64_t channel, int64_t iy, int64_t ix)
{
    if (iy < 0 || iy >= a.h || ix < 0 || ix >= a.width)
        return (int8_t)a.x_zero;
    const int64_t at = image_start + (channel * a.h + iy) * a.width + ix;
    if (a.pixels) /* quantize_int8's expression: IEEE division, then the code */
        return int8_code(__fdiv_rn(__ldg(a.pixels + at), a.x_scale), a.x_zero, -128);
    return __ldg(a.x + at);
}

/* Codes first .. first + 3 of `field`, in w's (c, r, s) order, as one int (zeros past C*R*S,
 * which meet the packed weights' zeros, and past the last row). */
static __device__ int gather_quad(const int8_conv_pool &a, const receptive_field &field,
                                  int64_t first)
{
    if (field.image_start < 0)
        return 0;
    const int64_t taps = a.r * a.s;
    int64_t channel = index_div(first, taps), tap = first - channel * taps;
    int64_t tap_row = index_div(tap, a.s), tap_column = tap - tap_row * a.s;
    uint32_t four = 0;
    for (int byte = 0; byte < 4; byte++) {
        if (channel < a.c) {
            const int8_t code = input_code(a, field.image_start, channel, field.top + tap_row,
                                           field.left + tap_column);
            four |= (uint32_t)(uint8_t)code << (8 * byte);
        }
        if (++tap_column == a.s) { /* the next byte's tap */
            tap_column = 0;
            if (++tap_row == a.r) {
                tap_row = 0;
                channel++;
            }
        }
    }
    return (int)four;
}

/* COLUMNS channels (64, or 16 for a layer that few: LeNet-5's 6 and 16) by 4096 / COLUMNS
 * outputs a block of 256 threads, 4 x 4 a thread. */
template <int COLUMNS>
__global__ void __launch_bounds__(CONV_THREADS) int8_conv_pool_kernel(const int8_conv_pool a)
{
    wait_for_previous_kernel();
    constexpr int COLUMN_THREADS = COLUMNS / 4, ROWS = 4 * CONV_THREADS / COLUMN_THREADS;
    constexpr int QUADS = CONV_K_STEP / 4, LINES = CONV_THREADS / QUADS; /* lines a pass */
    /* stored [quad][line], as gemm_dp4a_kernel's tiles (its comment says why) */
    __shared__ __align__(16) int row_tile[QUADS][ROWS + 4];
    __shared__ __align__(16) int weight_tile[QUADS][COLUMNS + 4];
    const int thread = threadIdx.x, tx = thread % COLUMN_THREADS, ty = thread / COLUMN_THREADS;
    const int64_t first_row = (int64_t)blockIdx.x * ROWS; /* x: 2^31 - 1 blocks, y: 65535 */
    const int64_t first_channel = (int64_t)blockIdx.y * COLUMNS;
    const int quad = thread % QUADS, line = thread / QUADS;
    receptive_field fields[ROWS / LINES];
    for (int pass = 0; pass < ROWS / LINES; pass++)
        fields[pass] = field_of(a, first_row + line + LINES * pass);
    int sums[4][4] = {};
    for (int64_t k0 = 0; k0 < a.k; k0 += CONV_K_STEP) {
        for (int pass = 0; pass < ROWS / LINES; pass++)
            row_tile[quad][line + LINES * pass] = gather_quad(a, fields[pass], k0 + 4 * quad);
        for (int at = line; at < COLUMNS; at += LINES) {
            const int64_t j = first_channel + at;
            weight_tile[quad][at] = j < a.m ? __ldg((const int *)(a.packed + j * a.k32 + k0) + quad)
                                            : 0;
        }
        __syncthreads();
        for (int step = 0; step < QUADS; step++) {
            const int4 rows = *reinterpret_cast<const int4 *>(&row_tile[step][ty * 4]);
            const int4 weights = *reinterpret_cast<const int4 *>(&weight_tile[step][tx * 4]);
            const int row_codes[4] = {rows.x, rows.y, rows.z, rows.w};
            const int weight_codes[4] = {weights.x, weights.y, weights.z, weights.w};
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++)
                    sums[i][j] = __dp4a(row_codes[i], weight_codes[j], sums[i][j]);
        }
        __syncthreads();
    }
    /* the thread's 4 rows: one 2x2 window (pool 2) or 4 windows (pool 1) */
    const int64_t taps = a.pool * a.pool, pooled = a.pooled_height * a.pooled_width;
    for (int j = 0; j < 4; j++) {
        const int64_t channel = first_channel + tx * 4 + j;
        if (channel >= a.m)
            continue;
        int8_t best = -128;
        for (int i = 0; i < 4; i++) {
            const int64_t row = first_row + ty * 4 + i;
            const float y = rescaled_sum(sums[i][j], a.x_zero, __ldg(a.weight_sums + channel),
                                         __ldg(a.scale + channel), __ldg(a.b + channel));
            const int8_t code = int8_code(y, a.y_zero, a.y_low);
            best = i % taps == 0 || code > best ? code : best;
            if (i % taps != taps - 1 || row >= a.rows)
                continue;
            const int64_t window = index_div(row, taps), image = index_div(window, pooled);
            a.q[(image * a.m + channel) * pooled + (window - image * pooled)] = best;
        }
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
        pool < 1 || pool > 2 || x_zero < -128 || x_zero > 127 || y_zero < -128 || y_zero > 127)
        return S2C_CUDA_BAD_ARGUMENT;
    const int64_t oh = (h + 2 * padding - r) / stride + 1;
    const int64_t ow = (width + 2 * padding - s) / stride + 1;
    const int64_t rows = n * (oh / pool) * (ow / pool) * pool * pool;
    const bool narrow = m <= CONV_NARROW;
    const int64_t columns = narrow ? CONV_NARROW : 64, block_rows = 4096 / columns;
    if (h + 2 * padding < r || width + 2 * padding < s || oh < pool || ow < pool ||
        h + 2 * padding > INT_MAX || width + 2 * padding > INT_MAX ||
        ceil_div(m, columns) > 65535 || ceil_div(rows, block_rows) > INT_MAX)
        return S2C_CUDA_BAD_ARGUMENT;
    const int64_t k = c * r * s;
    const int8_conv_pool a = {x, pixels, x_scale, x_zero, packed, weight_sums, scale, b, q, y_zero,
                              relu ? y_zero : -128, n, c, h, width, m, r, s, stride, padding, pool,
                              oh / pool, ow / pool, k,
                              ceil_div(k, CONV_K_STEP) * CONV_K_STEP, rows};
    const dim3 grid((unsigned)ceil_div(rows, block_rows), (unsigned)ceil_div(m, columns));
    launch_overlapped(narrow ? int8_conv_pool_kernel<CONV_NARROW> : int8_conv_pool_kernel<64>,
                      grid, dim3(CONV_THREADS), 0, a);
    LAUNCH_CHECK("int8_conv_pool_kernel");
    return S2C_CUDA_OK;
}

/* inference/int8_conv_pool.cu -- the int8 twin of conv2d_bias_relu_pool (week 19): an int8
 * convolution, its requantization to the next layer's codes (+ ReLU: none below y_zero) and a
 * 2x2 max-pooling at stride 2 (or none), in ONE kernel that writes only the pooled codes
 *     q [n, m, oh / pool, ow / pool] int8.
 * The unfused path takes three or four launches and two passes over [n, m, oh, ow]: quantize_int8
 * (a first layer), conv_rows_kernel (the receptive fields as rows in device memory), the GEMM
 * writing every output's code, maxpool2d_int8. Here the receptive fields are gathered from x (its
 * codes, or float32 pixels quantized on the way in: a first layer) staged in shared memory or
 * held in registers, nothing but q is written, and the weights come packed once, when the model
 * is loaded (s2c_cuda_int8_pack_weights: [m, k32], each channel's sum beside).
 *
 * The same numbers, bit for bit: each output's int32 sum is exact whatever the order of its
 * terms, it is rescaled by the GEMM's own expression (rescaled_sum) and coded by the same
 * int8_code, and the pooling takes the max of those codes, as maxpool2d_int8 does. (The max of
 * the sums, coded once, would agree wherever the rescaling rises with the sum, i.e. scale > 0;
 * the max of the codes agrees for any scale, at one rescaling per output instead of per window.)
 *
 * Two kernels; the launcher chooses by the layer's shape, in one place:
 * - shallow (C*R*S <= S2C_CUDA_SHALLOW_DEPTH, 16 filters or fewer, 3x3 or 5x5 at stride 1: a
 *   first layer such as LeNet-5's conv1): a thread per pooling window, its input patch loaded
 *   and quantized once in registers, every filter applied to it (int8_conv_shallow_kernel, its
 *   section below says why a first layer wants it);
 * - the implicit GEMM (the rest), described here.
 *
 * An implicit GEMM on int8_gemm's rung 1 (int8/gemm.cu, gemm_dp4a_kernel): a block of 256
 * threads computes 64 convolution outputs x 64 channels (256 x 16 for a layer of 16 channels or
 * fewer, which a 64-channel tile would mostly waste), 4 x 4 a thread, K_STEP codes at a time
 * through shared memory, in two pairs of tiles: one barrier a step, each step's codes gathered
 * while the step before computes. Its rows are ordered by pooling window: the 4 outputs of a
 * 2x2 window are rows 4w .. 4w + 3, the 4 rows of one thread, so that its epilogue takes their
 * max in registers and writes one code per channel (pool 1: 4 windows of one output each).
 *
 * The receptive fields. A block's windows are consecutive in (image, pooled row, pooled column)
 * order, so the input rows they read are consecutive too, counting the padded rows of x's images
 * one after the other: the block first copies those rows, every channel, into shared memory,
 *     tile [c, staged_rows, width + 2 padding] codes (x_zero in the padding),
 * each pixel read from device memory once (and, a first layer's, quantized once), coalesced. The
 * code that product row `row` multiplies by weight k = (channel, tap_row, tap_column) is then
 *     tile[base(row) + offset(k)], offset(k) = (channel staged_rows + tap_row) (width + 2 padding)
 *                                              + tap_column,
 * offsets [k32] a table in shared memory built once per block (0 past k, where the packed
 * weights are zeros). Each thread gathers the same rows at every step (rows thread / 8 + 32 p, 4
 * codes at quad thread % 8), so their bases are found once too, and 4 codes are one 16-byte load
 * of offsets (for all the thread's rows) and 4 byte loads: no division, no bounds check. Where
 * the tile and its table would not fit CONV_STAGED_BYTES (a wide image of many channels), each
 * code is read from x where it lies instead (gather_quad: bounds checks and index arithmetic per
 * byte, each pixel read R S times over from L1/L2).
 * Cost: 2 n m (ph pool)(pw pool) C R S int8 operations (only the outputs a window covers), a K
 * step 128 __dp4a a thread against 2 (16-channel tile: 8) rows of 4 byte loads and a store into
 * row_tile; device memory: the packed weights once per tile row, q written pooled (no
 * [n, m, oh, ow] tensor, no rows [n oh ow, k32]), and each block's tile of x, c staged_rows
 * (width + 2 padding) codes (4-byte pixels, one IEEE division each, for a first layer), where
 * staged_rows bounds the rows 64 (or 16) windows reach (staged_rows_for): LeNet-5's conv1 1 x 20
 * x 32 pixels, its conv2 6 x 44 x 14 codes (2.6 images' windows), the Fashion CNN's conv2 64 x 13
 * x 13 (16 windows of 25 an image, for each of 2 channel tiles). */
#include "../common.h"
#include "../conv/conv.cuh"
#include "../int8/codes.cuh"

#define CONV_THREADS 256
#define CONV_NARROW 16 /* the channels of a block for layers of that many or fewer, else 64 */
#define CONV_K_STEP 32 /* codes a step; the packed weights' rows are padded to a multiple */
#define CONV_STAGED_BYTES (96 * 1024) /* the most dynamic shared memory a block stages x in */
#define CONV_STAGE_LOADS 8 /* codes a thread loads at once while staging */

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
    /* the staged path's tile [c, staged_rows, padded_width] after offsets [k32] */
    int padded_height, padded_width, staged_rows, tile_bytes, image_size; /* c h width */
    fast_divider by_padded_height, by_padded_width, by_staged_rows, by_pooled_height,
        by_pooled_width;
};

/* Row `row` of the product: tap row % pool^2 of pooling window row / pool^2, that is output
 * (oy, ox) of image `image`. */
struct output_position {
    int64_t image, oy, ox;
};

static __device__ output_position position_of(const int8_conv_pool &a, int64_t row)
{
    const int64_t taps = a.pool * a.pool, window = index_div(row, taps), tap = row - window * taps;
    const int64_t pooled = a.pooled_height * a.pooled_width, image = index_div(window, pooled);
    const int64_t p = window - image * pooled, py = index_div(p, a.pooled_width);
    return {image, py * a.pool + tap / a.pool,
            (p - py * a.pooled_width) * a.pool + tap % a.pool};
}

/* Where input pixel (channel, iy, ix) of the image at image_start lies in x: -1 in the
 * padding. */
static __device__ __forceinline__ int64_t input_at(const int8_conv_pool &a, int64_t image_start,
                                                   int64_t channel, int64_t iy, int64_t ix)
{
    if (iy < 0 || iy >= a.h || ix < 0 || ix >= a.width)
        return -1;
    return image_start + (channel * a.h + iy) * a.width + ix;
}

/* The code of a first layer's pixel: quantize_int8's expression, IEEE division then the code. */
static __device__ __forceinline__ int8_t pixel_code(const int8_conv_pool &a, float pixel)
{
    return int8_code(__fdiv_rn(pixel, a.x_scale), a.x_zero, -128);
}

/* The code of the pixel at `at` in x (x_zero at -1: the padding). */
static __device__ __forceinline__ int8_t input_code(const int8_conv_pool &a, int64_t at)
{
    if (at < 0)
        return (int8_t)a.x_zero;
    return a.pixels ? pixel_code(a, __ldg(a.pixels + at)) : __ldg(a.x + at);
}

/* Where code `at` of the tile [c, staged_rows, padded_width] staged from the padded rows that
 * start at row `row` of an image, counted over the images one after the other, lies in x from
 * that image's start: -1 in the padding, past x's last image (images_left from that one on;
 * only rows that are not written read those) and past the tile. An int: the launcher stages
 * images of at most 2^29 codes, and the tile reaches less than 1 + staged_rows / padded_height
 * images past the first, whose codes are fewer than the tile's. */
static __device__ __forceinline__ int staged_at(const int8_conv_pool &a, int images_left, int row,
                                                int at)
{
    const int line = a.by_padded_width.quotient(at), column = at - line * a.padded_width;
    const int channel = a.by_staged_rows.quotient(line);
    const int staged = row + line - channel * a.staged_rows; /* from the image's first row */
    const int later = a.by_padded_height.quotient(staged);
    const int iy = staged - later * a.padded_height - (int)a.padding;
    const int ix = column - (int)a.padding;
    if (at >= a.tile_bytes || later >= images_left || (unsigned)iy >= (unsigned)a.h ||
        (unsigned)ix >= (unsigned)a.width)
        return -1;
    return later * a.image_size + (channel * (int)a.h + iy) * (int)a.width + ix;
}

/* The staged path's prologue, for the rows that start at row `row` of `image`: the tile,
 * CONV_STAGE_LOADS codes a thread at a time (their loads issued together, then quantized and
 * stored: not one load's latency after another), and offsets [k32] of the weights' codes in
 * it. */
static __device__ void stage(const int8_conv_pool &a, int64_t image, int row, int *offsets,
                             int8_t *tile)
{
    const int images_left = (int)min(a.n - image, (int64_t)INT_MAX);
    const int8_t *const codes_from = a.x ? a.x + image * a.image_size : nullptr;
    const float *const pixels_from = a.pixels ? a.pixels + image * a.image_size : nullptr;
    for (int first = threadIdx.x; first < a.tile_bytes; first += CONV_STAGE_LOADS * CONV_THREADS) {
        int at[CONV_STAGE_LOADS];
        for (int load = 0; load < CONV_STAGE_LOADS; load++)
            at[load] = staged_at(a, images_left, row, first + load * CONV_THREADS);
        int8_t codes[CONV_STAGE_LOADS];
        if (pixels_from) {
            float values[CONV_STAGE_LOADS];
            for (int load = 0; load < CONV_STAGE_LOADS; load++)
                values[load] = at[load] < 0 ? 0.0f : __ldg(pixels_from + at[load]);
            for (int load = 0; load < CONV_STAGE_LOADS; load++)
                codes[load] = at[load] < 0 ? (int8_t)a.x_zero : pixel_code(a, values[load]);
        } else {
            for (int load = 0; load < CONV_STAGE_LOADS; load++)
                codes[load] = at[load] < 0 ? (int8_t)a.x_zero : __ldg(codes_from + at[load]);
        }
        for (int load = 0; load < CONV_STAGE_LOADS; load++)
            if (first + load * CONV_THREADS < a.tile_bytes)
                tile[first + load * CONV_THREADS] = codes[load];
    }
    const int taps = (int)(a.r * a.s);
    for (int k = threadIdx.x; k < a.k32; k += CONV_THREADS) {
        const int channel = k / taps, tap = k - channel * taps, tap_row = tap / (int)a.s;
        offsets[k] = k < a.k ? (channel * a.staged_rows + tap_row) * a.padded_width + tap -
                                   tap_row * (int)a.s
                             : 0;
    }
}

/* Where row first_row + offset of the product starts in the tile staged from the first row of
 * window (image, py, px), the block's first, offset < 256: its field's top left corner (0, any
 * code, past the last row: its sums are not written). */
static __device__ int tile_base(const int8_conv_pool &a, int64_t first_row, int offset, int py,
                                int px)
{
    if (first_row + offset >= a.rows)
        return 0;
    /* pool 2: window offset / 4, tap offset % 4 of it; pool 1: tap 0 of window offset */
    const int window = a.pool == 2 ? offset >> 2 : offset, tap = a.pool == 2 ? offset & 3 : 0;
    const int tap_y = tap >> 1, tap_x = tap & 1;
    const int columns = px + window, rows_on = a.by_pooled_width.quotient(columns);
    const int pooled_rows = py + rows_on, images_on = a.by_pooled_height.quotient(pooled_rows);
    const int oy = (pooled_rows - images_on * (int)a.pooled_height) * (int)a.pool + tap_y;
    const int ox = (columns - rows_on * (int)a.pooled_width) * (int)a.pool + tap_x;
    const int line = images_on * a.padded_height + (oy - py * (int)a.pool) * (int)a.stride;
    return line * a.padded_width + ox * (int)a.stride;
}

/* The receptive field of one row of the product where x is read where it lies: where its image
 * starts in x (-1 past the last row), and its corner in the padded image (ints: the launcher
 * refuses a larger image). */
struct receptive_field {
    int64_t image_start;
    int top, left;
};

static __device__ receptive_field field_of(const int8_conv_pool &a, int64_t row)
{
    const output_position at = position_of(a, row);
    return {row < a.rows ? at.image * a.c * a.h * a.width : -1,
            (int)(at.oy * a.stride - a.padding), (int)(at.ox * a.stride - a.padding)};
}

/* Codes first .. first + 3 of `field`, in w's (c, r, s) order, as one int, read from x (zeros
 * past C*R*S, which meet the packed weights' zeros, and past the last row). */
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
            const int8_t code = input_code(a, input_at(a, field.image_start, channel,
                                                       field.top + tap_row,
                                                       field.left + tap_column));
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

/* The packed weights' quad `quad` at k0 of channels first_channel + line + LINES l, for the
 * weight tile (0 past the last channel, and for lines past COLUMNS). */
template <int COLUMNS, int LINES, int LOADS>
static __device__ __forceinline__ void load_weights(const int8_conv_pool &a, int64_t first_channel,
                                                    int64_t k0, int line, int quad,
                                                    int (&weights)[LOADS])
{
    for (int l = 0; l < LOADS; l++) {
        const int64_t j = first_channel + line + LINES * l;
        weights[l] = line + LINES * l < COLUMNS && j < a.m
                         ? __ldg((const int *)(a.packed + j * a.k32 + k0) + quad)
                         : 0;
    }
}

/* COLUMNS channels (64, or 16 for a layer that few: LeNet-5's 6 and 16) by 4096 / COLUMNS
 * outputs a block of 256 threads, 4 x 4 a thread; STAGED: x's rows in shared memory (dynamic:
 * offsets then tile), else read where they lie. At most 64 registers a thread staged (4 blocks
 * a multiprocessor), 128 else (2), with no spills. */
template <int COLUMNS, bool STAGED>
__global__ void __launch_bounds__(CONV_THREADS, STAGED ? 4 : 2)
    int8_conv_pool_kernel(const int8_conv_pool a)
{
    wait_for_previous_kernel();
    constexpr int COLUMN_THREADS = COLUMNS / 4, ROWS = 4 * CONV_THREADS / COLUMN_THREADS;
    constexpr int QUADS = CONV_K_STEP / 4, LINES = CONV_THREADS / QUADS; /* lines a pass */
    constexpr int PASSES = ROWS / LINES, WEIGHT_LOADS = (COLUMNS + LINES - 1) / LINES;
    /* stored [quad][line], as gemm_dp4a_kernel's tiles (its comment says why), twice: one step
     * computes from one while the next step's codes go to the other */
    __shared__ __align__(16) int row_tile[2][QUADS][ROWS + 4];
    __shared__ __align__(16) int weight_tile[2][QUADS][COLUMNS + 4];
    extern __shared__ __align__(16) float shared[];
    int *const offsets = reinterpret_cast<int *>(shared);
    const uint8_t *const tile = reinterpret_cast<const uint8_t *>(offsets + a.k32);
    const int thread = threadIdx.x, tx = thread % COLUMN_THREADS, ty = thread / COLUMN_THREADS;
    const int64_t first_row = (int64_t)blockIdx.x * ROWS; /* x: 2^31 - 1 blocks, y: 65535 */
    const int64_t first_channel = (int64_t)blockIdx.y * COLUMNS;
    const int quad = thread % QUADS, line = thread / QUADS;
    /* the thread's rows' fields: in the tile (STAGED), or in x */
    int bases[STAGED ? PASSES : 1];
    receptive_field fields[STAGED ? 1 : PASSES];
    if constexpr (STAGED) {
        const output_position corner = position_of(a, first_row); /* a window's top left */
        stage(a, corner.image, (int)(corner.oy * a.stride), offsets,
              reinterpret_cast<int8_t *>(offsets + a.k32));
        for (int pass = 0; pass < PASSES; pass++)
            bases[pass] = tile_base(a, first_row, line + LINES * pass, (int)(corner.oy / a.pool),
                                    (int)(corner.ox / a.pool));
    } else {
        for (int pass = 0; pass < PASSES; pass++)
            fields[pass] = field_of(a, first_row + line + LINES * pass);
    }
    /* step k0's codes into tiles `buffer`: the weights loaded before, the rows gathered; then
     * the next step's weights loaded, to arrive while this one computes */
    int next_weights[WEIGHT_LOADS];
    load_weights<COLUMNS, LINES>(a, first_channel, 0, line, quad, next_weights);
    const auto fill = [&](int buffer, int64_t k0) {
        for (int l = 0; l < WEIGHT_LOADS; l++)
            if (line + LINES * l < COLUMNS)
                weight_tile[buffer][quad][line + LINES * l] = next_weights[l];
        if (k0 + CONV_K_STEP < a.k)
            load_weights<COLUMNS, LINES>(a, first_channel, k0 + CONV_K_STEP, line, quad,
                                         next_weights);
        if constexpr (STAGED) {
            const int4 at = *reinterpret_cast<const int4 *>(offsets + k0 + 4 * quad);
            for (int pass = 0; pass < PASSES; pass++) {
                const uint8_t *field = tile + bases[pass];
                row_tile[buffer][quad][line + LINES * pass] =
                    (int)(field[at.x] | field[at.y] << 8 | field[at.z] << 16 |
                          (uint32_t)field[at.w] << 24);
            }
        } else {
            for (int pass = 0; pass < PASSES; pass++)
                row_tile[buffer][quad][line + LINES * pass] =
                    gather_quad(a, fields[pass], k0 + 4 * quad);
        }
    };
    if constexpr (STAGED)
        __syncthreads(); /* the tile staged */
    fill(0, 0);
    __syncthreads();
    int sums[4][4] = {};
    for (int64_t k0 = 0; k0 < a.k; k0 += CONV_K_STEP) {
        /* tiles `buffer` hold this step's codes; the others, last read in the step before, take
         * the next step's */
        const int buffer = (int)(k0 / CONV_K_STEP % 2);
        if (k0 + CONV_K_STEP < a.k)
            fill(1 - buffer, k0 + CONV_K_STEP);
        for (int step = 0; step < QUADS; step++) {
            const int4 rows = *reinterpret_cast<const int4 *>(&row_tile[buffer][step][ty * 4]);
            const int4 columns =
                *reinterpret_cast<const int4 *>(&weight_tile[buffer][step][tx * 4]);
            const int row_codes[4] = {rows.x, rows.y, rows.z, rows.w};
            const int weight_codes[4] = {columns.x, columns.y, columns.z, columns.w};
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++)
                    sums[i][j] = __dp4a(row_codes[i], weight_codes[j], sums[i][j]);
        }
        __syncthreads();
    }
    /* the thread's 4 rows: one 2x2 window (pool 2) or 4 windows (pool 1), consecutive from
     * window p of image `image` */
    const int taps = (int)(a.pool * a.pool);
    const int64_t pooled = a.pooled_height * a.pooled_width;
    const int64_t window = index_div(first_row + ty * 4, taps), image = index_div(window, pooled);
    const int64_t p = window - image * pooled;
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
            int64_t at_image = image, at = p + (a.pool == 2 ? 0 : i); /* row i's window */
            while (at >= pooled) {
                at -= pooled;
                at_image++;
            }
            a.q[(at_image * a.m + channel) * pooled + at] = best;
        }
    }
}

/* ---- shallow: a window's patch in registers --------------------------------------------------
 * A first layer (C*R*S <= S2C_CUDA_SHALLOW_DEPTH: LeNet-5's conv1, 1 x 5 x 5 over 6 filters)
 * gives the implicit GEMM above little to work with: K is one step of 32 codes, a 16-channel tile
 * of which 6 are used, and a tile staged behind barriers for that single step. Here, as the float
 * twin's fused_shallow_kernel does (conv_bias_relu_pool.cu), a thread computes one pooling window
 * for every filter and needs nothing from any other thread. Its PATCH, the (R + POOL - 1) x
 * (S + POOL - 1) pixels of each channel that the window's POOL x POOL outputs read (stride 1), is
 * loaded into registers, every load written before the first quantization so that they are in
 * flight together, then quantized once (pixel_code; x_zero in the padding). Each output's codes,
 * in w's (c, r, s) order, are packed four to an int, once for all the filters; each filter's
 * quads come from shared memory (one broadcast to all threads) and meet them in __dp4a: 7
 * instructions for a 5 x 5 output and filter where int32 multiply-adds would take 25. The
 * epilogue is the GEMM kernel's: rescaled_sum, int8_code, the max of the window's codes.
 * Cost: 2 n m (ph pool)(pw pool) C R S int8 operations, as n ph pw pool^2 m ceil(C R S / 4)
 * __dp4a (LeNet-5's conv1: 4 x 6 x 7 = 168 a thread, beside 4 x 7 quads packed); device memory:
 * x read once (4 bytes a pixel, or 1 a code; neighbouring patches overlap and read their shared
 * pixels again from L1), q written pooled, n m ph pw bytes, and 32 m bytes of packed weights a
 * block. A pixel is quantized once for each patch that holds it, 9 times for 5 x 5 at pool 2
 * ((R + 1)(S + 1) / 4), against the 25 outputs whose taps read it: one IEEE division each. No
 * barrier after the weights, and blocks of 128 threads: LeNet-5's conv1 at batch 256 is 392 of
 * them, at most 3 on each of 132 multiprocessors, all resident at once. */
#define SHALLOW_THREADS 128
#define SHALLOW_FILTERS CONV_NARROW /* the most filters a layer of the shallow kernel has */
#define SHALLOW_QUADS (S2C_CUDA_SHALLOW_DEPTH / 4) /* a filter's quads, K32 = 32 codes */

template <int R, int S, int POOL>
__global__ void __launch_bounds__(SHALLOW_THREADS) int8_conv_shallow_kernel(const int8_conv_pool a)
{
    wait_for_previous_kernel();
    constexpr int CHANNELS = S2C_CUDA_SHALLOW_DEPTH / (R * S); /* at most; a.c at run time */
    constexpr int TAPS = CHANNELS * R * S, QUADS = (TAPS + 3) / 4;
    constexpr int ROWS = R + POOL - 1, COLUMNS = S + POOL - 1, POSITIONS = POOL * POOL;
    __shared__ __align__(16) int weights[SHALLOW_FILTERS][SHALLOW_QUADS];
    for (int e = threadIdx.x; e < a.m * QUADS; e += SHALLOW_THREADS) {
        const int filter = e / QUADS, quad = e - filter * QUADS;
        weights[filter][quad] = __ldg((const int *)(a.packed + filter * a.k32) + quad);
    }
    __syncthreads();

    const int64_t pooled = a.pooled_height * a.pooled_width;
    const int64_t window = (int64_t)blockIdx.x * SHALLOW_THREADS + threadIdx.x;
    if (window >= a.n * pooled)
        return;
    const int64_t image = index_div(window, pooled);
    const int p = (int)(window - image * pooled), py = a.by_pooled_width.quotient(p);
    const int top = py * POOL - (int)a.padding;
    const int left = (p - py * (int)a.pooled_width) * POOL - (int)a.padding;
    /* the patch: pixel (channel, top + i, left + j) of the image is patch[channel][i][j] */
    bool row_inside[ROWS], column_inside[COLUMNS];
#pragma unroll
    for (int i = 0; i < ROWS; i++)
        row_inside[i] = (unsigned)(top + i) < (unsigned)a.h;
#pragma unroll
    for (int j = 0; j < COLUMNS; j++)
        column_inside[j] = (unsigned)(left + j) < (unsigned)a.width;
    const auto inside = [&](int channel, int i, int j) {
        return channel < a.c && row_inside[i] && column_inside[j];
    };
    const auto at = [&](int channel, int i, int j) {
        return ((image * a.c + channel) * a.h + top + i) * a.width + left + j;
    };
    const auto each_pixel = [&](auto visit) { /* visit(channel, i, j), unrolled */
#pragma unroll
        for (int channel = 0; channel < CHANNELS; channel++)
#pragma unroll
            for (int i = 0; i < ROWS; i++)
#pragma unroll
                for (int j = 0; j < COLUMNS; j++)
                    visit(channel, i, j);
    };
    int8_t patch[CHANNELS][ROWS][COLUMNS];
    if (a.pixels) {
        float values[CHANNELS][ROWS][COLUMNS];
        each_pixel([&](int channel, int i, int j) {
            values[channel][i][j] =
                inside(channel, i, j) ? __ldg(a.pixels + at(channel, i, j)) : 0.0f;
        });
        each_pixel([&](int channel, int i, int j) {
            patch[channel][i][j] = inside(channel, i, j) ? pixel_code(a, values[channel][i][j])
                                                         : (int8_t)a.x_zero;
        });
    } else {
        each_pixel([&](int channel, int i, int j) {
            patch[channel][i][j] =
                inside(channel, i, j) ? __ldg(a.x + at(channel, i, j)) : (int8_t)a.x_zero;
        });
    }
    /* output (dy, dx) of the window: its codes in w's (c, r, s) order, 4 an int, byte b of quad
     * q tap 4 q + b (zeros past TAPS meet the packed weights' zeros) */
    int quads[POSITIONS][QUADS];
#pragma unroll
    for (int dy = 0; dy < POOL; dy++)
#pragma unroll
        for (int dx = 0; dx < POOL; dx++)
#pragma unroll
            for (int q = 0; q < QUADS; q++) {
                uint32_t four = 0;
#pragma unroll
                for (int b = 0; b < 4; b++) {
                    const int tap = 4 * q + b, channel = tap / (R * S);
                    const int r = tap / S % R, s = tap % S;
                    if (tap < TAPS)
                        four |= (uint32_t)(uint8_t)patch[channel][dy + r][dx + s] << (8 * b);
                }
                quads[dy * POOL + dx][q] = (int)four;
            }
    int8_t *const out = a.q + image * a.m * pooled + p;
    for (int filter = 0; filter < a.m; filter++) {
        int sums[POSITIONS] = {};
#pragma unroll
        for (int q = 0; q < QUADS; q++) {
            if (4 * q >= a.k) /* past a layer of fewer channels: zero weights */
                break;
            const int w = weights[filter][q];
#pragma unroll
            for (int position = 0; position < POSITIONS; position++)
                sums[position] = __dp4a(quads[position][q], w, sums[position]);
        }
        const int32_t weight_sum = __ldg(a.weight_sums + filter);
        const float scale = __ldg(a.scale + filter), b = __ldg(a.b + filter);
        int8_t best = -128;
#pragma unroll
        for (int position = 0; position < POSITIONS; position++) {
            const float y = rescaled_sum(sums[position], a.x_zero, weight_sum, scale, b);
            const int8_t code = int8_code(y, a.y_zero, a.y_low);
            best = position == 0 || code > best ? code : best;
        }
        out[filter * pooled] = best;
    }
}

/* The shallow kernel for a layer of R x S = 3 x 3 or 5 x 5, pooled POOL x POOL = 1 or 2. */
static void (*shallow_kernel(int64_t r, int64_t pool))(const int8_conv_pool)
{
    if (r == 5)
        return pool == 2 ? int8_conv_shallow_kernel<5, 5, 2> : int8_conv_shallow_kernel<5, 5, 1>;
    return pool == 2 ? int8_conv_shallow_kernel<3, 3, 2> : int8_conv_shallow_kernel<3, 3, 1>;
}

/* The rows of x a block of `windows` consecutive pooling windows reads, counting the padded rows
 * of the images one after the other, at most: from its first window's first row to its last
 * window's, plus that window's height. Consecutive windows are pool * stride rows apart along a
 * pooled row, and image_gap further apart from an image's last window to the next image's first
 * (negative where stride > R leaves rows unread). */
static int64_t staged_rows_for(int64_t windows, int64_t pooled_height, int64_t pooled_width,
                               int64_t padded_height, int64_t r, int64_t stride, int64_t pool)
{
    const int64_t image_gap = padded_height - pooled_height * pool * stride;
    const int64_t later = windows - 1; /* the last window after the first */
    return ceil_div(later, pooled_width) * pool * stride +
           (image_gap > 0 ? ceil_div(later, pooled_height * pooled_width) * image_gap : 0) +
           (pool - 1) * stride + r;
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
    const int64_t k = c * r * s, k32 = ceil_div(k, CONV_K_STEP) * CONV_K_STEP;
    const int64_t padded_height = h + 2 * padding, padded_width = width + 2 * padding;
    /* the shallow kernel for a first layer of few filters, 3 x 3 or 5 x 5 at stride 1 (its
     * patch's size known when it is compiled), where its window's index within an image and
     * its grid fit an int */
    const int64_t windows = n * (oh / pool) * (ow / pool);
    const bool shallow = k <= S2C_CUDA_SHALLOW_DEPTH && m <= SHALLOW_FILTERS && stride == 1 &&
                         r == s && (r == 3 || r == 5) && (oh / pool) * (ow / pool) <= INT_MAX &&
                         ceil_div(windows, SHALLOW_THREADS) <= INT_MAX;
    /* else the staged path where the tile fits (each factor first, so that no product
     * overflows; r <= staged_rows and s <= padded_width, so k <= tile_bytes) and its indices
     * fit an int */
    const int64_t staged_rows =
        stride > padded_height ? INT_MAX
                               : staged_rows_for(block_rows / (pool * pool), oh / pool, ow / pool,
                                                 padded_height, r, stride, pool);
    const bool staged = !shallow && padded_height < (1 << 30) && c <= CONV_STAGED_BYTES &&
                        staged_rows <= CONV_STAGED_BYTES && padded_width <= CONV_STAGED_BYTES &&
                        4 * k32 + c * staged_rows * padded_width <= CONV_STAGED_BYTES &&
                        c * width * h <= (1 << 29);
    const int64_t tile_bytes = staged ? c * staged_rows * padded_width : 0;
    const int8_conv_pool a = {x, pixels, x_scale, x_zero, packed, weight_sums, scale, b, q, y_zero,
                              relu ? y_zero : -128, n, c, h, width, m, r, s, stride, padding, pool,
                              oh / pool, ow / pool, k, k32, rows, (int)padded_height,
                              (int)padded_width, (int)staged_rows, (int)tile_bytes,
                              staged ? (int)(c * h * width) : 0,
                              fast_divider((int)padded_height),
                              fast_divider(staged ? (int)padded_width : 1),
                              fast_divider(staged ? (int)staged_rows : 1),
                              fast_divider((int)(oh / pool)), fast_divider((int)(ow / pool))};
    if (shallow) {
        const dim3 blocks((unsigned)ceil_div(windows, SHALLOW_THREADS));
        launch_overlapped(shallow_kernel(r, pool), blocks, dim3(SHALLOW_THREADS), 0, a);
        LAUNCH_CHECK("int8_conv_shallow_kernel");
        return S2C_CUDA_OK;
    }
    const dim3 grid((unsigned)ceil_div(rows, block_rows), (unsigned)ceil_div(m, columns));
    void (*kernel)(const int8_conv_pool) =
        narrow ? (staged ? int8_conv_pool_kernel<CONV_NARROW, true>
                         : int8_conv_pool_kernel<CONV_NARROW, false>)
               : (staged ? int8_conv_pool_kernel<64, true> : int8_conv_pool_kernel<64, false>);
    const size_t shared_bytes = staged ? (size_t)(4 * k32 + tile_bytes) : 0;
    CUDA_CHECK(allow_dynamic_shared(kernel, shared_bytes));
    launch_overlapped(kernel, grid, dim3(CONV_THREADS), shared_bytes, a);
    LAUNCH_CHECK("int8_conv_pool_kernel");
    return S2C_CUDA_OK;
}

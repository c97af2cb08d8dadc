/* int8.c -- INT8 inference: quantization and the int8 GEMM (int8 x int8 -> int32), rescaled to
 * float32 or requantized to int8, for dense layers and for convolutions through im2col; max
 * pooling of int8 codes.
 *
 * The math (stage1_python/quantized.py): y[i, j] = scale[j] * acc[i, j] + b[j] with
 *     acc[i, j] = sum_k (x[i, k] - x_zero) * w[j, k]      exact in int32.
 *
 * The CPU's integer dot-product instructions multiply UNSIGNED bytes by SIGNED bytes and add
 * each group of four products into an int32 lane (AVX-512 VNNI's vpdpbusd, AVX-VNNI's 256-bit
 * form). So the activations go in as u = x + 128 (x ^ 0x80: the same bits with the sign flipped),
 * and the zero point comes out as one correction per output channel:
 *     acc = sum_k u[k] * w[j, k] - (128 + x_zero) * sum_k w[j, k].
 * A broadcast of four bytes of a row times four bytes of each of 16 channels is one vpdpbusd:
 * the weights are packed [channel block][k / 4][channel in block][4] so that one load feeds 16
 * (or 8) channels, and no horizontal sum is ever needed.
 *
 * The rungs, chosen at run time as the fp32 GEMM's micro-kernel is (matmul.c), each compiled only
 * when the build's flags enable its instructions:
 *   4 avx512_vnni   16 channels a vector, vpdpbusd (64 multiply-adds an instruction)
 *   3 avx_vnni       8 channels a vector, the VEX-encoded vpdpbusd
 *   2 avx2           8 channels; vpmaddwd on bytes widened to 16 bits. Not vpmaddubsw: it adds
 *                    two u8 x s8 products into an int16 with saturation, and 2 * 255 * 127
 *                    overflows 32767, so the sum would be silently clipped.
 *   1 scalar         plain C, the same packed rows.
 * K is padded to a multiple of 4 with zero weights, so no rung has a tail along K; the tails are
 * along the rows (a tile of up to ROWS_PER_TILE) and the channels (a block of up to 16).
 * With AVX-512 VNNI a convolution of short K (a first layer) turns the tile around: pixels along
 * the lanes, channels along the registers (pixel_tile_avx512_vnni).
 *
 * The epilogue writes float32 y, or (the _to_int8 forms) the int8 code of y: the next layer's
 * input, requantized in the same pass, with a ReLU as the clamp at its zero point.
 * maxpool2d_int8 then pools the codes themselves.
 */
#define _POSIX_C_SOURCE 200112L /* posix_memalign */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
#define S2C_INT8_AVX512_VNNI 1
#endif
#if defined(__AVXVNNI__)
#define S2C_INT8_AVX_VNNI 1
#endif
#if defined(__AVX2__)
#define S2C_INT8_AVX2 1
#endif
#endif

#include "internal.h"

#define ROWS_PER_TILE 16 /* rows a tile of the GEMM holds: AVX-512 keeps 16 sums in registers */
#define HALF_TILE 8      /* the 256-bit rungs: 16 registers hold 8 rows' sums */
#define ROUNDING_SHIFT 12582912.0f /* 1.5 * 2^23 */
#define INT8_PARALLEL_MIN 1048576 /* multiply-adds below which the GEMM runs on one thread */
#define PIXEL_K4_MAX 32 /* convolutions with K up to this take pixel_tile_avx512_vnni */

enum int8_kernel { KERNEL_BEST = 0, KERNEL_SCALAR, KERNEL_AVX2, KERNEL_AVX_VNNI, KERNEL_AVX512_VNNI };

/* ---- quantization ------------------------------------------------------------------------ */

/* The int8 code of `ratio` (a value over its scale): rounded half to even, plus `zero`, clamped
 * to [low, 127] (low -128, or the zero point itself for a ReLU); NaN is the zero point. */
static inline int8_t code_of(float ratio, int zero, int low)
{
    ratio = ratio > 256.0f ? 256.0f : ratio; /* comparisons, not fminf: they vectorize */
    ratio = ratio < -256.0f ? -256.0f : ratio;
    ratio = ratio == ratio ? ratio : 0.0f; /* NaN: the zero point */
    /* Adding 1.5 * 2^23 leaves no bits below the units: float addition rounds to the nearest
     * integer, ties to even, as rint would, in one instruction the compiler vectorizes. */
    const int code = (int)((ratio + ROUNDING_SHIFT) - ROUNDING_SHIFT) + zero;
    return (int8_t)(code < low ? low : code > 127 ? 127 : code);
}

int s2c_quantize_int8(const float *x, int8_t *q, int64_t size, float scale, int zero_point)
{
    S2C_REQUIRE(size >= 1 && scale > 0.0f && zero_point >= -128 && zero_point <= 127);
    /* BEGIN SOLUTION week 19, task quantize_int8 */
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (size >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < size; i++)
        q[i] = code_of(x[i] / scale, zero_point, -128);
    /* END SOLUTION */
    return S2C_OK;
}

/* ---- the kernel in use ---------------------------------------------------------------------- */

static int supported(int kernel)
{
    switch (kernel) {
    case KERNEL_SCALAR:
        return 1;
#ifdef S2C_INT8_AVX2
    case KERNEL_AVX2:
        return __builtin_cpu_supports("avx2");
#endif
#ifdef S2C_INT8_AVX_VNNI
    case KERNEL_AVX_VNNI:
        return __builtin_cpu_supports("avxvnni");
#endif
#ifdef S2C_INT8_AVX512_VNNI
    case KERNEL_AVX512_VNNI:
        return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw");
#endif
    default:
        return 0;
    }
}

/* The widest rung this build has and this CPU runs. */
static int best_kernel(void)
{
    for (int kernel = KERNEL_AVX512_VNNI; kernel > KERNEL_SCALAR; kernel--)
        if (supported(kernel))
            return kernel;
    return KERNEL_SCALAR;
}

int s2c_int8_kernel_supported(int kernel) { return kernel == KERNEL_BEST || supported(kernel); }

int s2c_int8_best_kernel(void) { return best_kernel(); }

/* Channels a packed weight block holds for `kernel`. */
static int64_t block_channels(int kernel) { return kernel == KERNEL_AVX512_VNNI ? 16 : 8; }

/* ---- packing -------------------------------------------------------------------------------- */

/* w [m, k] -> packed [m / nb][k4 / 4][nb][4] (k4 = k rounded up to 4; zeros beyond m and k). */
static void pack_weights(const int8_t *w, int8_t *packed, int64_t m, int64_t k, int64_t k4,
                         int64_t nb)
{
    memset(packed, 0, (size_t)(((m + nb - 1) / nb) * nb * k4));
    for (int64_t j = 0; j < m; j++) {
        int8_t *block = packed + (j / nb) * nb * k4 + (j % nb) * 4;
        for (int64_t p = 0; p < k; p++)
            block[(p / 4) * nb * 4 + p % 4] = w[j * k + p];
    }
}

/* correction[j] = (128 + x_zero) * sum_k w[j, k]: what the unsigned rows add beyond x - x_zero. */
static void zero_corrections(const int8_t *w, int32_t *correction, int64_t m, int64_t k,
                             int x_zero)
{
    for (int64_t j = 0; j < m; j++) {
        int32_t sum = 0;
        for (int64_t p = 0; p < k; p++)
            sum += w[j * k + p];
        correction[j] = (128 + x_zero) * sum;
    }
}

/* Where the GEMM writes: row i of the product, column j goes to element
 * (i / group) * m * group + i % group + j * group of y; group 1 is a plain [rows, m] matrix,
 * group OH*OW the [N, M, OH, OW] image of a convolution whose rows are its output pixels.
 * Each sum becomes v = scale[j] * sum + b[j], written as a float to y, or, when `codes` is set
 * (the ops' _to_int8 forms), as the int8 code of v: rounded, plus code_zero, clamped to
 * [code_low, 127] (code_low is code_zero for a ReLU, else -128). */
struct output {
    float *y;
    int8_t *codes;
    int code_zero, code_low;
    int64_t m, group;
    const float *scale, *b;
    const int32_t *correction;
};

/* The index of row i's channel 0 in the output; channel j is j * group further. */
static inline int64_t row_start(const struct output *out, int64_t i)
{
    return (i / out->group) * out->m * out->group + i % out->group;
}

/* Row i's sums for channels j0 .. j0 + count - 1, rescaled (and requantized) into the output. */
static inline void write_row(const struct output *out, int64_t i, int64_t j0, int64_t count,
                             const int32_t *sums)
{
    const int64_t row = row_start(out, i);
    for (int64_t jj = 0; jj < count; jj++) {
        const int64_t j = j0 + jj;
        const float v = out->scale[j] * (float)(sums[jj] - out->correction[j]) + out->b[j];
        if (out->codes)
            out->codes[row + j * out->group] = code_of(v, out->code_zero, out->code_low);
        else
            out->y[row + j * out->group] = v;
    }
}

/* ---- the rungs: rows [rows][k4] of u8, packed weights, one tile of rows x all channels ---- */

/* Each rung returns S2C_OK (S2C_NOT_IMPLEMENTED while it is an exercise stub). */
static int tile_scalar(const uint8_t *u, int64_t first, int64_t rows, int64_t k4,
                       const int8_t *packed, int64_t nb, const struct output *out)
{
    /* BEGIN SOLUTION week 19, task int8_gemm_scalar */
    for (int64_t r = 0; r < rows; r++) {
        const uint8_t *row = u + (first + r) * k4;
        for (int64_t j = 0; j < out->m; j++) {
            const int8_t *block = packed + (j / nb) * nb * k4 + (j % nb) * 4;
            int32_t acc = 0;
            for (int64_t p = 0; p < k4; p++)
                acc += (int32_t)row[p] * block[(p / 4) * nb * 4 + p % 4];
            write_row(out, first + r, j, 1, &acc);
        }
    }
    /* END SOLUTION */
    return S2C_OK;
}

/* The four bytes of a row at p as one int32, to broadcast. */
static inline int32_t four_bytes(const uint8_t *row, int64_t p)
{
    int32_t value;
    memcpy(&value, row + p, 4);
    return value;
}

#ifdef S2C_INT8_AVX512_VNNI
/* code_of for 16 values at once: NaN to 0, clamped to +-256, rounded half to even, plus the
 * zero point, clamped to [code_low, 127]; as int32 lanes. */
static inline __m512i codes_avx512(__m512 v, const struct output *out)
{
    v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);
    v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-256.0f)), _mm512_set1_ps(256.0f));
    __m512i code = _mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    code = _mm512_add_epi32(code, _mm512_set1_epi32(out->code_zero));
    code = _mm512_max_epi32(code, _mm512_set1_epi32(out->code_low));
    return _mm512_min_epi32(code, _mm512_set1_epi32(127));
}

__attribute__((always_inline)) static inline int
rows_avx512_vnni(const uint8_t *u, int64_t first, const int rows, int64_t k4,
                 const int8_t *packed, const struct output *out)
{
    /* BEGIN SOLUTION week 19, task int8_gemm_avx512_vnni */
    for (int64_t j0 = 0; j0 < out->m; j0 += 16) {
        const int8_t *block = packed + j0 * k4;
        __m512i acc[ROWS_PER_TILE];
        for (int r = 0; r < rows; r++)
            acc[r] = _mm512_setzero_si512();
        for (int64_t p = 0; p < k4; p += 4) {
            const __m512i weights = _mm512_loadu_si512(block + p * 16);
            for (int r = 0; r < rows; r++) {
                const __m512i x4 = _mm512_set1_epi32(four_bytes(u + (first + r) * k4, p));
                acc[r] = _mm512_dpbusd_epi32(acc[r], x4, weights);
            }
        }
        /* The epilogue in vectors too: (sum - correction) * scale + b for 16 channels at once,
         * requantized where the output is codes, stored where each channel's plane has this row
         * (masked to the channels there are). */
        const __mmask16 valid = (__mmask16)((1u << s2c_min(16, out->m - j0)) - 1);
        const __m512i correction = _mm512_maskz_loadu_epi32(valid, out->correction + j0);
        const __m512 scale = _mm512_maskz_loadu_ps(valid, out->scale + j0);
        const __m512 bias = _mm512_maskz_loadu_ps(valid, out->b + j0);
        const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
                                                15);
        /* A convolution's 16 rows are 16 neighbouring pixels of one image: transposed through
         * a small buffer, each channel's 16 outputs are one contiguous store into its plane
         * (16 scattered stores a row would touch 16 cache lines each). */
        const int transpose = rows == 16 && out->group > 1 &&
                              first / out->group == (first + 15) / out->group;
        int32_t tile[16][16]; /* float bits, or codes */
        for (int r = 0; r < rows; r++) {
            const __m512 sums = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[r], correction));
            const __m512 y = _mm512_fmadd_ps(scale, sums, bias);
            const __m512i value = out->codes ? codes_avx512(y, out) : _mm512_castps_si512(y);
            const int64_t row = row_start(out, first + r) + j0 * out->group;
            if (transpose)
                _mm512_storeu_si512(tile[r], value);
            else if (out->group == 1 && out->codes)
                _mm_mask_storeu_epi8(out->codes + row, valid, _mm512_cvtepi32_epi8(value));
            else if (out->group == 1)
                _mm512_mask_storeu_ps(out->y + row, valid, y);
            else if (out->codes) {
                _mm512_storeu_si512(tile[0], value);
                for (int64_t jj = 0; jj < s2c_min(16, out->m - j0); jj++)
                    out->codes[row + jj * out->group] = (int8_t)tile[0][jj];
            } else
                _mm512_mask_i32scatter_ps(out->y + row, valid,
                                          _mm512_mullo_epi32(lanes, _mm512_set1_epi32(
                                              (int32_t)out->group)), y, 4);
        }
        if (transpose) {
            const int64_t plane = row_start(out, first) + j0 * out->group;
            const __m512i down = _mm512_mullo_epi32(lanes, _mm512_set1_epi32(16));
            for (int64_t jj = 0; jj < s2c_min(16, out->m - j0); jj++) {
                const __m512i column = _mm512_i32gather_epi32(down, &tile[0][jj], 4);
                if (out->codes)
                    _mm_storeu_si128((__m128i *)(out->codes + plane + jj * out->group),
                                     _mm512_cvtepi32_epi8(column));
                else
                    _mm512_storeu_si512(out->y + plane + jj * out->group, column);
            }
        }
    }
    /* END SOLUTION */
    return S2C_OK;
}

static int tile_avx512_vnni(const uint8_t *u, int64_t first, int64_t rows, int64_t k4,
                            const int8_t *packed, const struct output *out)
{
    if (rows == ROWS_PER_TILE)
        return rows_avx512_vnni(u, first, ROWS_PER_TILE, k4, packed, out);
    int status = S2C_OK;
    for (int64_t r = 0; r < rows && status == S2C_OK; r++)
        status = rows_avx512_vnni(u, first + r, 1, k4, packed, out);
    return status;
}

/* A convolution with a short K (a first layer: C*R*S = 9 or 25) turned around: 16 neighbouring
 * output pixels of one image along the lanes, one channel a register. The rows-along-registers
 * tiles above would spend more on turning each 16 x 16 tile of results into the channels' planes
 * than on the products; here a channel's 16 results are already one contiguous store into its
 * plane. Each group of four codes of the 16 pixels' rows is gathered once (the rows are k4 bytes
 * apart) and meets every channel's four weights, broadcast. */
static int pixel_tile_avx512_vnni(const uint8_t *u, int64_t first, int count, int64_t k4,
                                  const int8_t *packed, const struct output *out)
{
    /* BEGIN SOLUTION week 19, task int8_gemm_avx512_vnni */
    uint32_t fields[PIXEL_K4_MAX / 4][16]; /* group g of the 16 pixels' rows */
    const __mmask16 valid = (__mmask16)((1u << count) - 1);
    const __m512i rows = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
                                                              11, 12, 13, 14, 15),
                                            _mm512_set1_epi32((int32_t)k4));
    for (int64_t g = 0; g < k4 / 4; g++)
        _mm512_storeu_si512(fields[g], _mm512_mask_i32gather_epi32(
                                           _mm512_setzero_si512(), valid, rows,
                                           u + first * k4 + 4 * g, 1));
    const int64_t plane0 = row_start(out, first);
    for (int64_t j0 = 0; j0 < out->m; j0 += 16) {
        const int64_t channels = s2c_min(16, out->m - j0);
        const int8_t *block = packed + j0 * k4;
        __m512i acc[16];
        for (int64_t jj = 0; jj < channels; jj++)
            acc[jj] = _mm512_setzero_si512();
        for (int64_t g = 0; g < k4 / 4; g++) {
            const __m512i pixels = _mm512_loadu_si512(fields[g]);
            for (int64_t jj = 0; jj < channels; jj++)
                acc[jj] = _mm512_dpbusd_epi32(acc[jj], pixels,
                                              _mm512_set1_epi32(four_bytes(
                                                  (const uint8_t *)block, g * 64 + jj * 4)));
        }
        for (int64_t jj = 0; jj < channels; jj++) {
            const int64_t j = j0 + jj;
            const __m512 sums = _mm512_cvtepi32_ps(
                _mm512_sub_epi32(acc[jj], _mm512_set1_epi32(out->correction[j])));
            const __m512 y = _mm512_fmadd_ps(_mm512_set1_ps(out->scale[j]), sums,
                                             _mm512_set1_ps(out->b[j]));
            const int64_t at = plane0 + j * out->group;
            if (out->codes)
                _mm_mask_storeu_epi8(out->codes + at, valid,
                                     _mm512_cvtepi32_epi8(codes_avx512(y, out)));
            else
                _mm512_mask_storeu_ps(out->y + at, valid, y);
        }
    }
    /* END SOLUTION */
    return S2C_OK;
}
#endif

#ifdef S2C_INT8_AVX_VNNI
__attribute__((always_inline)) static inline int
rows_avx_vnni(const uint8_t *u, int64_t first, const int rows, int64_t k4, const int8_t *packed,
              const struct output *out)
{
    /* BEGIN SOLUTION week 19, task int8_gemm_avx_vnni */
    for (int64_t j0 = 0; j0 < out->m; j0 += 8) {
        const int8_t *block = packed + j0 * k4;
        __m256i acc[HALF_TILE];
        for (int r = 0; r < rows; r++)
            acc[r] = _mm256_setzero_si256();
        for (int64_t p = 0; p < k4; p += 4) {
            const __m256i weights = _mm256_loadu_si256((const __m256i *)(block + p * 8));
            for (int r = 0; r < rows; r++) {
                const __m256i x4 = _mm256_set1_epi32(four_bytes(u + (first + r) * k4, p));
                acc[r] = _mm256_dpbusd_avx_epi32(acc[r], x4, weights);
            }
        }
        const int64_t channels = s2c_min(8, out->m - j0);
        for (int r = 0; r < rows; r++) {
            int32_t sums[8];
            _mm256_storeu_si256((__m256i *)sums, acc[r]);
            write_row(out, first + r, j0, channels, sums);
        }
    }
    /* END SOLUTION */
    return S2C_OK;
}

static int tile_avx_vnni(const uint8_t *u, int64_t first, int64_t rows, int64_t k4,
                         const int8_t *packed, const struct output *out)
{
    int status = S2C_OK;
    if (rows == ROWS_PER_TILE) {
        status = rows_avx_vnni(u, first, HALF_TILE, k4, packed, out);
        if (status == S2C_OK)
            status = rows_avx_vnni(u, first + HALF_TILE, HALF_TILE, k4, packed, out);
        return status;
    }
    for (int64_t r = 0; r < rows && status == S2C_OK; r++)
        status = rows_avx_vnni(u, first + r, 1, k4, packed, out);
    return status;
}
#endif

#ifdef S2C_INT8_AVX2
/* Eight channels x four k of packed weights (32 bytes) widened to int16: channels 0-3 in `low`,
 * 4-7 in `high`. vpmaddwd of a row's four u8 (widened, repeated) with them sums each pair of
 * products into an int32: lanes (2c, 2c + 1) hold channel c's two halves until the end. */
__attribute__((always_inline)) static inline int
rows_avx2(const uint8_t *u, int64_t first, const int rows, int64_t k4, const int8_t *packed,
          const struct output *out)
{
    /* BEGIN SOLUTION week 19, task int8_gemm_avx2 */
    for (int64_t j0 = 0; j0 < out->m; j0 += 8) {
        const int8_t *block = packed + j0 * k4;
        __m256i low_acc[HALF_TILE], high_acc[HALF_TILE];
        for (int r = 0; r < rows; r++)
            low_acc[r] = high_acc[r] = _mm256_setzero_si256();
        for (int64_t p = 0; p < k4; p += 4) {
            const __m256i bytes = _mm256_loadu_si256((const __m256i *)(block + p * 8));
            const __m256i low = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(bytes));
            const __m256i high = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(bytes, 1));
            for (int r = 0; r < rows; r++) {
                const __m128i x4 = _mm_cvtsi32_si128(four_bytes(u + (first + r) * k4, p));
                const __m256i x16 = _mm256_broadcastq_epi64(_mm_cvtepu8_epi16(x4));
                low_acc[r] = _mm256_add_epi32(low_acc[r], _mm256_madd_epi16(x16, low));
                high_acc[r] = _mm256_add_epi32(high_acc[r], _mm256_madd_epi16(x16, high));
            }
        }
        const int64_t channels = s2c_min(8, out->m - j0);
        for (int r = 0; r < rows; r++) {
            int32_t halves[16], sums[8];
            _mm256_storeu_si256((__m256i *)halves, low_acc[r]);
            _mm256_storeu_si256((__m256i *)(halves + 8), high_acc[r]);
            for (int64_t jj = 0; jj < 8; jj++)
                sums[jj] = halves[2 * jj] + halves[2 * jj + 1];
            write_row(out, first + r, j0, channels, sums);
        }
    }
    /* END SOLUTION */
    return S2C_OK;
}

static int tile_avx2(const uint8_t *u, int64_t first, int64_t rows, int64_t k4,
                     const int8_t *packed, const struct output *out)
{
    int status = S2C_OK;
    if (rows == ROWS_PER_TILE) {
        status = rows_avx2(u, first, HALF_TILE, k4, packed, out);
        if (status == S2C_OK)
            status = rows_avx2(u, first + HALF_TILE, HALF_TILE, k4, packed, out);
        return status;
    }
    for (int64_t r = 0; r < rows && status == S2C_OK; r++)
        status = rows_avx2(u, first + r, 1, k4, packed, out);
    return status;
}
#endif

/* With AVX-512 VNNI, a convolution of short K runs as tiles of 16 pixels of one image (the last
 * tile of an image shorter). Returns whether it did; *status is the tiles' (S2C_OK: 0, so the
 * largest is a failure if any failed). */
static int pixel_tiles(int kernel, const uint8_t *u, int64_t rows, int64_t k4,
                       const int8_t *packed, const struct output *out, int *status)
{
#ifdef S2C_INT8_AVX512_VNNI
    if (kernel != KERNEL_AVX512_VNNI || out->group == 1 || k4 > PIXEL_K4_MAX)
        return 0;
    const int64_t per_image = (out->group + 15) / 16, tiles = rows / out->group * per_image;
    const int parallel = rows * k4 * out->m >= INT8_PARALLEL_MIN;
    int worst = S2C_OK;
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (parallel) schedule(static) \
        reduction(max : worst)
    for (int64_t t = 0; t < tiles; t++) {
        const int64_t image = t / per_image, pixel = t % per_image * 16;
        const int tile = pixel_tile_avx512_vnni(u, image * out->group + pixel,
                                                (int)s2c_min(16, out->group - pixel), k4, packed,
                                                out);
        worst = tile > worst ? tile : worst;
    }
    *status = worst;
    return 1;
#else
    (void)kernel, (void)u, (void)rows, (void)k4, (void)packed, (void)out, (void)status;
    return 0;
#endif
}

/* Every tile of rows of u [rows][k4] times the packed weights, with `kernel`'s rung; returns
 * S2C_OK, or the largest status a tile returned. */
static int gemm_tiles(int kernel, const uint8_t *u, int64_t rows, int64_t k4,
                      const int8_t *packed, const struct output *out)
{
    int worst = S2C_OK;
    if (pixel_tiles(kernel, u, rows, k4, packed, out, &worst))
        return worst;
    const int64_t tiles = (rows + ROWS_PER_TILE - 1) / ROWS_PER_TILE;
    const int64_t nb = block_channels(kernel);
    const int parallel = rows * k4 * out->m >= INT8_PARALLEL_MIN;
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (parallel) schedule(static) \
        reduction(max : worst)
    for (int64_t t = 0; t < tiles; t++) {
        const int64_t first = t * ROWS_PER_TILE;
        const int64_t count = s2c_min(ROWS_PER_TILE, rows - first);
        int tile;
        switch (kernel) {
#ifdef S2C_INT8_AVX512_VNNI
        case KERNEL_AVX512_VNNI:
            tile = tile_avx512_vnni(u, first, count, k4, packed, out);
            break;
#endif
#ifdef S2C_INT8_AVX_VNNI
        case KERNEL_AVX_VNNI:
            tile = tile_avx_vnni(u, first, count, k4, packed, out);
            break;
#endif
#ifdef S2C_INT8_AVX2
        case KERNEL_AVX2:
            tile = tile_avx2(u, first, count, k4, packed, out);
            break;
#endif
        default:
            tile = tile_scalar(u, first, count, k4, packed, nb, out);
        }
        worst = tile > worst ? tile : worst;
    }
    return worst;
}

static void *alloc_bytes(size_t count)
{
    void *memory = NULL;
    return posix_memalign(&memory, 64, count ? count : 1) ? NULL : memory;
}

/* The GEMM behind both ops, once the rows u [rows][k4] are laid out: packs the weights, runs
 * the tiles, frees the scratch. Takes ownership of u. */
static int int8_gemm(int kernel, uint8_t *u, int64_t rows, int64_t k, int64_t k4,
                     const int8_t *w, int x_zero, struct output *out)
{
    if (kernel == KERNEL_BEST)
        kernel = best_kernel();
    const int64_t nb = block_channels(kernel);
    int8_t *packed = alloc_bytes((size_t)(((out->m + nb - 1) / nb) * nb * k4));
    int32_t *correction = alloc_bytes((size_t)out->m * sizeof(int32_t));
    int status = S2C_OUT_OF_MEMORY;
    if (u && packed && correction) {
        pack_weights(w, packed, out->m, k, k4, nb);
        zero_corrections(w, correction, out->m, k, x_zero);
        out->correction = correction;
        status = gemm_tiles(kernel, u, rows, k4, packed, out);
    }
    free(u);
    free(packed);
    free(correction);
    return status;
}

/* ---- the ops: float32 outputs, or int8 codes (the _to_int8 forms) -------------------------- */

/* The output of an op that writes floats to y. */
static struct output floats(float *y, int64_t m, int64_t group, const float *scale, const float *b)
{
    return (struct output){y, NULL, 0, -128, m, group, scale, b, NULL};
}

/* The output of an op that writes int8 codes to q (zero point y_zero; ReLU: none below it). */
static struct output codes(int8_t *q, int y_zero, int relu, int64_t m, int64_t group,
                           const float *scale, const float *b)
{
    return (struct output){NULL, q, y_zero, relu ? y_zero : -128, m, group, scale, b, NULL};
}

/* The status of rung `kernel` (KERNEL_BEST: the best this CPU has) on a product of one row, one
 * channel and one group of four: S2C_NOT_IMPLEMENTED while that rung is an exercise stub, so that
 * an op's NotImplementedError names the rung it ran, not only the op. */
int s2c_int8_gemm_rung_status(int kernel)
{
    S2C_REQUIRE(s2c_int8_kernel_supported(kernel));
    static const int8_t w[4]; /* zeros, as static storage is */
    const float scale = 1.0f, b = 0.0f;
    float y = 0.0f;
    struct output out = floats(&y, 1, 1, &scale, &b);
    uint8_t *u = alloc_bytes(4);
    if (u)
        memset(u, 0, 4);
    return int8_gemm(kernel, u, 1, 4, 4, w, 0, &out);
}

static int linear(const int8_t *x, int x_zero, const int8_t *w, int64_t n, int64_t k, int kernel,
                  struct output *out)
{
    const int64_t m = out->m;
    S2C_REQUIRE(n >= 1 && k >= 1 && m >= 1 && x_zero >= -128 && x_zero <= 127);
    S2C_REQUIRE(s2c_int8_kernel_supported(kernel));
    const int64_t k4 = (k + 3) / 4 * 4;
    uint8_t *u = alloc_bytes((size_t)(n * k4));
    if (u)
        for (int64_t i = 0; i < n; i++) {
            for (int64_t p = 0; p < k; p++)
                u[i * k4 + p] = (uint8_t)x[i * k + p] ^ 0x80; /* x + 128 */
            for (int64_t p = k; p < k4; p++)
                u[i * k4 + p] = 0; /* meets zero weights */
        }
    return int8_gemm(kernel, u, n, k, k4, w, x_zero, out);
}

int s2c_int8_linear(const int8_t *x, int x_zero, const int8_t *w, const float *scale,
                    const float *b, float *y, int64_t n, int64_t k, int64_t m, int kernel)
{
    /* BEGIN SOLUTION week 19, task int8_linear */
    struct output out = floats(y, m, 1, scale, b);
    return linear(x, x_zero, w, n, k, kernel, &out);
    /* END SOLUTION */
}

int s2c_int8_linear_to_int8(const int8_t *x, int x_zero, const int8_t *w, const float *scale,
                            const float *b, int y_zero, int relu, int8_t *q, int64_t n, int64_t k,
                            int64_t m, int kernel)
{
    S2C_REQUIRE(y_zero >= -128 && y_zero <= 127);
    /* BEGIN SOLUTION week 19, task int8_linear_to_int8 */
    struct output out = codes(q, y_zero, relu, m, 1, scale, b);
    return linear(x, x_zero, w, n, k, kernel, &out);
    /* END SOLUTION */
}

/* dst[0 .. s-1] = src[0 .. s-1]; a constant length for the usual kernel widths lets the compiler
 * copy them in one or two moves instead of a loop. */
static inline void copy_codes(uint8_t *dst, const uint8_t *src, int64_t s)
{
    switch (s) {
    case 3:
        memcpy(dst, src, 3);
        break;
    case 5:
        memcpy(dst, src, 5);
        break;
    default:
        memcpy(dst, src, (size_t)s);
    }
}

/* x [n, c, h, w], w [m, c, r, s] -> [n, m, oh, ow]: the rows are the output pixels, each the
 * receptive field's c * r * s codes (x_zero, the code of 0.0, in the padding). */
static int conv2d(const int8_t *x, int x_zero, const int8_t *w, int64_t n, int64_t c, int64_t h,
                  int64_t width, int64_t r, int64_t s, int64_t stride, int64_t padding,
                  int kernel, struct output *out)
{
    const int64_t m = out->m;
    S2C_REQUIRE(n >= 1 && c >= 1 && h >= 1 && width >= 1 && m >= 1 && r >= 1 && s >= 1);
    S2C_REQUIRE(stride >= 1 && padding >= 0 && x_zero >= -128 && x_zero <= 127);
    S2C_REQUIRE(s2c_int8_kernel_supported(kernel));
    const int64_t oh = s2c_out_size(h, r, stride, padding), ow = s2c_out_size(width, s, stride,
                                                                              padding);
    S2C_REQUIRE(oh >= 1 && ow >= 1);
    const int64_t k = c * r * s, k4 = (k + 3) / 4 * 4, rows = n * oh * ow;
    const int64_t ph = h + 2 * padding, pw = width + 2 * padding;
    uint8_t *padded = alloc_bytes((size_t)(n * c * ph * pw)); /* x + 128, bordered by x_zero's */
    uint8_t *u = alloc_bytes((size_t)(rows * k4));
    if (padded && u) {
        memset(padded, (uint8_t)x_zero ^ 0x80, (size_t)(n * c * ph * pw));
        for (int64_t plane = 0; plane < n * c; plane++)
            for (int64_t iy = 0; iy < h; iy++) {
                const int8_t *line = x + (plane * h + iy) * width;
                uint8_t *inside = padded + (plane * ph + iy + padding) * pw + padding;
                for (int64_t ix = 0; ix < width; ix++)
                    inside[ix] = (uint8_t)line[ix] ^ 0x80;
            }
        /* Each field is c * r rows of s codes of the padded image: copies without a branch. */
        #pragma omp parallel for num_threads(s2c_get_num_threads()) if (rows * k4 >= S2C_PARALLEL_MIN)
        for (int64_t image_row = 0; image_row < n * oh; image_row++) { /* one row of outputs */
            const int64_t image = image_row / oh, oy = image_row % oh;
            for (int64_t ox = 0; ox < ow; ox++) {
                uint8_t *field = u + (image_row * ow + ox) * k4;
                for (int64_t ch = 0; ch < c; ch++) {
                    const uint8_t *corner =
                        padded + ((image * c + ch) * ph + oy * stride) * pw + ox * stride;
                    for (int64_t i = 0; i < r; i++, field += s)
                        copy_codes(field, corner + i * pw, s);
                }
                memset(field, 0, (size_t)(k4 - k));
            }
        }
    }
    free(padded);
    return int8_gemm(kernel, u, rows, k, k4, w, x_zero, out);
}

int s2c_int8_conv2d(const int8_t *x, int x_zero, const int8_t *w, const float *scale,
                    const float *b, float *y, int64_t n, int64_t c, int64_t h, int64_t width,
                    int64_t m, int64_t r, int64_t s, int64_t stride, int64_t padding, int kernel)
{
    /* BEGIN SOLUTION week 19, task int8_conv2d */
    struct output out = floats(y, m, s2c_out_size(h, r, stride, padding) *
                               s2c_out_size(width, s, stride, padding), scale, b);
    return conv2d(x, x_zero, w, n, c, h, width, r, s, stride, padding, kernel, &out);
    /* END SOLUTION */
}

int s2c_int8_conv2d_to_int8(const int8_t *x, int x_zero, const int8_t *w, const float *scale,
                            const float *b, int y_zero, int relu, int8_t *q, int64_t n, int64_t c,
                            int64_t h, int64_t width, int64_t m, int64_t r, int64_t s,
                            int64_t stride, int64_t padding, int kernel)
{
    S2C_REQUIRE(y_zero >= -128 && y_zero <= 127);
    /* BEGIN SOLUTION week 19, task int8_conv2d_to_int8 */
    struct output out = codes(q, y_zero, relu, m, s2c_out_size(h, r, stride, padding) *
                              s2c_out_size(width, s, stride, padding), scale, b);
    return conv2d(x, x_zero, w, n, c, h, width, r, s, stride, padding, kernel, &out);
    /* END SOLUTION */
}

/* Max-pooling of int8 codes: x [planes, h, w] -> y [planes, oh, ow], no padding. A code's order
 * is its value's (x = scale * (q - zero) with scale > 0), so the largest code is the code of
 * the largest value, and no argmax is kept (inference). */
int s2c_maxpool2d_int8(const int8_t *x, int8_t *y, int64_t planes, int64_t h, int64_t w,
                       int64_t k, int64_t stride)
{
    S2C_REQUIRE(planes >= 1 && h >= 1 && w >= 1 && k >= 1 && stride >= 1 && k <= h && k <= w);
    /* BEGIN SOLUTION week 19, task maxpool2d_int8 */
    const int64_t oh = (h - k) / stride + 1, ow = (w - k) / stride + 1;
    if (k == 2 && stride == 2) { /* the networks' pooling, 32 windows a step where AVX-512 runs */
#ifdef S2C_INT8_AVX512_VNNI
        const int wide_pooling = supported(KERNEL_AVX512_VNNI);
#endif
        #pragma omp parallel for num_threads(s2c_get_num_threads()) if (planes * h * w >= S2C_PARALLEL_MIN)
        for (int64_t line = 0; line < planes * oh; line++) { /* one row of outputs */
            const int8_t *top = x + (line / oh * h + line % oh * 2) * w, *bottom = top + w;
            int8_t *row = y + line * ow;
            int64_t ox = 0;
#ifdef S2C_INT8_AVX512_VNNI
            if (wide_pooling)
                for (; ox < ow; ox += 32) { /* 64 codes of each row -> 32 results, masked */
                    const int64_t count = s2c_min(32, ow - ox);
                    const __mmask64 loads = count == 32 ? ~(__mmask64)0
                                                        : ((__mmask64)1 << (2 * count)) - 1;
                    const __m512i both = _mm512_max_epi8(
                        _mm512_maskz_loadu_epi8(loads, top + 2 * ox),
                        _mm512_maskz_loadu_epi8(loads, bottom + 2 * ox));
                    /* each 16-bit lane holds a window's two columns: the left sign-extended,
                     * the right shifted down, their max packed back to bytes */
                    const __m512i left = _mm512_srai_epi16(_mm512_slli_epi16(both, 8), 8);
                    const __m512i right = _mm512_srai_epi16(both, 8);
                    _mm256_mask_storeu_epi8(row + ox, (__mmask32)(((uint64_t)1 << count) - 1),
                                            _mm512_cvtepi16_epi8(_mm512_max_epi16(left, right)));
                }
#endif
            for (; ox < ow; ox++) {
                const int8_t left = top[2 * ox] > bottom[2 * ox] ? top[2 * ox] : bottom[2 * ox];
                const int8_t right = top[2 * ox + 1] > bottom[2 * ox + 1] ? top[2 * ox + 1]
                                                                          : bottom[2 * ox + 1];
                row[ox] = left > right ? left : right;
            }
        }
        return S2C_OK;
    }
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (planes * h * w >= S2C_PARALLEL_MIN)
    for (int64_t plane = 0; plane < planes; plane++)
        for (int64_t oy = 0; oy < oh; oy++) {
            int8_t *row = y + (plane * oh + oy) * ow;
            for (int64_t ox = 0; ox < ow; ox++)
                row[ox] = -128;
            for (int64_t i = 0; i < k; i++) {
                const int8_t *line = x + (plane * h + oy * stride + i) * w;
                for (int64_t j = 0; j < k; j++)
                    for (int64_t ox = 0; ox < ow; ox++) /* one pass a window column: vectorizes */
                        row[ox] = line[ox * stride + j] > row[ox] ? line[ox * stride + j] : row[ox];
            }
        }
    /* END SOLUTION */
    return S2C_OK;
}

/* int8/gemm.cu -- the int8 GEMM of int8_linear and int8_conv2d (week 19):
 *     y = scale[j] * sum_k (x[i, k] - x_zero) * w[j, k] + b[j]      (the sum exact in int32)
 *
 * Both ops first lay their rows out as `rows` [R, K32] int8 (K padded with zeros to a multiple of
 * 32: the rungs below then have no tail along K) and the weights as `packed` [M, K32], with each
 * channel's sum of weights; the GEMM multiplies the codes as they are (signed by signed) and
 * takes the zero point out at the end: sum (x - z) w = sum x w - z * sum w.
 *   rung 1, dp4a: __dp4a multiplies four int8 pairs and adds them to an int32 (sm_61 and later);
 *     each thread of a 16 x 16 block computes 4 x 4 outputs of a 64 x 64 tile from shared memory.
 *   rung 2, mma: a warp's mma.sync.m16n8k32 multiplies a 16 x 32 tile of int8 rows by a 32 x 8
 *     tile of weights into int32 on the tensor cores (sm_80 and later); each warp computes 16
 *     rows x 32 channels from fragments it loads straight from device memory. A grid that fills
 *     the GPU (a large product) has blocks of 4 warps side by side along the rows, 64 x 32, each
 *     warp walking all of K; a small one (a dense layer at batch 256) has blocks of 16 x 32 whose
 *     4 warps split K, each with 4 steps' loads in flight, their partial sums added in shared
 *     memory: 4x the warps, each with a quarter of the steps and a quarter of the latencies to
 *     wait out (gemm_mma draws the line). Where the instruction is missing (an older GPU, the CPU
 *     emulation of the tests) the same fragments go through a software model of it, made of warp
 *     shuffles: the layout of the fragments is what the tests check.
 * Output row i goes to y[(i / group) * m * group + i % group], channel j `group` further: group 1
 * is a [R, M] matrix, group OH*OW the [N, M, OH, OW] image of a convolution. The _to_int8 forms
 * write the int8 code of each y instead (codes.cuh; with a ReLU, none below the zero point): the
 * next layer's input, with no float32 tensor between the layers. */
#include "../common.h"
#include "codes.cuh"

#define K_STEP 32
#define TILE 64
#define MMA_COLUMNS 32 /* a warp's channels on rung 2: four 16 x 8 MMA tiles */
#define MMA_WARPS 4    /* a block's warps on rung 2 */

struct int8_output {
    float *y;      /* float32 results, or */
    int8_t *codes; /* their int8 codes (zero point code_zero, none below code_low) */
    int code_zero, code_low;
    const float *scale, *b;
    const int32_t *weight_sums;
    int64_t rows, m, group;
    int x_zero;
};

static __device__ __forceinline__ void write_output(const int8_output out, int64_t i, int64_t j,
                                                    int32_t sum)
{
    if (i >= out.rows || j >= out.m)
        return;
    const int64_t image = index_div(i, out.group); /* 32-bit where it fits */
    const int64_t at = image * out.m * out.group + (i - image * out.group) + j * out.group;
    const float y = rescaled_sum(sum, out.x_zero, out.weight_sums[j], out.scale[j], out.b[j]);
    if (out.codes)
        out.codes[at] = int8_code(y, out.code_zero, out.code_low);
    else
        out.y[at] = y;
}

/* The output of an op writing floats, or int8 codes (relu: none below y_zero). */
static int8_output floats(float *y, const float *scale, const float *b, int64_t rows, int64_t m,
                          int64_t group, int x_zero)
{
    return int8_output{y, nullptr, 0, -128, scale, b, nullptr, rows, m, group, x_zero};
}

static int8_output codes(int8_t *q, int y_zero, int relu, const float *scale, const float *b,
                         int64_t rows, int64_t m, int64_t group, int x_zero)
{
    return int8_output{nullptr, q, y_zero, relu ? y_zero : -128, scale, b, nullptr, rows, m,
                       group, x_zero};
}

__global__ void pack_weights_kernel(const int8_t *w, int8_t *packed, int32_t *sums, int64_t m,
                                    int64_t k, int64_t k32);
__global__ void linear_rows_kernel(const int8_t *x, int8_t *rows, int64_t n, int64_t k,
                                   int64_t k32);
__global__ void conv_rows_kernel(const int8_t *x, int8_t *rows, int64_t n, int64_t c, int64_t h,
                                 int64_t width, int64_t r, int64_t s, int64_t stride,
                                 int64_t padding, int64_t oh, int64_t ow, int x_zero, int64_t k32);
__global__ void gemm_dp4a_kernel(const int8_t *rows, const int8_t *packed, int64_t k32,
                                 int8_output out);
template <int SPLIT_K, int STEPS_IN_FLIGHT>
__global__ void gemm_mma_kernel(const int8_t *rows, int64_t row_bytes, int64_t row_codes,
                                const int8_t *packed, int64_t k32, int8_output out);

/* Whether the current device has int8 tensor-core MMA and this library holds code for it. */
static bool device_has_int8_mma(void)
{
    int device = 0, major = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess)
        return false;
    return major >= 8;
}

extern "C" int s2c_cuda_int8_best_rung(int *rung)
{
    *rung = device_has_int8_mma() ? 2 : 1;
    return S2C_CUDA_OK;
}

/* packed and weight_sums from w (pack_weights_kernel). */
static int pack_weights(const int8_t *w, int8_t *packed, int32_t *weight_sums, int64_t m,
                        int64_t k, int64_t k32)
{
    launch_overlapped(pack_weights_kernel, dim3((unsigned)blocks_for(m * 32, 128)), dim3(128), 0,
                      w, packed, weight_sums, m, k, k32);
    LAUNCH_CHECK("pack_weights_kernel");
    return S2C_CUDA_OK;
}

/* Rung 2 on rows row_bytes apart, their codes past row_codes read as zeros (gemm_mma_kernel),
 * launched one of two ways. Blocks of 64 rows, 4 warps side by side along the rows, each walking
 * all of K one step at a time: on a full GPU the other warps hide each step's load latency, and a
 * block's 4 warps share each weight fragment in L1. Where that grid has fewer blocks than 2 a
 * multiprocessor (at most 2 warps a scheduler, each waiting out a load's latency every step),
 * blocks of 16 rows whose 4 warps split K, each with 4 steps' loads in flight: 4x the blocks,
 * and a quarter of the steps and a sixteenth of the waits a warp. A dense layer at inference's
 * batch 256 (the Fashion CNN's 3,200 -> 256: 32 blocks of 64 rows on 132 multiprocessors, 100
 * steps a warp) takes the second; a 4096-row product (8,192 blocks) the first. */
static int gemm_mma(const int8_t *rows, int64_t row_bytes, int64_t row_codes,
                    const int8_t *packed, int64_t k32, int8_output out)
{
    const int64_t columns = ceil_div(out.m, MMA_COLUMNS), row_blocks = ceil_div(out.rows, TILE);
    if (columns * row_blocks >= 2 * device_multiprocessors())
        launch_overlapped(gemm_mma_kernel<1, 1>, dim3((unsigned)columns, (unsigned)row_blocks),
                          dim3(32 * MMA_WARPS), 0, rows, row_bytes, row_codes, packed, k32, out);
    else
        launch_overlapped(gemm_mma_kernel<MMA_WARPS, 4>,
                          dim3((unsigned)columns, (unsigned)ceil_div(out.rows, 16)),
                          dim3(32 * MMA_WARPS), 0, rows, row_bytes, row_codes, packed, k32, out);
    LAUNCH_CHECK("gemm_mma_kernel");
    return S2C_CUDA_OK;
}

/* The GEMM on laid-out rows: packs the weights (unless w is NULL: `packed` and `weight_sums`
 * already hold them), then runs `rung` (0: the best this GPU has). */
static int int8_gemm(const int8_t *rows, const int8_t *w, int8_t *packed, int32_t *weight_sums,
                     int64_t k, int64_t k32, int rung, int8_output out)
{
    if (w != nullptr) {
        const int status = pack_weights(w, packed, weight_sums, out.m, k, k32);
        if (status != S2C_CUDA_OK)
            return status;
    }
    out.weight_sums = weight_sums;
    if (rung == 0)
        rung = device_has_int8_mma() ? 2 : 1;
    if (rung == 2) {
        return gemm_mma(rows, k32, k32, packed, k32, out);
    } else if (rung == 1) {
        // BEGIN SOLUTION week 19, task int8_gemm_dp4a
        dim3 grid((unsigned)ceil_div(out.m, TILE), (unsigned)ceil_div(out.rows, TILE));
        launch_overlapped(gemm_dp4a_kernel, grid, dim3(16, 16), 0, rows, (const int8_t *)packed,
                          k32, out);
        LAUNCH_CHECK("gemm_dp4a_kernel");
        // END SOLUTION
    } else {
        return S2C_CUDA_BAD_ARGUMENT;
    }
    return S2C_CUDA_OK;
}

/* The rows of a dense layer (x itself, padded), then the GEMM into `out`. Where K is already a
 * multiple of K_STEP (the Fashion CNN's 3,200 and 256) and x lies on a 4-byte boundary (the
 * GEMMs read 4 codes at a time), x is its own rows: no copy, one kernel fewer. */
static int linear(const int8_t *x, const int8_t *w, int8_t *rows, int8_t *packed,
                  int32_t *weight_sums, int64_t k, int rung, int8_output out)
{
    if (out.rows < 1 || k < 1 || out.m < 1 || out.x_zero < -128 || out.x_zero > 127)
        return S2C_CUDA_BAD_ARGUMENT;
    // BEGIN SOLUTION week 19, task int8_linear
    const int64_t k32 = ceil_div(k, K_STEP) * K_STEP;
    if (k == k32 && (uintptr_t)x % 4 == 0)
        return int8_gemm(x, w, packed, weight_sums, k, k32, rung, out);
    launch_overlapped(linear_rows_kernel, dim3((unsigned)blocks_for(out.rows * k32 / 4, 256)),
                      dim3(256), 0, x, rows, out.rows, k, k32);
    LAUNCH_CHECK("linear_rows_kernel");
    return int8_gemm(rows, w, packed, weight_sums, k, k32, rung, out);
    // END SOLUTION
}

/* The receptive fields of a convolution as rows, then the GEMM into `out`. */
static int conv2d(const int8_t *x, const int8_t *w, int8_t *rows, int8_t *packed,
                  int32_t *weight_sums, int64_t n, int64_t c, int64_t h, int64_t width, int64_t r,
                  int64_t s, int64_t stride, int64_t padding, int rung, int8_output out)
{
    if (n < 1 || c < 1 || h < 1 || width < 1 || out.m < 1 || r < 1 || s < 1 || stride < 1 ||
        padding < 0 || out.x_zero < -128 || out.x_zero > 127)
        return S2C_CUDA_BAD_ARGUMENT;
    const int64_t oh = (h + 2 * padding - r) / stride + 1, ow = (width + 2 * padding - s) / stride + 1;
    if (oh < 1 || ow < 1)
        return S2C_CUDA_BAD_ARGUMENT;
    // BEGIN SOLUTION week 19, task int8_conv2d
    const int64_t k = c * r * s, k32 = ceil_div(k, K_STEP) * K_STEP, count = n * oh * ow;
    launch_overlapped(conv_rows_kernel, dim3((unsigned)blocks_for(count * k32 / 4, 256)),
                      dim3(256), 0, x, rows, n, c, h, width, r, s, stride, padding, oh, ow,
                      out.x_zero, k32);
    LAUNCH_CHECK("conv_rows_kernel");
    return int8_gemm(rows, w, packed, weight_sums, k, k32, rung, out);
    // END SOLUTION
}

/* OH * OW (0 for a stride conv2d refuses). */
static int64_t conv_outputs(int64_t h, int64_t width, int64_t r, int64_t s, int64_t stride,
                            int64_t padding)
{
    if (stride < 1)
        return 0;
    return ((h + 2 * padding - r) / stride + 1) * ((width + 2 * padding - s) / stride + 1);
}

extern "C" int s2c_cuda_int8_linear(const int8_t *x, int x_zero, const int8_t *w,
                                    const float *scale, const float *b, float *y, int8_t *rows,
                                    int8_t *packed, int32_t *weight_sums, int64_t n, int64_t k,
                                    int64_t m, int rung)
{
    return linear(x, w, rows, packed, weight_sums, k, rung, floats(y, scale, b, n, m, 1, x_zero));
}

extern "C" int s2c_cuda_int8_linear_to_int8(const int8_t *x, int x_zero, const int8_t *w,
                                            const float *scale, const float *b, int y_zero,
                                            int relu, int8_t *q, int8_t *rows, int8_t *packed,
                                            int32_t *weight_sums, int64_t n, int64_t k, int64_t m,
                                            int rung)
{
    if (y_zero < -128 || y_zero > 127)
        return S2C_CUDA_BAD_ARGUMENT;
    // BEGIN SOLUTION week 19, task int8_linear_to_int8
    return linear(x, w, rows, packed, weight_sums, k, rung,
                  codes(q, y_zero, relu, scale, b, n, m, 1, x_zero));
    // END SOLUTION
}

extern "C" int s2c_cuda_int8_conv2d(const int8_t *x, int x_zero, const int8_t *w,
                                    const float *scale, const float *b, float *y, int8_t *rows,
                                    int8_t *packed, int32_t *weight_sums, int64_t n, int64_t c,
                                    int64_t h, int64_t width, int64_t m, int64_t r, int64_t s,
                                    int64_t stride, int64_t padding, int rung)
{
    const int64_t group = conv_outputs(h, width, r, s, stride, padding);
    return conv2d(x, w, rows, packed, weight_sums, n, c, h, width, r, s, stride, padding, rung,
                  floats(y, scale, b, n * group, m, group, x_zero));
}

extern "C" int s2c_cuda_int8_conv2d_to_int8(const int8_t *x, int x_zero, const int8_t *w,
                                            const float *scale, const float *b, int y_zero,
                                            int relu, int8_t *q, int8_t *rows, int8_t *packed,
                                            int32_t *weight_sums, int64_t n, int64_t c, int64_t h,
                                            int64_t width, int64_t m, int64_t r, int64_t s,
                                            int64_t stride, int64_t padding, int rung)
{
    if (y_zero < -128 || y_zero > 127)
        return S2C_CUDA_BAD_ARGUMENT;
    // BEGIN SOLUTION week 19, task int8_conv2d_to_int8
    const int64_t group = conv_outputs(h, width, r, s, stride, padding);
    return conv2d(x, w, rows, packed, weight_sums, n, c, h, width, r, s, stride, padding, rung,
                  codes(q, y_zero, relu, scale, b, n * group, m, group, x_zero));
    // END SOLUTION
}

/* A model's weights packed once, when it is loaded (packed [m, k32], k32 = k rounded up to 32,
 * and weight_sums [m]), for int8_linear_packed and inference's int8_conv2d_pool_to_int8. */
extern "C" int s2c_cuda_int8_pack_weights(const int8_t *w, int8_t *packed, int32_t *weight_sums,
                                          int64_t m, int64_t k)
{
    if (m < 1 || k < 1)
        return S2C_CUDA_BAD_ARGUMENT;
    return pack_weights(w, packed, weight_sums, m, k, ceil_div(k, K_STEP) * K_STEP);
}

/* int8_linear (q NULL: floats y) or int8_linear_to_int8 (y NULL: codes q) on weights packed by
 * s2c_cuda_int8_pack_weights: the same GEMM, without the packing kernel of every call. */
extern "C" int s2c_cuda_int8_linear_packed(const int8_t *x, int x_zero, const int8_t *packed,
                                           const int32_t *weight_sums, const float *scale,
                                           const float *b, float *y, int8_t *q, int y_zero,
                                           int relu, int8_t *rows, int64_t n, int64_t k,
                                           int64_t m, int rung)
{
    if ((y == nullptr) == (q == nullptr) || y_zero < -128 || y_zero > 127)
        return S2C_CUDA_BAD_ARGUMENT;
    int8_output out = y ? floats(y, scale, b, n, m, 1, x_zero)
                        : codes(q, y_zero, relu, scale, b, n, m, 1, x_zero);
    if (rung == 0)
        rung = device_has_int8_mma() ? 2 : 1;
    /* The MMA rung reads x as it is wherever its rows start on 4-byte boundaries (LeNet-5's K of
     * 400, 120 and 84): no rows kernel. */
    if (rung == 2 && k >= 1 && k % 4 == 0 && (uintptr_t)x % 4 == 0 && n >= 1 && m >= 1 &&
        x_zero >= -128 && x_zero <= 127) {
        out.weight_sums = weight_sums;
        return gemm_mma(x, k, k, packed, ceil_div(k, K_STEP) * K_STEP, out);
    }
    return linear(x, nullptr, rows, (int8_t *)packed, (int32_t *)weight_sums, k, rung, out);
}

/* packed [m, k32] = w [m, k] padded with zeros; sums[j] = the sum of w's row j. A warp per row,
 * its lanes on neighbouring bytes (one 32-byte load a step, where a thread per row would walk its
 * row alone: 3,200 dependent loads for the Fashion CNN's first dense layer), the sum by shuffles.
 * Cost: m k32 bytes read and written, m (k32 / 32 + 5) warp steps. */
__global__ void pack_weights_kernel(const int8_t *w, int8_t *packed, int32_t *sums, int64_t m,
                                    int64_t k, int64_t k32)
{
    wait_for_previous_kernel();
    const int64_t j = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (j >= m) /* the whole warp: blocks are whole warps */
        return;
    int32_t sum = 0;
    for (int64_t p = lane; p < k32; p += 32) {
        const int8_t value = p < k ? w[j * k + p] : 0;
        packed[j * k32 + p] = value;
        sum += value;
    }
    for (int offset = 16; offset > 0; offset /= 2)
        sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (lane == 0)
        sums[j] = sum;
}

/* rows [n, k32] = x [n, k] padded with zeros (which meet zero weights): a thread per 4 bytes of a
 * row, written as one int, its row found by a 32-bit division where the sizes allow (index_div).
 * Cost: n k bytes read, n k32 written. */
__global__ void linear_rows_kernel(const int8_t *x, int8_t *rows, int64_t n, int64_t k,
                                   int64_t k32)
{
    wait_for_previous_kernel();
    const int64_t quads = k32 / 4, at = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (at >= n * quads)
        return;
    const int64_t i = index_div(at, quads), first = (at - i * quads) * 4;
    uint32_t four = 0;
    for (int byte = 0; byte < 4; byte++) {
        const int64_t p = first + byte;
        four |= (uint32_t)(uint8_t)(p < k ? x[i * k + p] : 0) << (8 * byte);
    }
    *(uint32_t *)(rows + at * 4) = four;
}

/* rows [n * oh * ow, k32]: output pixel i's receptive field, in w's (c, r, s) order; x_zero (the
 * code of 0.0) in the padding, zeros past c * r * s. A thread per 4 bytes of a row, written as one
 * int (k32 is a multiple of 4): the (c, r, s) of its first byte by division, the next three by
 * counting on, and the pixel's (image, oy, ox) by 32-bit divisions where the sizes allow
 * (index_div): a 64-bit division costs as many instructions as the rest of the thread's work.
 * Cost: n oh ow k32 bytes written, each pixel read r s times (from L1/L2). */
__global__ void conv_rows_kernel(const int8_t *x, int8_t *rows, int64_t n, int64_t c, int64_t h,
                                 int64_t width, int64_t r, int64_t s, int64_t stride,
                                 int64_t padding, int64_t oh, int64_t ow, int x_zero, int64_t k32)
{
    wait_for_previous_kernel();
    const int64_t quads = k32 / 4, at = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (at >= n * oh * ow * quads)
        return;
    const int64_t i = index_div(at, quads), image = index_div(i, oh * ow);
    const int64_t pixel = i - image * oh * ow, oy = index_div(pixel, ow), ox = pixel - oy * ow;
    const int8_t *planes = x + image * c * h * width;
    const int first = (int)(at - i * quads) * 4, taps = (int)(r * s);
    int ch = first / taps, tap_row = first % taps / (int)s, tap_column = first % (int)s;
    uint32_t four = 0;
    for (int byte = 0; byte < 4; byte++) {
        int8_t code = 0;
        if (ch < c) {
            const int64_t iy = oy * stride - padding + tap_row;
            const int64_t ix = ox * stride - padding + tap_column;
            const bool inside = iy >= 0 && iy < h && ix >= 0 && ix < width;
            code = inside ? planes[(ch * h + iy) * width + ix] : (int8_t)x_zero;
        }
        four |= (uint32_t)(uint8_t)code << (8 * byte);
        if (++tap_column == s) { /* the next byte's tap */
            tap_column = 0;
            if (++tap_row == r) {
                tap_row = 0;
                ch++;
            }
        }
    }
    *(uint32_t *)(rows + at * 4) = four;
}

/* Rung 1: a 64 x 64 tile of outputs per 16 x 16 block, 4 x 4 per thread, K_STEP bytes of rows
 * and weights at a time through shared memory as ints (four codes each), stored transposed,
 * [quad][line]: a thread's 4 rows (or channels) at one quad are then one 16-byte read, the 16
 * threads of a warp's row reading 256 neighbouring bytes (two passes of the banks) and its 2 rows
 * of threads 2 addresses (a broadcast): 2 reads for 16 __dp4a. Stored [line][quad], the 16
 * threads' channels would lie 32 ints apart, all in one bank: 16 passes for each read. The
 * lines are padded by 4 ints, so that a warp's stores (4 lines of 8 quads) meet 32 banks.
 * Cost: 2 R M K32 int8 operations (R M K32 / 4 __dp4a); device memory the rows and weights once
 * per tile column and row: R K32 M / 64 + M K32 R / 64 bytes (from L2), the outputs once. */
__global__ void gemm_dp4a_kernel(const int8_t *rows, const int8_t *packed, int64_t k32,
                                 int8_output out)
{
    wait_for_previous_kernel();
    // BEGIN SOLUTION week 19, task int8_gemm_dp4a
    __shared__ __align__(16) int row_tile[K_STEP / 4][TILE + 4];
    __shared__ __align__(16) int weight_tile[K_STEP / 4][TILE + 4];
    const int tx = threadIdx.x, ty = threadIdx.y, thread = ty * 16 + tx;
    const int64_t first_row = (int64_t)blockIdx.y * TILE, first_column = (int64_t)blockIdx.x * TILE;
    int sums[4][4] = {};
    for (int64_t k0 = 0; k0 < k32; k0 += K_STEP) {
        for (int load = thread; load < TILE * K_STEP / 4; load += 256) { /* 2 ints each */
            const int line = load / (K_STEP / 4), quad = load % (K_STEP / 4);
            const int64_t i = first_row + line, j = first_column + line;
            row_tile[quad][line] = i < out.rows ? *(const int *)(rows + i * k32 + k0 + 4 * quad) : 0;
            weight_tile[quad][line] = j < out.m ? *(const int *)(packed + j * k32 + k0 + 4 * quad) : 0;
        }
        __syncthreads();
        for (int quad = 0; quad < K_STEP / 4; quad++) {
            const int4 a = *reinterpret_cast<const int4 *>(&row_tile[quad][ty * 4]);
            const int4 b = *reinterpret_cast<const int4 *>(&weight_tile[quad][tx * 4]);
            const int row_codes[4] = {a.x, a.y, a.z, a.w}, weight_codes[4] = {b.x, b.y, b.z, b.w};
            for (int r = 0; r < 4; r++)
                for (int c = 0; c < 4; c++)
                    sums[r][c] = __dp4a(row_codes[r], weight_codes[c], sums[r][c]);
        }
        __syncthreads();
    }
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            write_output(out, first_row + ty * 4 + a, first_column + tx * 4 + b, sums[a][b]);
    // END SOLUTION
}

/* d += a (16 x 32, row-major) x b (32 x 8, column-major), int8 into int32, for the warp; each
 * lane holds its fragments as PTX lays them out (g = lane / 4, t = lane % 4):
 *   a[0]: row g, k 4t..4t+3    a[1]: row g+8, same k    a[2], a[3]: the same rows, k + 16
 *   b[0]: column g, k 4t..4t+3                           b[1]: k + 16
 *   d[0], d[1]: row g, columns 2t, 2t+1                  d[2], d[3]: row g+8 */
static __device__ __forceinline__ void mma_s8_16x8x32(int d[4], const int a[4], const int b[2])
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    /* The instruction's definition, from the same fragments: every lane gathers the rows and
     * columns of its outputs from the lanes that hold them. */
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    int8_t row_g[32], row_g8[32], column_0[32], column_1[32];
    for (int delta = 0; delta < 32; delta++) {
        const int source = lane ^ delta, source_g = source / 4, source_t = source % 4;
        int held[6];
        for (int r = 0; r < 4; r++)
            held[r] = __shfl_xor_sync(0xffffffffu, a[r], delta);
        for (int r = 0; r < 2; r++)
            held[4 + r] = __shfl_xor_sync(0xffffffffu, b[r], delta);
        for (int byte = 0; byte < 4; byte++) {
            const int low = 4 * source_t + byte, high = low + 16;
            const auto code = [&](int value) { return (int8_t)(value >> (8 * byte)); };
            if (source_g == g) {
                row_g[low] = code(held[0]), row_g8[low] = code(held[1]);
                row_g[high] = code(held[2]), row_g8[high] = code(held[3]);
            }
            if (source_g == 2 * t)
                column_0[low] = code(held[4]), column_0[high] = code(held[5]);
            if (source_g == 2 * t + 1)
                column_1[low] = code(held[4]), column_1[high] = code(held[5]);
        }
    }
    for (int kk = 0; kk < 32; kk++) {
        d[0] += row_g[kk] * column_0[kk], d[1] += row_g[kk] * column_1[kk];
        d[2] += row_g8[kk] * column_0[kk], d[3] += row_g8[kk] * column_1[kk];
    }
#endif
}

/* Rung 2: a warp computes 16 rows by MMA_COLUMNS channels, four 16 x 8 MMA tiles side by side;
 * fragments load straight from the rows and the packed weights (4 aligned bytes a register), zero
 * past the last row or channel. The rows lie row_bytes apart, their codes past row_codes read as
 * zeros: laid-out rows (both k32), or a dense layer's x itself where its K is a multiple of 4
 * (row_bytes = row_codes = K). SPLIT_K warps share each 16 rows: the block's warps in groups of
 * SPLIT_K, group after group along the rows, warp p of a group taking K steps p, p + SPLIT_K,
 * p + 2 SPLIT_K ...; their partial tiles then meet in shared memory, where warp p adds up tiles
 * p, p + SPLIT_K ... of its group and writes them (integer sums: the same bits in any order).
 * A warp loads the fragments of STEPS_IN_FLIGHT of its steps before it multiplies them, so that
 * their loads wait out one latency together.
 * Cost: 2 R M K32 int8 operations, (R / 16) (M / 8) (K32 / 32) MMAs, each warp step 12 four-byte
 * loads (4 of rows, 8 of weights: L1 and L2 hits but for the first reader) for 4 MMAs; the rows
 * read once per 32 channels, the weights once per block of rows (64 or 16); split, 8 KB of shared
 * memory a block and one barrier. Time: K32 / (32 SPLIT_K STEPS_IN_FLIGHT) load latencies a warp
 * where the GPU holds too few warps to hide them. */
template <int SPLIT_K, int STEPS_IN_FLIGHT>
__global__ void gemm_mma_kernel(const int8_t *rows, int64_t row_bytes, int64_t row_codes,
                                const int8_t *packed, int64_t k32, int8_output out)
{
    wait_for_previous_kernel();
    constexpr int TILES = MMA_COLUMNS / 8, GROUPS = MMA_WARPS / SPLIT_K;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
    const int group = warp / SPLIT_K, part = warp % SPLIT_K;
    const int64_t first_row = ((int64_t)blockIdx.y * GROUPS + group) * 16;
    const int64_t first_column = (int64_t)blockIdx.x * MMA_COLUMNS, steps = k32 / K_STEP;
    int sums[TILES][4] = {};
    const auto quad = [&](const int8_t *base, int64_t line, int64_t lines, int64_t at) {
        return line < lines ? *(const int *)(base + line * k32 + at) : 0;
    };
    const auto row_quad = [&](int64_t line, int64_t at) { /* zero past row_codes */
        return line < out.rows && at < row_codes ? *(const int *)(rows + line * row_bytes + at) : 0;
    };
    for (int64_t first_step = part; first_step < steps; first_step += SPLIT_K * STEPS_IN_FLIGHT) {
        int a[STEPS_IN_FLIGHT][4], b[STEPS_IN_FLIGHT][TILES][2];
#pragma unroll
        for (int s = 0; s < STEPS_IN_FLIGHT; s++) {
            const int64_t step = first_step + s * SPLIT_K;
            if (step >= steps)
                break;
            const int64_t low = step * K_STEP + 4 * t, high = low + 16;
            a[s][0] = row_quad(first_row + g, low), a[s][1] = row_quad(first_row + g + 8, low);
            a[s][2] = row_quad(first_row + g, high), a[s][3] = row_quad(first_row + g + 8, high);
#pragma unroll
            for (int tile = 0; tile < TILES; tile++) {
                const int64_t column = first_column + 8 * tile + g;
                b[s][tile][0] = quad(packed, column, out.m, low);
                b[s][tile][1] = quad(packed, column, out.m, high);
            }
        }
#pragma unroll
        for (int s = 0; s < STEPS_IN_FLIGHT; s++) {
            if (first_step + s * SPLIT_K >= steps)
                break;
#pragma unroll
            for (int tile = 0; tile < TILES; tile++)
                mma_s8_16x8x32(sums[tile], a[s], b[s][tile]);
        }
    }
    if constexpr (SPLIT_K > 1) {
        /* [warp][value][lane]: a warp's 32 lanes store and load 32 neighbouring ints */
        __shared__ int partial[MMA_WARPS][TILES * 4][32];
        for (int tile = 0; tile < TILES; tile++)
            for (int r = 0; r < 4; r++)
                partial[warp][tile * 4 + r][lane] = sums[tile][r];
        __syncthreads();
#pragma unroll
        for (int tile = 0; tile < TILES; tile++) /* a constant index: sums stays in registers */
            if (tile % SPLIT_K == part)
                for (int r = 0; r < 4; r++) {
                    sums[tile][r] = 0;
                    for (int other = 0; other < SPLIT_K; other++)
                        sums[tile][r] += partial[group * SPLIT_K + other][tile * 4 + r][lane];
                }
    }
#pragma unroll
    for (int tile = 0; tile < TILES; tile++) {
        if (tile % SPLIT_K != part) /* another warp of the group writes it */
            continue;
        const int64_t column = first_column + 8 * tile + 2 * t;
        write_output(out, first_row + g, column, sums[tile][0]);
        write_output(out, first_row + g, column + 1, sums[tile][1]);
        write_output(out, first_row + g + 8, column, sums[tile][2]);
        write_output(out, first_row + g + 8, column + 1, sums[tile][3]);
    }
}

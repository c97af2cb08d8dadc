/* inference.c -- inference's fused convolution (week 13): conv + bias + ReLU, then max-pooling
 * over pool x pool windows at stride pool, in one call that keeps nothing for a backward (no
 * argmax, no copy of x, no [n, k, oh, ow] activation in memory: only the pooled output leaves).
 * x [n, c, h, w]; weights [k, c, r, s]; bias [k]; y [n, k, oh / pool, ow / pool], where
 * oh = (h + 2 * padding - r) / stride + 1 (likewise ow); pool = 1 is no pooling.
 *
 * Each image is convolved through im2col and s2c_gemm (whose micro-kernel is the widest SIMD the
 * CPU runs, chosen at run time: MATMUL.md) into a scratch plane per output channel that stays in
 * the cache, and the epilogue reads it once: the max of each window, plus the bias, through
 * ReLU. Adding the bias and ReLU after the max gives the same numbers as before it: rounding
 * v + b is monotone in v, as ReLU is, so both commute with the max, and a NaN wins the max and
 * stays NaN through both; the epilogue then does them once per window, not once per element. */
#include <omp.h>
#include <stdlib.h>

#include "internal.h"

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

/* One image: cols [rows, columns] = its im2col, out [k, columns] = weights @ cols, then each
 * output channel's plane of out pooled into the image's y. */
static inline int fused_image(const float *image, const float *weights, const float *bias,
                              float *y_image, float *cols, float *out, int64_t c, int64_t h,
                              int64_t w, int64_t k, int64_t r, int64_t s, int64_t stride,
                              int64_t padding, int64_t pool)
{
    /* BEGIN SOLUTION week 13, task conv2d_bias_relu_pool */
    int64_t oh = s2c_out_size(h, r, stride, padding), ow = s2c_out_size(w, s, stride, padding);
    int64_t ph = oh / pool, pw = ow / pool, columns = oh * ow;
    int status = s2c_im2col(image, cols, 1, c, h, w, r, s, stride, padding);
    if (status == S2C_OK)
        status = s2c_gemm(0, 0, k, columns, c * r * s, weights, cols, out, 0);
    for (int64_t kernel = 0; kernel < k && status == S2C_OK; kernel++)
        status = pool_bias_relu(out + kernel * columns, ow, bias[kernel], pool,
                       y_image + kernel * ph * pw, ph, pw);
    return status;
    /* END SOLUTION */
}

int s2c_conv2d_bias_relu_pool(const float *x, const float *weights, const float *bias, float *y,
                              int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t r,
                              int64_t s, int64_t stride, int64_t padding, int64_t pool)
{
    S2C_REQUIRE(fused_sizes_ok(n, c, h, w, k, r, s, stride, padding, pool));
    /* BEGIN SOLUTION week 13, task conv2d_bias_relu_pool */
    /* The threads split the images, each with its own scratch (s2c_gemm called inside the
     * parallel loop runs on its caller's thread); a single image leaves the threads to s2c_gemm. */
    int64_t oh = s2c_out_size(h, r, stride, padding), ow = s2c_out_size(w, s, stride, padding);
    int64_t columns = oh * ow, image_size = c * h * w, y_size = k * (oh / pool) * (ow / pool);
    size_t per_thread = (size_t)((c * r * s + k) * columns);
    int threads = n > 1 ? s2c_get_num_threads() : 1;
    float *scratch = malloc((size_t)threads * per_thread * sizeof(float));
    if (scratch == NULL)
        return S2C_OUT_OF_MEMORY;
    int status = S2C_OK;
    #pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1)
    for (int64_t image = 0; image < n; image++) {
        float *cols = scratch + (size_t)omp_get_thread_num() * per_thread;
        int image_status = fused_image(x + image * image_size, weights, bias, y + image * y_size,
                                       cols, cols + c * r * s * columns, c, h, w, k, r, s, stride,
                                       padding, pool);
        if (image_status != S2C_OK) {
            #pragma omp atomic write
            status = image_status;
        }
    }
    free(scratch);
    return status;
    /* END SOLUTION */
}

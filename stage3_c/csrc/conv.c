/* conv.c -- 2-D convolution (week 13): im2col and col2im, conv2d forward and backward through
 * im2col + s2c_gemm (the fast way), and through direct loops (the definition).
 * x [n, c, h, w], weights [k, c, r, s], bias [k], y [n, k, oh, ow] (cross-correlation, as
 * torch.nn.functional.conv2d); cols [c * r * s, oh * ow] per image, as unfold. */
#include <omp.h>
#include <stdlib.h>

#include "internal.h"

/* The batch loops hand out images (or groups of images) one at a time, schedule(dynamic): a
 * thread that finishes early, or one the OS does not run for a while on a busy machine, then
 * does not hold up the others, as a fixed half of the batch each would. */

/* The backward pass sums dweights over at most this many groups of consecutive images. */
#define CONV_GROUPS 16

/* Every size >= 1, stride >= 1, padding >= 0, and the window fits in the padded input. */
static int window_fits(int64_t n, int64_t c, int64_t h, int64_t w, int64_t r, int64_t s,
                       int64_t stride, int64_t padding)
{
    return n >= 1 && c >= 1 && h >= 1 && w >= 1 && r >= 1 && s >= 1 && stride >= 1 &&
           padding >= 0 && h + 2 * padding >= r && w + 2 * padding >= s;
}

/* Along one axis, the outputs o whose input position o * stride - padding + offset lies inside
 * [0, in_size) form one run [*first, *end); the others read zero padding. Knowing the run lets
 * the loops below copy and add without testing every element. */
static inline void inside_run(int64_t in_size, int64_t out_size, int64_t offset, int64_t stride,
                              int64_t padding, int64_t *first, int64_t *end)
{
    int64_t low = padding - offset;                 /* inside needs o * stride >= low */
    int64_t high = in_size - 1 + padding - offset;  /* and o * stride <= high */
    *first = low > 0 ? (low + stride - 1) / stride : 0;
    *end = high < 0 ? 0 : s2c_min(high / stride + 1, out_size);
    if (*first > *end)
        *first = *end;
}

/* dbias [k] (given: both backward passes use it): the bias was added at every position of every
 * image, so its gradient sums dy [n, k, positions] over the images and the positions. */
static void bias_gradient(const float *dy, float *dbias, int64_t n, int64_t k, int64_t positions)
{
    #pragma omp parallel for num_threads(s2c_get_num_threads()) \
        if (n * k * positions >= S2C_PARALLEL_MIN)
    for (int64_t kernel = 0; kernel < k; kernel++) {
        double sum = 0.0;
        for (int64_t image = 0; image < n; image++) {
            /* each plane summed in float32 with SIMD (omp simd allows reordering the additions),
             * the planes summed in double */
            const float *plane = dy + (image * k + kernel) * positions;
            float plane_sum = 0.0f;
            #pragma omp simd reduction(+ : plane_sum)
            for (int64_t p = 0; p < positions; p++)
                plane_sum += plane[p];
            sum += plane_sum;
        }
        dbias[kernel] = (float)sum;
    }
}

int s2c_im2col(const float *x, float *cols, int64_t n, int64_t c, int64_t h, int64_t w,
               int64_t kh, int64_t kw, int64_t stride, int64_t padding)
{
    S2C_REQUIRE(window_fits(n, c, h, w, kh, kw, stride, padding));
    /* BEGIN SOLUTION week 13, task im2col */
    int64_t oh = s2c_out_size(h, kh, stride, padding), ow = s2c_out_size(w, kw, stride, padding);
    int64_t rows = c * kh * kw, columns = oh * ow;
    #pragma omp parallel for num_threads(s2c_get_num_threads()) \
        if (n > 1 && n * rows * columns >= S2C_PARALLEL_MIN)
    for (int64_t image = 0; image < n; image++) {
        for (int64_t row = 0; row < rows; row++) {
            /* row = (channel * kh + i) * kw + j: the window offset (i, j) in one channel */
            int64_t channel = row / (kh * kw), i = row / kw % kh, j = row % kw;
            const float *plane = x + (image * c + channel) * h * w;
            float *out = cols + (image * rows + row) * columns;
            int64_t y_first, y_end, x_first, x_end;
            inside_run(h, oh, i, stride, padding, &y_first, &y_end);
            inside_run(w, ow, j, stride, padding, &x_first, &x_end);
            for (int64_t oy = 0; oy < oh; oy++) {
                float *out_row = out + oy * ow;
                if (oy < y_first || oy >= y_end) {
                    for (int64_t ox = 0; ox < ow; ox++)
                        out_row[ox] = 0.0f;
                    continue;
                }
                const float *in_row = plane + (oy * stride - padding + i) * w;
                for (int64_t ox = 0; ox < x_first; ox++)
                    out_row[ox] = 0.0f;
                for (int64_t ox = x_first; ox < x_end; ox++)
                    out_row[ox] = in_row[ox * stride - padding + j];
                for (int64_t ox = x_end; ox < ow; ox++)
                    out_row[ox] = 0.0f;
            }
        }
    }
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_col2im(const float *cols, float *x, int64_t n, int64_t c, int64_t h, int64_t w,
               int64_t kh, int64_t kw, int64_t stride, int64_t padding)
{
    S2C_REQUIRE(window_fits(n, c, h, w, kh, kw, stride, padding));
    /* BEGIN SOLUTION week 13, task col2im */
    /* The adjoint of im2col: the same walk, adding each column entry back onto the pixel it
     * was copied from (overlapping windows add up; padding entries are dropped). */
    int64_t oh = s2c_out_size(h, kh, stride, padding), ow = s2c_out_size(w, kw, stride, padding);
    int64_t rows = c * kh * kw, columns = oh * ow;
    #pragma omp parallel for num_threads(s2c_get_num_threads()) \
        if (n > 1 && n * rows * columns >= S2C_PARALLEL_MIN)
    for (int64_t image = 0; image < n; image++) {
        float *image_out = x + image * c * h * w;
        for (int64_t p = 0; p < c * h * w; p++)
            image_out[p] = 0.0f;
        for (int64_t row = 0; row < rows; row++) {
            int64_t channel = row / (kh * kw), i = row / kw % kh, j = row % kw;
            float *plane = image_out + channel * h * w;
            const float *in = cols + (image * rows + row) * columns;
            int64_t y_first, y_end, x_first, x_end;
            inside_run(h, oh, i, stride, padding, &y_first, &y_end);
            inside_run(w, ow, j, stride, padding, &x_first, &x_end);
            for (int64_t oy = y_first; oy < y_end; oy++) {
                float *out_row = plane + (oy * stride - padding + i) * w;
                const float *in_row = in + oy * ow;
                for (int64_t ox = x_first; ox < x_end; ox++)
                    out_row[ox * stride - padding + j] += in_row[ox];
            }
        }
    }
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_conv2d_forward(const float *x, const float *weights, const float *bias, float *y,
                       int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t r,
                       int64_t s, int64_t stride, int64_t padding)
{
    S2C_REQUIRE(k >= 1 && window_fits(n, c, h, w, r, s, stride, padding));
    /* BEGIN SOLUTION week 13, task conv2d_forward */
    /* Per image: cols [rows, columns] = im2col(image), then
     * y_image [k, columns] = bias + weights [k, rows] @ cols: the whole convolution is one GEMM.
     * Images are independent, so the threads split the batch, each with its own cols buffer
     * (s2c_gemm called inside the parallel loop then runs on its caller's thread). */
    int64_t oh = s2c_out_size(h, r, stride, padding), ow = s2c_out_size(w, s, stride, padding);
    int64_t rows = c * r * s, columns = oh * ow;
    int threads = s2c_get_num_threads();
    float *scratch = malloc((size_t)threads * (size_t)(rows * columns) * sizeof(float));
    if (scratch == NULL)
        return S2C_OUT_OF_MEMORY;
    int status = S2C_OK;
    #pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (n > 1)
    for (int64_t image = 0; image < n; image++) {
        float *cols = scratch + (size_t)omp_get_thread_num() * (size_t)(rows * columns);
        float *y_image = y + image * k * columns;
        for (int64_t kernel = 0; kernel < k; kernel++)
            for (int64_t p = 0; p < columns; p++)
                y_image[kernel * columns + p] = bias[kernel];
        int image_status = s2c_im2col(x + image * c * h * w, cols, 1, c, h, w, r, s, stride,
                                      padding);
        if (image_status == S2C_OK)
            image_status = s2c_gemm(0, 0, k, columns, rows, weights, cols, y_image, 1);
        if (image_status != S2C_OK) {
            #pragma omp atomic write
            status = image_status;
        }
    }
    free(scratch);
    return status;
    /* END SOLUTION */
}

int s2c_conv2d_backward(const float *x, const float *weights, const float *dy,
                        float *dx, float *dweights, float *dbias,
                        int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t r,
                        int64_t s, int64_t stride, int64_t padding)
{
    S2C_REQUIRE(k >= 1 && window_fits(n, c, h, w, r, s, stride, padding));
    /* BEGIN SOLUTION week 13, task conv2d_backward */
    /* Per image, with cols = im2col(image) recomputed (cheaper than keeping the batch's):
     *   dweights [k, rows] += dy_image [k, columns] @ cols.T
     *   dcols [rows, columns] = weights.T @ dy_image, and dx_image = col2im(dcols).
     * Every image adds to dweights, so the batch is cut into groups of consecutive images, each
     * summing into its own zeroed buffer; the groups' buffers are then added in group order. No
     * two threads write the same float, and the result does not depend on the thread count. */
    int64_t oh = s2c_out_size(h, r, stride, padding), ow = s2c_out_size(w, s, stride, padding);
    int64_t rows = c * r * s, columns = oh * ow, weight_size = k * rows;
    int64_t groups = s2c_min(n, CONV_GROUPS);
    int threads = s2c_get_num_threads();
    float *group_dweights = calloc((size_t)(groups * weight_size), sizeof(float));
    float *scratch = malloc((size_t)threads * (size_t)(2 * rows * columns) * sizeof(float));
    if (group_dweights == NULL || scratch == NULL) {
        free(group_dweights);
        free(scratch);
        return S2C_OUT_OF_MEMORY;
    }
    int status = S2C_OK;
    #pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (groups > 1)
    for (int64_t group = 0; group < groups; group++) {
        float *cols = scratch + (size_t)omp_get_thread_num() * (size_t)(2 * rows * columns);
        float *dcols = cols + rows * columns;
        float *dweights_group = group_dweights + group * weight_size;
        int group_status = S2C_OK;
        for (int64_t image = group * n / groups;
             image < (group + 1) * n / groups && group_status == S2C_OK; image++) {
            const float *dy_image = dy + image * k * columns;
            group_status = s2c_im2col(x + image * c * h * w, cols, 1, c, h, w, r, s, stride,
                                      padding);
            if (group_status == S2C_OK)
                group_status = s2c_gemm(0, 1, k, rows, columns, dy_image, cols, dweights_group, 1);
            if (group_status == S2C_OK)
                group_status = s2c_gemm(1, 0, rows, columns, k, weights, dy_image, dcols, 0);
            if (group_status == S2C_OK)
                group_status = s2c_col2im(dcols, dx + image * c * h * w, 1, c, h, w, r, s, stride,
                                          padding);
        }
        if (group_status != S2C_OK) {
            #pragma omp atomic write
            status = group_status;
        }
    }
    for (int64_t p = 0; p < weight_size; p++) {
        float sum = 0.0f;
        for (int64_t group = 0; group < groups; group++)
            sum += group_dweights[group * weight_size + p];
        dweights[p] = sum;
    }
    free(group_dweights);
    free(scratch);
    bias_gradient(dy, dbias, n, k, columns);
    return status;
    /* END SOLUTION */
}

int s2c_conv2d_forward_direct(const float *x, const float *weights, const float *bias, float *y,
                              int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t r,
                              int64_t s, int64_t stride, int64_t padding)
{
    S2C_REQUIRE(k >= 1 && window_fits(n, c, h, w, r, s, stride, padding));
    /* BEGIN SOLUTION week 13, task conv2d_forward_direct */
    /* y[image, kernel] = bias + the sum over (channel, i, j) of weight * (the input plane shifted
     * by (i, j)): the innermost loop runs along an output row, contiguous for stride 1. */
    int64_t oh = s2c_out_size(h, r, stride, padding), ow = s2c_out_size(w, s, stride, padding);
    #pragma omp parallel for num_threads(s2c_get_num_threads()) collapse(2) if (n * k > 1)
    for (int64_t image = 0; image < n; image++) {
        for (int64_t kernel = 0; kernel < k; kernel++) {
            float *out = y + (image * k + kernel) * oh * ow;
            for (int64_t p = 0; p < oh * ow; p++)
                out[p] = bias[kernel];
            for (int64_t channel = 0; channel < c; channel++) {
                const float *plane = x + (image * c + channel) * h * w;
                for (int64_t i = 0; i < r; i++) {
                    for (int64_t j = 0; j < s; j++) {
                        float weight = weights[((kernel * c + channel) * r + i) * s + j];
                        int64_t y_first, y_end, x_first, x_end;
                        inside_run(h, oh, i, stride, padding, &y_first, &y_end);
                        inside_run(w, ow, j, stride, padding, &x_first, &x_end);
                        for (int64_t oy = y_first; oy < y_end; oy++) {
                            const float *in_row = plane + (oy * stride - padding + i) * w;
                            float *out_row = out + oy * ow;
                            for (int64_t ox = x_first; ox < x_end; ox++)
                                out_row[ox] += weight * in_row[ox * stride - padding + j];
                        }
                    }
                }
            }
        }
    }
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_conv2d_backward_direct(const float *x, const float *weights, const float *dy,
                               float *dx, float *dweights, float *dbias,
                               int64_t n, int64_t c, int64_t h, int64_t w, int64_t k,
                               int64_t r, int64_t s, int64_t stride, int64_t padding)
{
    S2C_REQUIRE(k >= 1 && window_fits(n, c, h, w, r, s, stride, padding));
    /* BEGIN SOLUTION week 13, task conv2d_backward_direct */
    /* The forward's loops again, each product sending its gradient back to both factors:
     * dx gathers weight * dy (threads split the images), dweights gathers dy * x (threads split
     * the kernels), so no two threads write the same element. */
    int64_t oh = s2c_out_size(h, r, stride, padding), ow = s2c_out_size(w, s, stride, padding);
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (n > 1)
    for (int64_t image = 0; image < n; image++) {
        float *dx_image = dx + image * c * h * w;
        for (int64_t p = 0; p < c * h * w; p++)
            dx_image[p] = 0.0f;
        for (int64_t kernel = 0; kernel < k; kernel++) {
            const float *dy_plane = dy + (image * k + kernel) * oh * ow;
            for (int64_t channel = 0; channel < c; channel++) {
                float *dx_plane = dx_image + channel * h * w;
                for (int64_t i = 0; i < r; i++) {
                    for (int64_t j = 0; j < s; j++) {
                        float weight = weights[((kernel * c + channel) * r + i) * s + j];
                        int64_t y_first, y_end, x_first, x_end;
                        inside_run(h, oh, i, stride, padding, &y_first, &y_end);
                        inside_run(w, ow, j, stride, padding, &x_first, &x_end);
                        for (int64_t oy = y_first; oy < y_end; oy++) {
                            float *dx_row = dx_plane + (oy * stride - padding + i) * w;
                            const float *dy_row = dy_plane + oy * ow;
                            for (int64_t ox = x_first; ox < x_end; ox++)
                                dx_row[ox * stride - padding + j] += weight * dy_row[ox];
                        }
                    }
                }
            }
        }
    }
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (k > 1)
    for (int64_t kernel = 0; kernel < k; kernel++) {
        for (int64_t channel = 0; channel < c; channel++) {
            for (int64_t i = 0; i < r; i++) {
                for (int64_t j = 0; j < s; j++) {
                    int64_t y_first, y_end, x_first, x_end;
                    inside_run(h, oh, i, stride, padding, &y_first, &y_end);
                    inside_run(w, ow, j, stride, padding, &x_first, &x_end);
                    double sum = 0.0;
                    for (int64_t image = 0; image < n; image++) {
                        const float *plane = x + (image * c + channel) * h * w;
                        const float *dy_plane = dy + (image * k + kernel) * oh * ow;
                        for (int64_t oy = y_first; oy < y_end; oy++) {
                            const float *in_row = plane + (oy * stride - padding + i) * w;
                            const float *dy_row = dy_plane + oy * ow;
                            #pragma omp simd reduction(+ : sum)
                            for (int64_t ox = x_first; ox < x_end; ox++)
                                sum += (double)dy_row[ox] * in_row[ox * stride - padding + j];
                        }
                    }
                    dweights[((kernel * c + channel) * r + i) * s + j] = (float)sum;
                }
            }
        }
    }
    bias_gradient(dy, dbias, n, k, oh * ow);
    return S2C_OK;
    /* END SOLUTION */
}

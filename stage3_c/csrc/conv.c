/* conv.c -- 2-D convolution (week 13): im2col and col2im, conv2d forward and backward through
 * im2col + s2c_gemm (the fast way), and through direct loops (the definition).
 * x [n, c, h, w], weights [k, c, r, s], bias [k], y [n, k, oh, ow] (cross-correlation, as
 * torch.nn.functional.conv2d); cols [c * r * s, oh * ow] per image, as unfold. */
#include <omp.h>
#include <stdlib.h>

#include "internal.h"

/* The im2col convolution lays the cols of several images side by side, one wide matrix
 * [rows, images * columns], so that each GEMM call multiplies wider matrices (and packs the
 * weights once per group of images, not once per image): enough images for this many columns.
 * Its batch loops hand out these groups one at a time, schedule(dynamic): a thread that finishes
 * early, or one the OS does not run for a while on a busy machine, then does not hold up the
 * others, as a fixed half of the batch each would. */
#define CONV_GEMM_COLUMNS 1024

/* Every size >= 1, stride >= 1, padding >= 0, and the window fits in the padded input. */
static inline int window_fits(int64_t n, int64_t c, int64_t h, int64_t w, int64_t r,
                              int64_t s, int64_t stride, int64_t padding)
{
    return n >= 1 && c >= 1 && h >= 1 && w >= 1 && r >= 1 && s >= 1 && stride >= 1 &&
           padding >= 0 && h + 2 * padding >= r && w + 2 * padding >= s;
}

/* One image's window geometry: channels, input size, window, stride, padding, output size. */
struct geometry {
    int64_t c, h, w, kh, kw, stride, padding, oh, ow;
};

static inline struct geometry geometry_of(int64_t c, int64_t h, int64_t w, int64_t kh,
                                          int64_t kw, int64_t stride, int64_t padding)
{
    struct geometry g = {c, h, w, kh, kw, stride, padding, s2c_out_size(h, kh, stride, padding),
                         s2c_out_size(w, kw, stride, padding)};
    return g;
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
static inline void bias_gradient(const float *dy, float *dbias, int64_t n, int64_t k,
                                 int64_t positions)
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

/* im2col of one image [c, h, w]: row (channel * kh + i) * kw + j of cols, which starts at
 * cols + row * ld, holds the input seen at window offset (i, j) by each of the oh * ow outputs
 * (ld >= oh * ow: the conv passes put several images' columns side by side).
 * Each pixel holds `pixel` consecutive floats (1 for an image; a batch-last group, see struct
 * group, interleaves several images' pixels), and each output position gets all of them. */
static inline int im2col_image(const float *image, float *cols, int64_t ld, struct geometry g,
                               int64_t pixel)
{
    /* BEGIN SOLUTION week 13, task im2col */
    const int64_t out_row_floats = g.ow * pixel;
    for (int64_t row = 0; row < g.c * g.kh * g.kw; row++) {
        int64_t channel = row / (g.kh * g.kw), i = row / g.kw % g.kh, j = row % g.kw;
        const float *plane = image + channel * g.h * g.w * pixel;
        int64_t y_first, y_end, x_first, x_end;
        inside_run(g.h, g.oh, i, g.stride, g.padding, &y_first, &y_end);
        inside_run(g.w, g.ow, j, g.stride, g.padding, &x_first, &x_end);
        for (int64_t oy = 0; oy < g.oh; oy++) {
            float *out_row = cols + row * ld + oy * out_row_floats;
            if (oy < y_first || oy >= y_end) {
                for (int64_t f = 0; f < out_row_floats; f++)
                    out_row[f] = 0.0f;
                continue;
            }
            const float *in_row = plane + (oy * g.stride - g.padding + i) * g.w * pixel;
            for (int64_t f = 0; f < x_first * pixel; f++)
                out_row[f] = 0.0f;
            if (g.stride == 1) { /* the inside outputs read one contiguous run */
                const float *run = in_row + (x_first - g.padding + j) * pixel;
                for (int64_t f = 0; f < (x_end - x_first) * pixel; f++)
                    out_row[x_first * pixel + f] = run[f];
            } else {
                for (int64_t ox = x_first; ox < x_end; ox++)
                    for (int64_t e = 0; e < pixel; e++)
                        out_row[ox * pixel + e] = in_row[(ox * g.stride - g.padding + j) * pixel + e];
            }
            for (int64_t f = x_end * pixel; f < out_row_floats; f++)
                out_row[f] = 0.0f;
        }
    }
    return S2C_OK;
    /* END SOLUTION */
}

/* col2im of one image, the adjoint of im2col_image: the same walk, adding each entry of cols
 * back onto the pixel it was copied from (overlapping windows add up; padding is dropped). */
static inline int col2im_image(const float *cols, int64_t ld, float *image, struct geometry g,
                               int64_t pixel)
{
    /* BEGIN SOLUTION week 13, task col2im */
    for (int64_t f = 0; f < g.c * g.h * g.w * pixel; f++)
        image[f] = 0.0f;
    for (int64_t row = 0; row < g.c * g.kh * g.kw; row++) {
        int64_t channel = row / (g.kh * g.kw), i = row / g.kw % g.kh, j = row % g.kw;
        float *plane = image + channel * g.h * g.w * pixel;
        int64_t y_first, y_end, x_first, x_end;
        inside_run(g.h, g.oh, i, g.stride, g.padding, &y_first, &y_end);
        inside_run(g.w, g.ow, j, g.stride, g.padding, &x_first, &x_end);
        for (int64_t oy = y_first; oy < y_end; oy++) {
            float *out_row = plane + (oy * g.stride - g.padding + i) * g.w * pixel;
            const float *in_row = cols + row * ld + oy * g.ow * pixel;
            if (g.stride == 1) {
                float *run = out_row + (x_first - g.padding + j) * pixel;
                for (int64_t f = 0; f < (x_end - x_first) * pixel; f++)
                    run[f] += in_row[x_first * pixel + f];
            } else {
                for (int64_t ox = x_first; ox < x_end; ox++)
                    for (int64_t e = 0; e < pixel; e++)
                        out_row[(ox * g.stride - g.padding + j) * pixel + e] +=
                            in_row[ox * pixel + e];
            }
        }
    }
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_im2col(const float *x, float *cols, int64_t n, int64_t c, int64_t h, int64_t w,
               int64_t kh, int64_t kw, int64_t stride, int64_t padding)
{
    S2C_REQUIRE(window_fits(n, c, h, w, kh, kw, stride, padding));
    /* BEGIN SOLUTION week 13, task im2col */
    struct geometry g = geometry_of(c, h, w, kh, kw, stride, padding);
    int64_t image_size = c * h * w, cols_size = c * kh * kw * g.oh * g.ow;
    int status = S2C_OK;
    #pragma omp parallel for num_threads(s2c_get_num_threads()) \
        if (n > 1 && n * cols_size >= S2C_PARALLEL_MIN)
    for (int64_t image = 0; image < n; image++) {
        int image_status = im2col_image(x + image * image_size, cols + image * cols_size,
                                        g.oh * g.ow, g, 1);
        if (image_status != S2C_OK) {
            #pragma omp atomic write
            status = image_status;
        }
    }
    return status;
    /* END SOLUTION */
}

int s2c_col2im(const float *cols, float *x, int64_t n, int64_t c, int64_t h, int64_t w,
               int64_t kh, int64_t kw, int64_t stride, int64_t padding)
{
    S2C_REQUIRE(window_fits(n, c, h, w, kh, kw, stride, padding));
    /* BEGIN SOLUTION week 13, task col2im */
    struct geometry g = geometry_of(c, h, w, kh, kw, stride, padding);
    int64_t image_size = c * h * w, cols_size = c * kh * kw * g.oh * g.ow;
    int status = S2C_OK;
    #pragma omp parallel for num_threads(s2c_get_num_threads()) \
        if (n > 1 && n * cols_size >= S2C_PARALLEL_MIN)
    for (int64_t image = 0; image < n; image++) {
        int image_status = col2im_image(cols + image * cols_size, g.oh * g.ow,
                                        x + image * image_size, g, 1);
        if (image_status != S2C_OK) {
            #pragma omp atomic write
            status = image_status;
        }
    }
    return status;
    /* END SOLUTION */
}

/* How many images the im2col convolution puts side by side in one GEMM (see CONV_GEMM_COLUMNS). */
static inline int64_t images_per_gemm(int64_t n, int64_t columns)
{
    return s2c_min(n, columns >= CONV_GEMM_COLUMNS ? 1 : CONV_GEMM_COLUMNS / columns);
}

/* The images [first, first + images) that one GEMM convolves, their columns side by side in
 * cols [rows, images * columns]. Batch-first, image i owns the block of columns
 * [i * columns, (i + 1) * columns), its own im2col. Batch-last, output position p of image i is
 * column p * images + i: the group is im2col'ed as ONE image whose pixels each hold `images`
 * floats, one per image, so every copy (and col2im's every add) runs `images` times longer;
 * the price is interleaving the images first and the outputs after. As stage 2's
 * batch_last_pays explains, that pays when the columns have more rows than the output
 * (c * r * s > k): LeNet-5's second conv copies runs of 10 floats batch-first. */
struct group {
    int64_t first, images;
    int batch_last;
};

/* Whether groups of group_size images, with cols of `rows` rows and an output of k rows, go
 * batch-last (see struct group); a group of one image is the same either way. */
static inline int batch_last_pays(int64_t rows, int64_t k, int64_t group_size)
{
    return rows > k && group_size > 1;
}

static inline int64_t group_column(struct group group, int64_t image, int64_t position,
                                   int64_t columns)
{
    return group.batch_last ? position * group.images + image : image * columns + position;
}

/* images [count, size] -> interleaved [size, count], and back: a transpose. */
static inline void interleave(const float *images, int64_t count, int64_t size, float *interleaved)
{
    for (int64_t e = 0; e < size; e++)
        for (int64_t i = 0; i < count; i++)
            interleaved[e * count + i] = images[i * size + e];
}

static inline void deinterleave(const float *interleaved, int64_t count, int64_t size,
                                float *images)
{
    for (int64_t i = 0; i < count; i++)
        for (int64_t e = 0; e < size; e++)
            images[i * size + e] = interleaved[e * count + i];
}

/* The group's im2col, cols [rows, images * columns] in its column order; `pixels` is scratch
 * for the interleaved images (c * h * w * images floats, used when batch-last). */
static inline int group_im2col(const float *x, struct group group, struct geometry g,
                               float *pixels, float *cols)
{
    /* BEGIN SOLUTION week 13, task conv2d_forward */
    int64_t image_size = g.c * g.h * g.w, columns = g.oh * g.ow, wide = group.images * columns;
    if (group.batch_last) {
        interleave(x + group.first * image_size, group.images, image_size, pixels);
        return im2col_image(pixels, cols, wide, g, group.images);
    }
    int status = S2C_OK;
    for (int64_t i = 0; i < group.images && status == S2C_OK; i++)
        status = im2col_image(x + (group.first + i) * image_size, cols + i * columns, wide, g, 1);
    return status;
    /* END SOLUTION */
}

int s2c_conv2d_forward(const float *x, const float *weights, const float *bias, float *y,
                       int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t r,
                       int64_t s, int64_t stride, int64_t padding)
{
    S2C_REQUIRE(k >= 1 && window_fits(n, c, h, w, r, s, stride, padding));
    /* BEGIN SOLUTION week 13, task conv2d_forward */
    /* For a group of images: cols [rows, images * columns] holds their im2col side by side, and
     * one GEMM gives out [k, images * columns] = weights [k, rows] @ cols: the convolution of
     * the whole group. Each image's columns of out, plus the bias, are its y.
     * Groups are independent, so the threads split them, each with its own buffers (s2c_gemm
     * called inside the parallel loop then runs on its caller's thread). */
    struct geometry g = geometry_of(c, h, w, r, s, stride, padding);
    int64_t rows = c * r * s, columns = g.oh * g.ow;
    int64_t group_size = images_per_gemm(n, columns), groups = (n + group_size - 1) / group_size;
    int batch_last = batch_last_pays(rows, k, group_size);
    size_t per_thread = (size_t)((rows + k) * group_size * columns + c * h * w * group_size);
    int threads = s2c_get_num_threads();
    float *scratch = malloc((size_t)threads * per_thread * sizeof(float));
    if (scratch == NULL)
        return S2C_OUT_OF_MEMORY;
    int status = S2C_OK;
    #pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (groups > 1)
    for (int64_t index = 0; index < groups; index++) {
        float *cols = scratch + (size_t)omp_get_thread_num() * per_thread;
        float *out = cols + rows * group_size * columns;
        float *pixels = out + k * group_size * columns;
        int64_t first = index * group_size;
        struct group group = {first, s2c_min(group_size, n - first), batch_last};
        int64_t wide = group.images * columns; /* the columns of cols and out */
        int group_status = group_im2col(x, group, g, pixels, cols);
        if (group_status == S2C_OK)
            group_status = s2c_gemm(0, 0, k, wide, rows, weights, cols, out, 0);
        for (int64_t i = 0; i < group.images && group_status == S2C_OK; i++)
            for (int64_t kernel = 0; kernel < k; kernel++)
                for (int64_t p = 0; p < columns; p++)
                    y[((first + i) * k + kernel) * columns + p] =
                        out[kernel * wide + group_column(group, i, p, columns)] + bias[kernel];
        if (group_status != S2C_OK) {
            #pragma omp atomic write
            status = group_status;
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
    /* The forward's groups again, with cols recomputed (cheaper than keeping the batch's) and the
     * group's dy gathered in cols' column order as dy_group [k, images * columns]:
     *   dweights_group [k, rows] = dy_group @ cols.T
     *   dcols [rows, images * columns] = weights.T @ dy_group, and dx = col2im(dcols)
     * (skipped when dx is NULL). A batch-first group of one image uses its dy where it lies. Each group sums its
     * dweights into its own buffer; the buffers are then added in group order, so no two
     * threads write the same float and the result does not depend on the number of threads.
     * When k > rows (a first layer: one channel, 64 kernels of 3x3) the group computes dweights
     * transposed, cols @ dy_group.T [rows, k]: the GEMM's register tile is wider than tall, so
     * the wider output runs faster. */
    struct geometry g = geometry_of(c, h, w, r, s, stride, padding);
    int64_t rows = c * r * s, columns = g.oh * g.ow, weight_size = k * rows, image_size = c * h * w;
    int64_t group_size = images_per_gemm(n, columns), groups = (n + group_size - 1) / group_size;
    int transposed = k > rows, batch_last = batch_last_pays(rows, k, group_size);
    /* cols, dcols, dy_group, pixels */
    size_t per_thread = (size_t)((2 * rows + k) * group_size * columns + image_size * group_size);
    int threads = s2c_get_num_threads();
    float *scratch = malloc((size_t)threads * per_thread * sizeof(float));
    float *group_dweights = malloc((size_t)(groups * weight_size) * sizeof(float));
    if (scratch == NULL || group_dweights == NULL) {
        free(scratch);
        free(group_dweights);
        return S2C_OUT_OF_MEMORY;
    }
    int status = S2C_OK;
    #pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (groups > 1)
    for (int64_t index = 0; index < groups; index++) {
        float *cols = scratch + (size_t)omp_get_thread_num() * per_thread;
        float *dcols = cols + rows * group_size * columns;
        float *dy_group = dcols + rows * group_size * columns;
        float *pixels = dy_group + k * group_size * columns;
        int64_t first = index * group_size;
        struct group group = {first, s2c_min(group_size, n - first), batch_last};
        int64_t wide = group.images * columns;
        int in_place = group.images == 1;
        const float *dy_wide = in_place ? dy + first * k * columns : dy_group;
        float *dweights_group = group_dweights + index * weight_size;
        int group_status = group_im2col(x, group, g, pixels, cols);
        for (int64_t i = 0; i < group.images && !in_place; i++)
            for (int64_t kernel = 0; kernel < k; kernel++)
                for (int64_t p = 0; p < columns; p++)
                    dy_group[kernel * wide + group_column(group, i, p, columns)] =
                        dy[((first + i) * k + kernel) * columns + p];
        if (group_status == S2C_OK && transposed)
            group_status = s2c_gemm(0, 1, rows, k, wide, cols, dy_wide, dweights_group, 0);
        else if (group_status == S2C_OK)
            group_status = s2c_gemm(0, 1, k, rows, wide, dy_wide, cols, dweights_group, 0);
        if (group_status == S2C_OK && dx != NULL) {
            group_status = s2c_gemm(1, 0, rows, wide, k, weights, dy_wide, dcols, 0);
            if (group_status == S2C_OK && batch_last) {
                group_status = col2im_image(dcols, wide, pixels, g, group.images);
                deinterleave(pixels, group.images, image_size, dx + first * image_size);
            }
            for (int64_t i = 0; i < group.images && !batch_last && group_status == S2C_OK; i++)
                group_status = col2im_image(dcols + i * columns, wide,
                                            dx + (first + i) * image_size, g, 1);
        }
        if (group_status != S2C_OK) {
            #pragma omp atomic write
            status = group_status;
        }
    }
    for (int64_t kernel = 0; kernel < k; kernel++) {
        for (int64_t row = 0; row < rows; row++) {
            int64_t at = transposed ? row * k + kernel : kernel * rows + row;
            float sum = 0.0f;
            for (int64_t group = 0; group < groups; group++)
                sum += group_dweights[group * weight_size + at];
            dweights[kernel * rows + row] = sum;
        }
    }
    free(scratch);
    free(group_dweights);
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
     * the kernels), so no two threads write the same element. dx NULL: no dx wanted. */
    int64_t oh = s2c_out_size(h, r, stride, padding), ow = s2c_out_size(w, s, stride, padding);
    int64_t dx_images = dx != NULL ? n : 0;
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (dx_images > 1)
    for (int64_t image = 0; image < dx_images; image++) {
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

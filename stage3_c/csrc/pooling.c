/* pooling.c -- max and average pooling, no padding (week 13).
 * x [n, c, h, w] -> y [n, c, oh, ow] with oh = (h - k) / stride + 1 (likewise ow). Every
 * [h, w] plane is pooled on its own, so the threads split the n * c planes. */
#include "internal.h"

/* Every size >= 1 and the window fits in the plane. */
static inline int pool_sizes_ok(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k,
                                int64_t stride)
{
    return n >= 1 && c >= 1 && h >= 1 && w >= 1 && k >= 1 && stride >= 1 && k <= h && k <= w;
}

int s2c_maxpool2d_forward(const float *x, float *y, int64_t *argmax, int64_t n, int64_t c,
                          int64_t h, int64_t w, int64_t k, int64_t stride)
{
    S2C_REQUIRE(pool_sizes_ok(n, c, h, w, k, stride));
    /* BEGIN SOLUTION week 13, task maxpool2d_forward */
    /* argmax keeps, for each output, the flat index iy * w + ix of the winner in its plane, so
     * the backward can route the gradient without searching again. A whole output row is done
     * at once: every window starts with its first element as the winner, then the window offsets
     * (i, j) challenge it in row-major order, each offset along the whole row (a loop over ox
     * that the compiler can vectorize). A challenger wins only when strictly greater, so ties keep
     * the first; a NaN wins and then stays, as with np.argmax, so NaNs propagate. */
    int64_t oh = s2c_out_size(h, k, stride, 0), ow = s2c_out_size(w, k, stride, 0);
    #pragma omp parallel for num_threads(s2c_get_num_threads()) \
        if (n * c * oh * ow * k * k >= S2C_PARALLEL_MIN)
    for (int64_t plane_index = 0; plane_index < n * c; plane_index++) {
        const float *plane = x + plane_index * h * w;
        for (int64_t oy = 0; oy < oh; oy++) {
            float *y_row = y + (plane_index * oh + oy) * ow;
            int64_t *argmax_row = argmax + (plane_index * oh + oy) * ow;
            for (int64_t ox = 0; ox < ow; ox++) {
                argmax_row[ox] = oy * stride * w + ox * stride;
                y_row[ox] = plane[argmax_row[ox]];
            }
            for (int64_t i = 0; i < k; i++) {
                for (int64_t j = (i == 0); j < k; j++) {
                    int64_t offset = (oy * stride + i) * w + j;
                    for (int64_t ox = 0; ox < ow; ox++) {
                        float value = plane[offset + ox * stride], winner = y_row[ox];
                        /* winner == winner: the winner is not NaN (a NaN never yields);
                         * !(value <= winner): value is greater, or is NaN */
                        int wins = winner == winner && !(value <= winner);
                        y_row[ox] = wins ? value : winner;
                        argmax_row[ox] = wins ? offset + ox * stride : argmax_row[ox];
                    }
                }
            }
        }
    }
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_maxpool2d_backward(const float *dy, const int64_t *argmax, float *dx, int64_t n,
                           int64_t c, int64_t h, int64_t w, int64_t k, int64_t stride)
{
    S2C_REQUIRE(pool_sizes_ok(n, c, h, w, k, stride));
    /* BEGIN SOLUTION week 13, task maxpool2d_backward */
    /* Only the winner of each window saw its output's gradient; overlapping windows add up. */
    int64_t oh = s2c_out_size(h, k, stride, 0), ow = s2c_out_size(w, k, stride, 0);
    #pragma omp parallel for num_threads(s2c_get_num_threads()) \
        if (n * c * h * w >= S2C_PARALLEL_MIN)
    for (int64_t plane_index = 0; plane_index < n * c; plane_index++) {
        float *dx_plane = dx + plane_index * h * w;
        for (int64_t p = 0; p < h * w; p++)
            dx_plane[p] = 0.0f;
        for (int64_t out = plane_index * oh * ow; out < (plane_index + 1) * oh * ow; out++)
            dx_plane[argmax[out]] += dy[out];
    }
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_avgpool2d_forward(const float *x, float *y, int64_t n, int64_t c, int64_t h, int64_t w,
                          int64_t k, int64_t stride)
{
    S2C_REQUIRE(pool_sizes_ok(n, c, h, w, k, stride));
    /* BEGIN SOLUTION week 13, task avgpool2d_forward */
    /* Like maxpool: a whole output row at once, each window offset (i, j) added along the row. */
    int64_t oh = s2c_out_size(h, k, stride, 0), ow = s2c_out_size(w, k, stride, 0);
    float inverse_area = (float)(1.0 / (double)(k * k));
    #pragma omp parallel for num_threads(s2c_get_num_threads()) \
        if (n * c * oh * ow * k * k >= S2C_PARALLEL_MIN)
    for (int64_t plane_index = 0; plane_index < n * c; plane_index++) {
        const float *plane = x + plane_index * h * w;
        for (int64_t oy = 0; oy < oh; oy++) {
            float *y_row = y + (plane_index * oh + oy) * ow;
            for (int64_t ox = 0; ox < ow; ox++)
                y_row[ox] = 0.0f;
            for (int64_t i = 0; i < k; i++) {
                for (int64_t j = 0; j < k; j++) {
                    const float *in = plane + (oy * stride + i) * w + j;
                    for (int64_t ox = 0; ox < ow; ox++)
                        y_row[ox] += in[ox * stride];
                }
            }
            for (int64_t ox = 0; ox < ow; ox++)
                y_row[ox] *= inverse_area;
        }
    }
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_avgpool2d_backward(const float *dy, float *dx, int64_t n, int64_t c, int64_t h,
                           int64_t w, int64_t k, int64_t stride)
{
    S2C_REQUIRE(pool_sizes_ok(n, c, h, w, k, stride));
    /* BEGIN SOLUTION week 13, task avgpool2d_backward */
    /* Each input of a window contributed 1 / k^2 of its output, so it gets that share of dy. */
    int64_t oh = s2c_out_size(h, k, stride, 0), ow = s2c_out_size(w, k, stride, 0);
    float inverse_area = (float)(1.0 / (double)(k * k));
    #pragma omp parallel for num_threads(s2c_get_num_threads()) \
        if (n * c * h * w >= S2C_PARALLEL_MIN)
    for (int64_t plane_index = 0; plane_index < n * c; plane_index++) {
        float *dx_plane = dx + plane_index * h * w;
        for (int64_t p = 0; p < h * w; p++)
            dx_plane[p] = 0.0f;
        for (int64_t oy = 0; oy < oh; oy++) {
            for (int64_t ox = 0; ox < ow; ox++) {
                float share = dy[(plane_index * oh + oy) * ow + ox] * inverse_area;
                for (int64_t i = 0; i < k; i++)
                    for (int64_t j = 0; j < k; j++)
                        dx_plane[(oy * stride + i) * w + ox * stride + j] += share;
            }
        }
    }
    return S2C_OK;
    /* END SOLUTION */
}

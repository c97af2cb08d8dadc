/* pooling.c -- max and average pooling, no padding (week 13).
 * x [n, c, h, w] -> y [n, c, oh, ow] with oh = (h - k) / stride + 1 (likewise ow). Every
 * [h, w] plane is pooled on its own, so the threads split the n * c planes. */
#include <math.h>

#include "internal.h"

/* Every size >= 1 and the window fits in the plane. */
static int pool_sizes_ok(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t stride)
{
    return n >= 1 && c >= 1 && h >= 1 && w >= 1 && k >= 1 && stride >= 1 && k <= h && k <= w;
}

int s2c_maxpool2d_forward(const float *x, float *y, int64_t *argmax, int64_t n, int64_t c,
                          int64_t h, int64_t w, int64_t k, int64_t stride)
{
    S2C_REQUIRE(pool_sizes_ok(n, c, h, w, k, stride));
    /* BEGIN SOLUTION week 13, task maxpool2d_forward */
    /* argmax keeps, for each output, the flat index iy * w + ix of the winner in its plane, so
     * the backward can route the gradient without searching again. Ties keep the first in
     * row-major window order (strict >); a NaN wins, as with np.argmax, so it propagates. */
    int64_t oh = s2c_out_size(h, k, stride, 0), ow = s2c_out_size(w, k, stride, 0);
    #pragma omp parallel for num_threads(s2c_get_num_threads()) \
        if (n * c * oh * ow * k * k >= S2C_PARALLEL_MIN)
    for (int64_t plane_index = 0; plane_index < n * c; plane_index++) {
        const float *plane = x + plane_index * h * w;
        for (int64_t oy = 0; oy < oh; oy++) {
            for (int64_t ox = 0; ox < ow; ox++) {
                int64_t best = oy * stride * w + ox * stride;
                for (int64_t i = 0; i < k; i++) {
                    for (int64_t j = 0; j < k; j++) {
                        int64_t index = (oy * stride + i) * w + ox * stride + j;
                        float value = plane[index], winner = plane[best];
                        if (value > winner || (isnan(value) && !isnan(winner)))
                            best = index;
                    }
                }
                int64_t out = (plane_index * oh + oy) * ow + ox;
                y[out] = plane[best];
                argmax[out] = best;
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
    int64_t oh = s2c_out_size(h, k, stride, 0), ow = s2c_out_size(w, k, stride, 0);
    float inverse_area = (float)(1.0 / (double)(k * k));
    #pragma omp parallel for num_threads(s2c_get_num_threads()) \
        if (n * c * oh * ow * k * k >= S2C_PARALLEL_MIN)
    for (int64_t plane_index = 0; plane_index < n * c; plane_index++) {
        const float *plane = x + plane_index * h * w;
        for (int64_t oy = 0; oy < oh; oy++) {
            for (int64_t ox = 0; ox < ow; ox++) {
                float sum = 0.0f;
                for (int64_t i = 0; i < k; i++)
                    for (int64_t j = 0; j < k; j++)
                        sum += plane[(oy * stride + i) * w + ox * stride + j];
                y[(plane_index * oh + oy) * ow + ox] = sum * inverse_area;
            }
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

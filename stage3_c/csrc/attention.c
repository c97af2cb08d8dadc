/* attention.c -- what a transformer block needs besides matmul and softmax (week 22): layer
 * normalization over the last dimension, and the GELU activation.
 *
 * Layer norm sees x as [rows, d]: each row (a token's d features) has its own mean and variance,
 * summed in double over its d contiguous floats, so the threads split the rows. The backward's
 * dgamma and dbeta are sums down the rows instead, one per feature: the threads split the
 * features into blocks, and each walks every row for its block, adding in the same order however
 * many threads run (the result does not depend on the thread count). */
#include <math.h>

#include "internal.h"

#define SQRT_HALF 0.70710678118654752440f      /* erf(x / sqrt(2)) = erf(x * SQRT_HALF) */
#define NORMAL_DENSITY 0.39894228040143267794f /* 1 / sqrt(2 pi): the normal density at 0 */
#define TANH_SCALE 0.79788456080286535588f     /* sqrt(2 / pi) */
#define TANH_CUBIC 0.044715f
#define FEATURE_BLOCK 64 /* features whose gradient sums one thread keeps, in double */

int s2c_layernorm(const float *x, const float *gamma, const float *beta, float *y, float *mean,
                  float *invstd, int64_t rows, int64_t d, double eps)
{
    S2C_REQUIRE(rows >= 1 && d >= 1);
    /* BEGIN SOLUTION week 22, task layernorm */
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (rows * d >= S2C_PARALLEL_MIN)
    for (int64_t r = 0; r < rows; r++) {
        const float *row = x + r * d;
        /* two passes (mean, then squared deviations): no E[x^2] - E[x]^2 cancelling */
        double sum = 0.0;
        #pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < d; j++)
            sum += row[j];
        double row_mean = sum / (double)d;
        double squares = 0.0;
        #pragma omp simd reduction(+ : squares)
        for (int64_t j = 0; j < d; j++) {
            double deviation = row[j] - row_mean;
            squares += deviation * deviation;
        }
        double inverse_std = 1.0 / sqrt(squares / (double)d + eps);
        mean[r] = (float)row_mean;
        invstd[r] = (float)inverse_std;
        for (int64_t j = 0; j < d; j++)
            y[r * d + j] = (float)(gamma[j] * ((row[j] - row_mean) * inverse_std) + beta[j]);
    }
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_layernorm_backward(const float *dy, const float *x, const float *gamma, const float *mean,
                           const float *invstd, float *dx, float *dgamma, float *dbeta,
                           int64_t rows, int64_t d)
{
    S2C_REQUIRE(rows >= 1 && d >= 1);
    /* BEGIN SOLUTION week 22, task layernorm_backward */
    /* dx, row by row: with xhat = (x - mean) * invstd and g = dy * gamma (xhat's gradient),
     *   dx = invstd * (g - mean(g) - xhat * mean(g * xhat)),
     * the two row means being the gradient through the row's mean and variance. */
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (rows * d >= S2C_PARALLEL_MIN)
    for (int64_t r = 0; r < rows; r++) {
        double row_mean = mean[r], inverse_std = invstd[r];
        double g_sum = 0.0, g_xhat_sum = 0.0;
        #pragma omp simd reduction(+ : g_sum, g_xhat_sum)
        for (int64_t j = 0; j < d; j++) {
            double g = (double)dy[r * d + j] * gamma[j];
            g_sum += g;
            g_xhat_sum += g * ((x[r * d + j] - row_mean) * inverse_std);
        }
        double mean_g = g_sum / (double)d, mean_g_xhat = g_xhat_sum / (double)d;
        for (int64_t j = 0; j < d; j++) {
            double xhat = (x[r * d + j] - row_mean) * inverse_std;
            double g = (double)dy[r * d + j] * gamma[j];
            dx[r * d + j] = (float)(inverse_std * (g - mean_g - xhat * mean_g_xhat));
        }
    }
    /* dbeta = sum of dy and dgamma = sum of dy * xhat down the rows, a block of features a
     * thread: each row's block is FEATURE_BLOCK neighbouring floats. */
    int64_t blocks = (d + FEATURE_BLOCK - 1) / FEATURE_BLOCK;
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (rows * d >= S2C_PARALLEL_MIN)
    for (int64_t block = 0; block < blocks; block++) {
        int64_t first = block * FEATURE_BLOCK, width = s2c_min(FEATURE_BLOCK, d - first);
        double dy_sum[FEATURE_BLOCK] = {0.0}, dy_xhat_sum[FEATURE_BLOCK] = {0.0};
        for (int64_t r = 0; r < rows; r++) {
            double row_mean = mean[r], inverse_std = invstd[r];
            const float *grads = dy + r * d + first, *values = x + r * d + first;
            #pragma omp simd
            for (int64_t j = 0; j < width; j++) {
                dy_sum[j] += grads[j];
                dy_xhat_sum[j] += grads[j] * ((values[j] - row_mean) * inverse_std);
            }
        }
        for (int64_t j = 0; j < width; j++) {
            dbeta[first + j] = (float)dy_sum[j];
            dgamma[first + j] = (float)dy_xhat_sum[j];
        }
    }
    return S2C_OK;
    /* END SOLUTION */
}

/* (s, 1 - s) for gelu's tanh form: s = (1 + tanh(u)) / 2 with u = sqrt(2 / pi) (v + 0.044715 v^3),
 * computed as sigmoid(2u) = 1 / (1 + exp(-2u)) from exp(-|2u|), which never overflows:
 * 1 + tanh(u) and 1 - tanh(u)^2 cancel to a few digits where tanh(u) is near -1 or 1 (an error of
 * 1e-6 in gelu' at x = -5), the sigmoid's two halves do not. Given to the learner: week 21
 * wrote it in Python (a C exercise region must sit in a function returning a status). */
static inline void sigmoid_halves(float v, float *s, float *one_minus_s)
{
    float z = 2.0f * TANH_SCALE * (v + TANH_CUBIC * v * v * v);
    float e = expf(-fabsf(z)), p = 1.0f / (1.0f + e);
    *s = z >= 0.0f ? p : e * p; /* NaN fails z >= 0: both NaN */
    *one_minus_s = z >= 0.0f ? e * p : p;
}

int s2c_gelu(const float *x, float *y, int64_t size, int tanh_form)
{
    S2C_REQUIRE(size >= 1);
    /* BEGIN SOLUTION week 22, task gelu */
    /* y = x * Phi(x), Phi(x) = (1 + erf(x / sqrt(2))) / 2, or its tanh form */
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (size >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < size; i++) {
        float v = x[i], s, one_minus_s;
        if (tanh_form) {
            sigmoid_halves(v, &s, &one_minus_s);
            y[i] = v * s;
        } else {
            y[i] = 0.5f * v * (1.0f + erff(v * SQRT_HALF));
        }
    }
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_gelu_backward(const float *x, const float *dy, float *dx, int64_t size, int tanh_form)
{
    S2C_REQUIRE(size >= 1);
    /* BEGIN SOLUTION week 22, task gelu_backward */
    /* exact: gelu'(x) = Phi(x) + x * phi(x), phi the normal density; tanh form, with
     * u = sqrt(2 / pi) (x + 0.044715 x^3) and s = (1 + tanh(u)) / 2: s (1 + 2x (1 - s) du/dx) */
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (size >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < size; i++) {
        float v = x[i], derivative;
        if (tanh_form) {
            float s, one_minus_s;
            sigmoid_halves(v, &s, &one_minus_s);
            float du = TANH_SCALE * (1.0f + 3.0f * TANH_CUBIC * v * v);
            derivative = s * (1.0f + 2.0f * v * one_minus_s * du);
        } else {
            derivative = 0.5f * (1.0f + erff(v * SQRT_HALF)) +
                         v * NORMAL_DENSITY * expf(-0.5f * v * v);
        }
        dx[i] = dy[i] * derivative;
    }
    return S2C_OK;
    /* END SOLUTION */
}

/* norm.c -- batch normalization over the channels (week 13).
 * x [n, c, spatial]: spatial = h * w for images, 1 for [n, c] features. Each channel has its own
 * statistics, over its n * spatial values, so the threads split the channels. The statistics are
 * summed in double (float32 sums over a whole batch drift); `omp simd reduction` lets the compiler
 * keep several partial sums in one vector register, which C's strict order of additions would
 * otherwise forbid. */
#include <math.h>

#include "internal.h"

int s2c_batchnorm_forward(const float *x, const float *gamma, const float *beta,
                          float *running_mean, float *running_var, float *y, float *mean,
                          float *invstd, int64_t n, int64_t c, int64_t spatial, int training,
                          double momentum, double eps)
{
    /* the unbiased variance divides by count - 1, so training needs two values per channel */
    S2C_REQUIRE(n >= 1 && c >= 1 && spatial >= 1 && (!training || n * spatial >= 2));
    /* BEGIN SOLUTION week 13, task batchnorm_forward */
    int64_t count = n * spatial;
    #pragma omp parallel for num_threads(s2c_get_num_threads()) \
        if (n * c * spatial >= S2C_PARALLEL_MIN)
    for (int64_t channel = 0; channel < c; channel++) {
        double channel_mean, variance;
        if (training) {
            /* two passes (mean, then squared deviations): exact enough where
             * E[x^2] - E[x]^2 would cancel */
            double sum = 0.0;
            for (int64_t i = 0; i < n; i++) {
                #pragma omp simd reduction(+ : sum)
                for (int64_t p = 0; p < spatial; p++)
                    sum += x[(i * c + channel) * spatial + p];
            }
            channel_mean = sum / (double)count;
            double squares = 0.0;
            for (int64_t i = 0; i < n; i++) {
                #pragma omp simd reduction(+ : squares)
                for (int64_t p = 0; p < spatial; p++) {
                    double deviation = x[(i * c + channel) * spatial + p] - channel_mean;
                    squares += deviation * deviation;
                }
            }
            variance = squares / (double)count;
            double unbiased = squares / (double)(count - 1);
            running_mean[channel] =
                (float)((1.0 - momentum) * running_mean[channel] + momentum * channel_mean);
            running_var[channel] =
                (float)((1.0 - momentum) * running_var[channel] + momentum * unbiased);
        } else {
            channel_mean = running_mean[channel];
            variance = running_var[channel];
        }
        double inverse_std = 1.0 / sqrt(variance + eps);
        mean[channel] = (float)channel_mean;
        invstd[channel] = (float)inverse_std;
        double scale = gamma[channel] * inverse_std;
        for (int64_t i = 0; i < n; i++) {
            for (int64_t p = 0; p < spatial; p++) {
                int64_t index = (i * c + channel) * spatial + p;
                y[index] = (float)((x[index] - channel_mean) * scale + beta[channel]);
            }
        }
    }
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_batchnorm_backward(const float *dy, const float *x, const float *gamma,
                           const float *mean, const float *invstd, float *dx, float *dgamma,
                           float *dbeta, int64_t n, int64_t c, int64_t spatial)
{
    S2C_REQUIRE(n >= 1 && c >= 1 && spatial >= 1);
    /* BEGIN SOLUTION week 13, task batchnorm_backward */
    /* With xhat = (x - mean) * invstd and count values per channel:
     *   dbeta = sum dy, dgamma = sum dy * xhat,
     *   dx = gamma * invstd / count * (count * dy - dbeta - xhat * dgamma)
     * (the last two terms are the gradient through the batch mean and variance). */
    int64_t count = n * spatial;
    #pragma omp parallel for num_threads(s2c_get_num_threads()) \
        if (n * c * spatial >= S2C_PARALLEL_MIN)
    for (int64_t channel = 0; channel < c; channel++) {
        double channel_mean = mean[channel], inverse_std = invstd[channel];
        double dy_sum = 0.0, dy_xhat_sum = 0.0;
        for (int64_t i = 0; i < n; i++) {
            #pragma omp simd reduction(+ : dy_sum, dy_xhat_sum)
            for (int64_t p = 0; p < spatial; p++) {
                int64_t index = (i * c + channel) * spatial + p;
                double xhat = (x[index] - channel_mean) * inverse_std;
                dy_sum += dy[index];
                dy_xhat_sum += dy[index] * xhat;
            }
        }
        dbeta[channel] = (float)dy_sum;
        dgamma[channel] = (float)dy_xhat_sum;
        double factor = gamma[channel] * inverse_std / (double)count;
        for (int64_t i = 0; i < n; i++) {
            for (int64_t p = 0; p < spatial; p++) {
                int64_t index = (i * c + channel) * spatial + p;
                double xhat = (x[index] - channel_mean) * inverse_std;
                dx[index] = (float)(factor * ((double)count * dy[index] - dy_sum -
                                              xhat * dy_xhat_sum));
            }
        }
    }
    return S2C_OK;
    /* END SOLUTION */
}

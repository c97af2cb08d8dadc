/* norm.cu -- batch normalization over x [N, C] or [N, C, H, W], per channel (week 16), with x
 * seen as [N, C, L] (L = H*W, or 1): element e of channel c is x[n][c][l], n = e / L, l = e % L.
 *
 * Both directions are two launches: a block per channel reduces over its N*L values
 * (reduce.cuh's block_sum), then one thread per element applies the per-channel result. */
#include "reduce.cuh"

#define CHANNEL_THREADS 256
#define NORM_THREADS 256

__global__ void statistics_kernel(const float *x, float *running_mean, float *running_var,
                                  float *mean, float *invstd, int64_t n, int64_t channels,
                                  int64_t length, int training, float momentum, float eps);
__global__ void normalize_kernel(const float *x, const float *gamma, const float *beta,
                                 const float *mean, const float *invstd, float *y, int64_t size,
                                 int64_t channels, int64_t length);
__global__ void gradient_sums_kernel(const float *dy, const float *x, const float *mean,
                                     const float *invstd, float *dgamma, float *dbeta, int64_t n,
                                     int64_t channels, int64_t length);
__global__ void input_gradient_kernel(const float *dy, const float *x, const float *gamma,
                                      const float *mean, const float *invstd, const float *dgamma,
                                      const float *dbeta, float *dx, int64_t size,
                                      int64_t channels, int64_t length);

extern "C" int s2c_cuda_batchnorm_forward(const float *x, const float *gamma, const float *beta,
                                          float *running_mean, float *running_var, float *y,
                                          float *mean, float *invstd, int64_t n, int64_t channels,
                                          int64_t length, int training, float momentum,
                                          float eps)
{
    // BEGIN SOLUTION week 16, task batchnorm_forward
    int64_t size = n * channels * length;
    statistics_kernel<<<channels, CHANNEL_THREADS>>>(x, running_mean, running_var, mean, invstd,
                                                     n, channels, length, training, momentum, eps);
    LAUNCH_CHECK("statistics_kernel");
    normalize_kernel<<<blocks_for(size, NORM_THREADS), NORM_THREADS>>>(x, gamma, beta, mean, invstd,
                                                                       y, size, channels, length);
    LAUNCH_CHECK("normalize_kernel");
    return S2C_CUDA_OK;
}

/* Training: the batch mean, then the biased variance from squared deviations (two passes:
 * stable, unlike E[x^2] - E[x]^2), and the running statistics updated with the unbiased one.
 * Evaluation: the running statistics. Either way mean[c] and invstd[c] = 1 / sqrt(var + eps). */
__global__ void statistics_kernel(const float *x, float *running_mean, float *running_var,
                                  float *mean, float *invstd, int64_t n, int64_t channels,
                                  int64_t length, int training, float momentum, float eps)
{
    int64_t c = blockIdx.x, count = n * length;
    float m, var;
    if (training) {
        float partial = 0.0f;
        for (int64_t e = threadIdx.x; e < count; e += blockDim.x)
            partial += x[(e / length * channels + c) * length + e % length];
        m = block_sum(partial) / (float)count;
        partial = 0.0f;
        for (int64_t e = threadIdx.x; e < count; e += blockDim.x) {
            float d = x[(e / length * channels + c) * length + e % length] - m;
            partial += d * d;
        }
        var = block_sum(partial) / (float)count;
        if (threadIdx.x == 0) {
            running_mean[c] = (1.0f - momentum) * running_mean[c] + momentum * m;
            float unbiased = var * (float)((double)count / (double)(count - 1));
            running_var[c] = (1.0f - momentum) * running_var[c] + momentum * unbiased;
        }
    } else {
        m = running_mean[c];
        var = running_var[c];
    }
    if (threadIdx.x == 0) {
        mean[c] = m;
        invstd[c] = 1.0f / sqrtf(var + eps);
    }
}

__global__ void normalize_kernel(const float *x, const float *gamma, const float *beta,
                                 const float *mean, const float *invstd, float *y, int64_t size,
                                 int64_t channels, int64_t length)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < size) {
        int64_t c = i / length % channels;
        y[i] = (x[i] - mean[c]) * (gamma[c] * invstd[c]) + beta[c];
    }
    // END SOLUTION
}

extern "C" int s2c_cuda_batchnorm_backward(const float *dy, const float *x, const float *gamma,
                                           const float *mean, const float *invstd, float *dx,
                                           float *dgamma, float *dbeta, int64_t n,
                                           int64_t channels, int64_t length)
{
    // BEGIN SOLUTION week 16, task batchnorm_backward
    int64_t size = n * channels * length;
    gradient_sums_kernel<<<channels, CHANNEL_THREADS>>>(dy, x, mean, invstd, dgamma, dbeta, n,
                                                        channels, length);
    LAUNCH_CHECK("gradient_sums_kernel");
    input_gradient_kernel<<<blocks_for(size, NORM_THREADS), NORM_THREADS>>>(
        dy, x, gamma, mean, invstd, dgamma, dbeta, dx, size, channels, length);
    LAUNCH_CHECK("input_gradient_kernel");
    return S2C_CUDA_OK;
}

/* dbeta = sum(dy), dgamma = sum(dy * x_hat) over each channel's values: a block per channel. */
__global__ void gradient_sums_kernel(const float *dy, const float *x, const float *mean,
                                     const float *invstd, float *dgamma, float *dbeta, int64_t n,
                                     int64_t channels, int64_t length)
{
    int64_t c = blockIdx.x, count = n * length;
    float sum_dy = 0.0f, sum_dy_xhat = 0.0f;
    for (int64_t e = threadIdx.x; e < count; e += blockDim.x) {
        int64_t i = (e / length * channels + c) * length + e % length;
        sum_dy += dy[i];
        sum_dy_xhat += dy[i] * (x[i] - mean[c]) * invstd[c];
    }
    sum_dy = block_sum(sum_dy);
    sum_dy_xhat = block_sum(sum_dy_xhat);
    if (threadIdx.x == 0) {
        dbeta[c] = sum_dy;
        dgamma[c] = sum_dy_xhat;
    }
}

/* dx = gamma * invstd * (dy - mean(dy) - x_hat * mean(dy * x_hat)): the two means are the
 * gradient flowing through the batch mean and the batch variance. */
__global__ void input_gradient_kernel(const float *dy, const float *x, const float *gamma,
                                      const float *mean, const float *invstd, const float *dgamma,
                                      const float *dbeta, float *dx, int64_t size,
                                      int64_t channels, int64_t length)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < size) {
        int64_t c = i / length % channels;
        float count = (float)(size / channels);
        float x_hat = (x[i] - mean[c]) * invstd[c];
        dx[i] = gamma[c] * invstd[c] * (dy[i] - dbeta[c] / count - x_hat * dgamma[c] / count);
    }
    // END SOLUTION
}

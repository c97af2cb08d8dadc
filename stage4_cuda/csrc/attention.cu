/* attention.cu -- what a transformer block needs besides matmul and softmax (week 22): layer
 * normalization over the last dimension, and the GELU activation.
 *
 * Layer norm sees x as [rows, d]: a block per row reduces the row's d contiguous floats
 * (reduce.cuh's block_sum: a warp's shuffles, then the warps'), two passes for the mean and the
 * variance, then writes the row of y. The backward's dx is the same work (the sums of
 * g = dy * gamma and of g * x_hat over the row, then the row); its dgamma and dbeta are sums down
 * the rows, in two levels: a block per 32 features and CHUNK_ROWS rows adds its rows (a warp reads
 * 32 neighbouring features: one coalesced load a row) into partial sums, then a thread per feature
 * adds its column of partial sums. A thread per feature walking every row alone would leave the
 * GPU nearly idle (768 features: 768 threads) and run at a hundredth of its bandwidth. Every sum
 * is taken in the same order on every run.
 *
 * GELU is elementwise: per-element device functions that elementwise.cuh's map (forward) and zip
 * (backward) apply, one per form. */
#include "elementwise.cuh"
#include "reduce.cuh"

#define ROW_THREADS 256
#define FEATURE_THREADS 256
#define FEATURE_LANES 32 /* partial sums: a block of 32 features ... */
#define ROW_LANES 8      /* ... by 8 rows at a time ... */
#define CHUNK_ROWS 256   /* ... over CHUNK_ROWS rows: a partial sum a chunk and feature */
#define SQRT_HALF 0.70710678118654752440f      /* erf(x / sqrt(2)) = erf(x * SQRT_HALF) */
#define NORMAL_DENSITY 0.39894228040143267794f /* 1 / sqrt(2 pi): the normal density at 0 */
#define TANH_SCALE 0.79788456080286535588f     /* sqrt(2 / pi) */
#define TANH_CUBIC 0.044715f

__global__ void layernorm_rows_kernel(const float *x, const float *gamma, const float *beta,
                                      float *y, float *mean, float *invstd, int64_t d, float eps);
__global__ void layernorm_input_gradient_kernel(const float *dy, const float *x,
                                                const float *gamma, const float *mean,
                                                const float *invstd, float *dx, int64_t d);
__global__ void layernorm_partial_sums_kernel(const float *dy, const float *x, const float *mean,
                                              const float *invstd, float *partial, int64_t rows,
                                              int64_t d);
__global__ void layernorm_feature_sums_kernel(const float *partial, float *dgamma, float *dbeta,
                                              int64_t chunks, int64_t d);

extern "C" int s2c_cuda_layernorm(const float *x, const float *gamma, const float *beta, float *y,
                                  float *mean, float *invstd, int64_t rows, int64_t d, float eps)
{
    // BEGIN SOLUTION week 22, task layernorm
    launch_overlapped(layernorm_rows_kernel, rows, ROW_THREADS, 0, x, gamma, beta, y, mean, invstd,
                      d, eps);
    LAUNCH_CHECK("layernorm_rows_kernel");
    return S2C_CUDA_OK;
}

/* Block r: row r's mean, then the sum of its squared deviations (two passes: no
 * E[x^2] - E[x]^2 cancelling), invstd = 1 / sqrt(var + eps), and the row of y. */
__global__ void layernorm_rows_kernel(const float *x, const float *gamma, const float *beta,
                                      float *y, float *mean, float *invstd, int64_t d, float eps)
{
    wait_for_previous_kernel();
    int64_t start = blockIdx.x * d;
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x)
        sum += x[start + j];
    float m = block_sum(sum) / (float)d;
    float squares = 0.0f;
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
        float deviation = x[start + j] - m;
        squares += deviation * deviation;
    }
    float s = 1.0f / sqrtf(block_sum(squares) / (float)d + eps);
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x)
        y[start + j] = gamma[j] * ((x[start + j] - m) * s) + beta[j];
    if (threadIdx.x == 0) {
        mean[blockIdx.x] = m;
        invstd[blockIdx.x] = s;
    }
    // END SOLUTION
}

extern "C" int s2c_cuda_layernorm_backward(const float *dy, const float *x, const float *gamma,
                                           const float *mean, const float *invstd, float *dx,
                                           float *dgamma, float *dbeta, float *partial,
                                           int64_t rows, int64_t d)
{
    // BEGIN SOLUTION week 22, task layernorm_backward
    launch_overlapped(layernorm_input_gradient_kernel, rows, ROW_THREADS, 0, dy, x, gamma, mean,
                      invstd, dx, d);
    LAUNCH_CHECK("layernorm_input_gradient_kernel");
    int64_t chunks = s2c_cuda_layernorm_chunks(rows);
    launch_overlapped(layernorm_partial_sums_kernel, dim3(blocks_for(d, FEATURE_LANES), chunks),
                      dim3(FEATURE_LANES, ROW_LANES), 0, dy, x, mean, invstd, partial, rows, d);
    LAUNCH_CHECK("layernorm_partial_sums_kernel");
    launch_overlapped(layernorm_feature_sums_kernel, blocks_for(d, FEATURE_THREADS),
                      FEATURE_THREADS, 0, partial, dgamma, dbeta, chunks, d);
    LAUNCH_CHECK("layernorm_feature_sums_kernel");
    return S2C_CUDA_OK;
}

/* Block r: with x_hat = (x - mean) * invstd and g = dy * gamma (x_hat's gradient),
 * dx = invstd * (g - mean(g) - x_hat * mean(g * x_hat)): the two row means are the gradient
 * flowing through the row's mean and variance. */
__global__ void layernorm_input_gradient_kernel(const float *dy, const float *x,
                                                const float *gamma, const float *mean,
                                                const float *invstd, float *dx, int64_t d)
{
    wait_for_previous_kernel();
    int64_t start = blockIdx.x * d;
    float m = mean[blockIdx.x], s = invstd[blockIdx.x];
    float sum_g = 0.0f, sum_g_xhat = 0.0f;
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
        float g = dy[start + j] * gamma[j];
        sum_g += g;
        sum_g_xhat += g * ((x[start + j] - m) * s);
    }
    float mean_g = block_sum(sum_g) / (float)d, mean_g_xhat = block_sum(sum_g_xhat) / (float)d;
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
        float x_hat = (x[start + j] - m) * s;
        dx[start + j] = s * (dy[start + j] * gamma[j] - mean_g - x_hat * mean_g_xhat);
    }
}

/* Block (features f, chunk c): thread (lane, y) adds dy and dy * x_hat of feature
 * f * FEATURE_LANES + lane over rows y, y + ROW_LANES, ... of the chunk; the ROW_LANES sums of a
 * feature meet in shared memory and thread y = 0 adds them in order into
 * partial[c] (dbeta's terms) and partial[chunks + c] (dgamma's), each a row of d floats. */
__global__ void layernorm_partial_sums_kernel(const float *dy, const float *x, const float *mean,
                                              const float *invstd, float *partial, int64_t rows,
                                              int64_t d)
{
    wait_for_previous_kernel();
    __shared__ float sums[2][ROW_LANES][FEATURE_LANES];
    int lane = threadIdx.x, y = threadIdx.y;
    int64_t j = blockIdx.x * (int64_t)FEATURE_LANES + lane, chunks = gridDim.y;
    int64_t first = blockIdx.y * (int64_t)CHUNK_ROWS, last = min(rows, first + CHUNK_ROWS);
    float sum_dy = 0.0f, sum_dy_xhat = 0.0f;
    if (j < d)
        for (int64_t r = first + y; r < last; r += ROW_LANES) {
            float g = dy[r * d + j];
            sum_dy += g;
            sum_dy_xhat += g * ((x[r * d + j] - mean[r]) * invstd[r]);
        }
    sums[0][y][lane] = sum_dy;
    sums[1][y][lane] = sum_dy_xhat;
    __syncthreads();
    if (y == 0 && j < d) {
        for (int other = 1; other < ROW_LANES; other++) {
            sum_dy += sums[0][other][lane];
            sum_dy_xhat += sums[1][other][lane];
        }
        partial[blockIdx.y * d + j] = sum_dy;
        partial[(chunks + blockIdx.y) * d + j] = sum_dy_xhat;
    }
}

/* Thread j: dbeta[j] and dgamma[j], the sums of feature j's partial sums, chunk by chunk. */
__global__ void layernorm_feature_sums_kernel(const float *partial, float *dgamma, float *dbeta,
                                              int64_t chunks, int64_t d)
{
    wait_for_previous_kernel();
    int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (j >= d) return;
    float sum_dy = 0.0f, sum_dy_xhat = 0.0f;
    for (int64_t c = 0; c < chunks; c++) {
        sum_dy += partial[c * d + j];
        sum_dy_xhat += partial[(chunks + c) * d + j];
    }
    dbeta[j] = sum_dy;
    dgamma[j] = sum_dy_xhat;
    // END SOLUTION
}

extern "C" int64_t s2c_cuda_layernorm_chunks(int64_t rows)
{
    return blocks_for(rows, CHUNK_ROWS);
}

/* (s, 1 - s) for gelu's tanh form: s = (1 + tanh(u)) / 2 with u = sqrt(2 / pi) (v + 0.044715 v^3),
 * computed as sigmoid(2u) = 1 / (1 + exp(-2u)) from exp(-|2u|), which never overflows:
 * 1 + tanh(u) and 1 - tanh(u)^2 cancel to a few digits where tanh(u) is near -1 or 1 (an error of
 * 1e-6 in gelu' at x = -5), the sigmoid's two halves do not. Given to the learner: week 21 wrote
 * it in Python (an exercise region stubs a function returning a status, or a kernel's body). */
static __device__ __forceinline__ void sigmoid_halves(float v, float *s, float *one_minus_s)
{
    float z = 2.0f * TANH_SCALE * (v + TANH_CUBIC * v * v * v);
    float e = expf(-fabsf(z)), p = 1.0f / (1.0f + e);
    *s = z >= 0.0f ? p : e * p; /* NaN fails z >= 0: both NaN */
    *one_minus_s = z >= 0.0f ? e * p : p;
}

__device__ float gelu_element(float x, float);
__device__ float gelu_tanh_element(float x, float);
__device__ float gelu_backward_element(float x, float dy, float);
__device__ float gelu_tanh_backward_element(float x, float dy, float);

extern "C" int s2c_cuda_gelu(const float *x, float *y, int64_t n, int tanh_form)
{
    // BEGIN SOLUTION week 22, task gelu
    if (tanh_form)
        return launch_map<gelu_tanh_element>("gelu_tanh_element (map)", x, y, n, 0.0f);
    return launch_map<gelu_element>("gelu_element (map)", x, y, n, 0.0f);
}

/* y = x * Phi(x), Phi(x) = (1 + erf(x / sqrt(2))) / 2, or its tanh form s */
__device__ float gelu_element(float x, float) {
    return 0.5f * x * (1.0f + erff(x * SQRT_HALF));
}

__device__ float gelu_tanh_element(float x, float) {
    float s, one_minus_s;
    sigmoid_halves(x, &s, &one_minus_s);
    return x * s;
    // END SOLUTION
}

extern "C" int s2c_cuda_gelu_backward(const float *x, const float *dy, float *dx, int64_t n,
                                      int tanh_form)
{
    // BEGIN SOLUTION week 22, task gelu_backward
    if (tanh_form)
        return launch_zip<gelu_tanh_backward_element>("gelu_tanh_backward_element (zip)", x, dy,
                                                      dx, n, n, 0.0f);
    return launch_zip<gelu_backward_element>("gelu_backward_element (zip)", x, dy, dx, n, n, 0.0f);
}

/* gelu'(x) = Phi(x) + x * phi(x), phi the normal density */
__device__ float gelu_backward_element(float x, float dy, float) {
    return dy * (0.5f * (1.0f + erff(x * SQRT_HALF)) + x * NORMAL_DENSITY * expf(-0.5f * x * x));
}

/* the tanh form, with s = (1 + tanh(u)) / 2: gelu'(x) = s * (1 + 2x * (1 - s) * du/dx) */
__device__ float gelu_tanh_backward_element(float x, float dy, float) {
    float s, one_minus_s;
    sigmoid_halves(x, &s, &one_minus_s);
    float du = TANH_SCALE * (1.0f + 3.0f * TANH_CUBIC * x * x);
    return dy * (s * (1.0f + 2.0f * x * one_minus_s * du));
    // END SOLUTION
}

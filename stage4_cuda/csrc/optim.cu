/* optim.cu -- optimizer steps (week 14), in place: one thread per parameter, which reads p, g and
 * the state and writes p and the state back (7 arrays' worth of bytes for Adam: bound by memory
 * bandwidth). `weight_decay` adds weight_decay * p to g first.
 *
 * Each thread loads every value it needs before it stores anything: after a store to v[i] the
 * compiler must load p[i] again (v might be p), and loads issued together are in flight together
 * (elementwise.cuh says why that decides the speed). */
#include "common.h"

#define STEP_THREADS 256

/* grad + weight_decay * p, or grad itself without decay (0 * p would make an Inf p NaN, where
 * PyTorch keeps the state finite). */
static inline __device__ float decayed(float grad, float p, float weight_decay) {
    return weight_decay != 0.0f ? grad + weight_decay * p : grad;
}

__global__ void sgd_kernel(float *p, const float *g, int64_t n, float lr, float weight_decay);
__global__ void momentum_kernel(float *p, const float *g, float *v, int64_t n, float lr,
                                float momentum, int nesterov, float weight_decay);
__global__ void rmsprop_kernel(float *p, const float *g, float *s, int64_t n, float lr, float alpha,
                               float eps, float weight_decay);
__global__ void adam_kernel(float *p, const float *g, float *m, float *v, int64_t n, float lr,
                            float beta1, float beta2, float eps, float weight_decay,
                            float correction1, float correction2);

extern "C" int s2c_cuda_sgd_step(float *p, const float *g, int64_t n, float lr,
                                 float weight_decay)
{
    // BEGIN SOLUTION week 14, task sgd_step
    sgd_kernel<<<blocks_for(n, STEP_THREADS), STEP_THREADS>>>(p, g, n, lr, weight_decay);
    LAUNCH_CHECK("sgd_kernel");
    return S2C_CUDA_OK;
}

__global__ void sgd_kernel(float *p, const float *g, int64_t n, float lr, float weight_decay) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) {
        float weight = p[i], grad = g[i];
        p[i] = weight - lr * decayed(grad, weight, weight_decay);
    }
    // END SOLUTION
}

extern "C" int s2c_cuda_momentum_step(float *p, const float *g, float *v, int64_t n, float lr,
                                      float momentum, int nesterov, float weight_decay)
{
    // BEGIN SOLUTION week 14, task momentum_step
    momentum_kernel<<<blocks_for(n, STEP_THREADS), STEP_THREADS>>>(p, g, v, n, lr, momentum,
                                                                   nesterov, weight_decay);
    LAUNCH_CHECK("momentum_kernel");
    return S2C_CUDA_OK;
}

/* v = momentum * v + g; p -= lr * (g + momentum * v if nesterov else v) */
__global__ void momentum_kernel(float *p, const float *g, float *v, int64_t n, float lr,
                                float momentum, int nesterov, float weight_decay)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) {
        float weight = p[i], velocity = v[i], grad = g[i];
        grad = decayed(grad, weight, weight_decay);
        velocity = momentum * velocity + grad;
        v[i] = velocity;
        p[i] = weight - lr * (nesterov ? grad + momentum * velocity : velocity);
    }
    // END SOLUTION
}

extern "C" int s2c_cuda_rmsprop_step(float *p, const float *g, float *s, int64_t n, float lr,
                                     float alpha, float eps, float weight_decay)
{
    // BEGIN SOLUTION week 14, task rmsprop_step
    rmsprop_kernel<<<blocks_for(n, STEP_THREADS), STEP_THREADS>>>(p, g, s, n, lr, alpha, eps,
                                                                  weight_decay);
    LAUNCH_CHECK("rmsprop_kernel");
    return S2C_CUDA_OK;
}

/* s = alpha * s + (1 - alpha) * g^2; p -= lr * g / (sqrt(s) + eps) */
__global__ void rmsprop_kernel(float *p, const float *g, float *s, int64_t n, float lr, float alpha,
                               float eps, float weight_decay)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) {
        float weight = p[i], square = s[i], grad = g[i];
        grad = decayed(grad, weight, weight_decay);
        square = alpha * square + (1.0f - alpha) * grad * grad;
        s[i] = square;
        p[i] = weight - lr * grad / (sqrtf(square) + eps);
    }
    // END SOLUTION
}

extern "C" int s2c_cuda_adam_step(float *p, const float *g, float *m, float *v, int64_t n, float lr,
                                  float beta1, float beta2, float eps, float weight_decay,
                                  float correction1, float correction2)
{
    // BEGIN SOLUTION week 14, task adam_step
    adam_kernel<<<blocks_for(n, STEP_THREADS), STEP_THREADS>>>(
        p, g, m, v, n, lr, beta1, beta2, eps, weight_decay, correction1, correction2);
    LAUNCH_CHECK("adam_kernel");
    return S2C_CUDA_OK;
}

/* m and v: running means of g and g^2; the corrections 1 - beta^t come from the host, once per
 * step. */
__global__ void adam_kernel(float *p, const float *g, float *m, float *v, int64_t n, float lr,
                            float beta1, float beta2, float eps, float weight_decay,
                            float correction1, float correction2)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) {
        float weight = p[i], first = m[i], second = v[i], grad = g[i];
        grad = decayed(grad, weight, weight_decay);
        first = beta1 * first + (1.0f - beta1) * grad;
        second = beta2 * second + (1.0f - beta2) * grad * grad;
        m[i] = first;
        v[i] = second;
        p[i] = weight - lr * (first / correction1) / (sqrtf(second / correction2) + eps);
    }
    // END SOLUTION
}

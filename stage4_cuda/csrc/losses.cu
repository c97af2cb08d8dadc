/* losses.cu -- the losses and their gradients (week 14). A forward writes one term per element
 * (mse, bce) or per row (cross-entropy, hinge) into a scratch array, and mean_kernel adds the terms
 * in double in one block, in the same order on every run, leaving the mean on the device (the
 * wrapper returns it as a DeviceScalar: no wait for the GPU). Each backward takes the forward's
 * arguments and returns the gradient w.r.t. the first. */
#include "reduce.cuh"

#define LOSS_THREADS 256 /* elementwise terms and gradients */
#define ROW_THREADS 128  /* a block per row (hinge) */

/* loss[0] = the mean of terms[0..n), in double: one block striding over the terms, then a tree. */
__global__ void mean_kernel(const float *terms, float *loss, int64_t n) {
    double partial = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) partial += terms[i];
    double total = block_sum(partial);
    if (threadIdx.x == 0) loss[0] = (float)(total / (double)n);
}

static inline int launch_mean(const float *terms, float *loss, int64_t n) {
    mean_kernel<<<1, LOSS_THREADS>>>(terms, loss, n);
    LAUNCH_CHECK("mean_kernel");
    return S2C_CUDA_OK;
}

/* The stable sigmoid (activations.cu): exp(-|z|) never overflows. */
static inline __device__ float stable_sigmoid(float z) {
    float e = expf(-fabsf(z));
    float positive = 1.0f / (1.0f + e);
    return z >= 0.0f ? positive : e * positive;
}

__global__ void mse_terms_kernel(const float *pred, const float *target, float *terms, int64_t n);
__global__ void mse_backward_kernel(const float *pred, const float *target, float *grad, int64_t n);
__global__ void bce_terms_kernel(const float *z, const float *t, float *terms, int64_t n);
__global__ void bce_backward_kernel(const float *z, const float *t, float *grad, int64_t n);
__global__ void hinge_terms_kernel(const float *scores, const int64_t *labels, float margin,
                                   float *terms, int64_t cols);
__global__ void hinge_backward_kernel(const float *scores, const int64_t *labels, float margin,
                                      float *grad, int64_t rows, int64_t cols);

extern "C" int s2c_cuda_mse_loss(const float *pred, const float *target, float *terms, float *loss,
                                 int64_t n)
{
    // BEGIN SOLUTION week 14, task mse_loss
    mse_terms_kernel<<<blocks_for(n, LOSS_THREADS), LOSS_THREADS>>>(pred, target, terms, n);
    LAUNCH_CHECK("mse_terms_kernel");
    return launch_mean(terms, loss, n);
}

__global__ void mse_terms_kernel(const float *pred, const float *target, float *terms, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) {
        float diff = pred[i] - target[i];
        terms[i] = diff * diff;
    }
    // END SOLUTION
}

extern "C" int s2c_cuda_mse_loss_backward(const float *pred, const float *target, float *grad,
                                          int64_t n)
{
    // BEGIN SOLUTION week 14, task mse_loss_backward
    mse_backward_kernel<<<blocks_for(n, LOSS_THREADS), LOSS_THREADS>>>(pred, target, grad, n);
    LAUNCH_CHECK("mse_backward_kernel");
    return S2C_CUDA_OK;
}

/* d mse / d pred = 2 (pred - target) / n */
__global__ void mse_backward_kernel(const float *pred, const float *target, float *grad,
                                    int64_t n)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) grad[i] = (float)(2.0 / (double)n) * (pred[i] - target[i]);
    // END SOLUTION
}

extern "C" int s2c_cuda_bce_with_logits_loss(const float *logits, const float *targets,
                                             float *terms, float *loss, int64_t n)
{
    // BEGIN SOLUTION week 14, task bce_with_logits_loss
    bce_terms_kernel<<<blocks_for(n, LOSS_THREADS), LOSS_THREADS>>>(logits, targets, terms, n);
    LAUNCH_CHECK("bce_terms_kernel");
    return launch_mean(terms, loss, n);
}

/* The stable form max(z, 0) - z t + log(1 + exp(-|z|)): exp never overflows. */
__global__ void bce_terms_kernel(const float *z, const float *t, float *terms, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) {
        float positive_part = z[i] <= 0.0f ? 0.0f : z[i]; /* max(z, 0), keeping a NaN */
        terms[i] = positive_part - z[i] * t[i] + log1pf(expf(-fabsf(z[i])));
    }
    // END SOLUTION
}

extern "C" int s2c_cuda_bce_with_logits_loss_backward(const float *logits, const float *targets,
                                                      float *grad, int64_t n)
{
    // BEGIN SOLUTION week 14, task bce_with_logits_loss_backward
    bce_backward_kernel<<<blocks_for(n, LOSS_THREADS), LOSS_THREADS>>>(logits, targets, grad, n);
    LAUNCH_CHECK("bce_backward_kernel");
    return S2C_CUDA_OK;
}

/* (sigmoid(z) - t) / n */
__global__ void bce_backward_kernel(const float *z, const float *t, float *grad, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) grad[i] = (stable_sigmoid(z[i]) - t[i]) / (float)n;
    // END SOLUTION
}

/* Cross-entropy: rung 5 of the softmax ladder (softmax/05_cross_entropy.cu) computes each row's
 * term and, when grad is not NULL, the gradient (softmax(logits) - one_hot(labels)) / rows in the
 * same passes over the logits; the forward then adds the terms into the mean. */
extern "C" int s2c_cuda_cross_entropy_loss(const float *logits, const int64_t *labels, float *terms,
                                           float *loss, float *grad, int64_t rows, int64_t cols)
{
    int status = s2c_cuda_softmax_cross_entropy(logits, labels, terms, grad, rows, cols);
    return status == S2C_CUDA_OK ? launch_mean(terms, loss, rows) : status;
}

extern "C" int s2c_cuda_cross_entropy_loss_backward(const float *logits, const int64_t *labels,
                                                    float *grad, int64_t rows, int64_t cols)
{
    return s2c_cuda_softmax_cross_entropy(logits, labels, NULL, grad, rows, cols);
}

extern "C" int s2c_cuda_hinge_loss(const float *scores, const int64_t *labels, float margin,
                                   float *terms, float *loss, int64_t rows, int64_t cols)
{
    // BEGIN SOLUTION week 14, task hinge_loss
    hinge_terms_kernel<<<rows, ROW_THREADS>>>(scores, labels, margin, terms, cols);
    LAUNCH_CHECK("hinge_terms_kernel");
    return launch_mean(terms, loss, rows);
}

/* terms[row] = sum over j != label of max(0, s_j - s_label + margin); a NaN counts (it makes the
 * loss NaN). */
__global__ void hinge_terms_kernel(const float *scores, const int64_t *labels, float margin,
                                   float *terms, int64_t cols)
{
    const float *row = scores + blockIdx.x * cols;
    int64_t label = labels[blockIdx.x];
    float correct = row[label], partial = 0.0f;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
        float violation = row[j] - correct + margin;
        if (j != label && !(violation <= 0.0f)) partial += violation;
    }
    float total = block_sum(partial);
    if (threadIdx.x == 0) terms[blockIdx.x] = total;
    // END SOLUTION
}

extern "C" int s2c_cuda_hinge_loss_backward(const float *scores, const int64_t *labels,
                                            float margin, float *grad, int64_t rows,
                                            int64_t cols)
{
    // BEGIN SOLUTION week 14, task hinge_loss_backward
    hinge_backward_kernel<<<rows, ROW_THREADS>>>(scores, labels, margin, grad, rows, cols);
    LAUNCH_CHECK("hinge_backward_kernel");
    return S2C_CUDA_OK;
}

/* Each violated margin adds 1/rows to its class and takes 1/rows from the correct one. */
__global__ void hinge_backward_kernel(const float *scores, const int64_t *labels, float margin,
                                      float *grad, int64_t rows, int64_t cols)
{
    int64_t offset = blockIdx.x * cols, label = labels[blockIdx.x];
    float correct = scores[offset + label], violated = 0.0f, n = (float)rows;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
        if (j == label) continue;
        bool active = scores[offset + j] - correct + margin > 0.0f;
        grad[offset + j] = active ? 1.0f / n : 0.0f;
        violated += active ? 1.0f : 0.0f;
    }
    violated = block_sum(violated);
    if (threadIdx.x == 0) grad[offset + label] = -violated / n;
    // END SOLUTION
}

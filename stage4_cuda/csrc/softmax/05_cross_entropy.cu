/* 05_cross_entropy.cu -- rung 5: softmax fused with the cross-entropy loss and its gradient.
 *
 * What it changes: a classifier never needs the probabilities themselves, only
 *     loss term   = log(sum(exp(logits))) - logits[label]            (a float per row)
 *     gradient    = (softmax(logits) - one_hot(label)) / rows        ([rows, cols])
 * Both follow from rung 4's row statistics: log-sum-exp = max + log(sum). So one pass over the
 * logits gives every row's term (a block per row, the online statistics, one more read for the
 * label's logit), and, when the gradient is wanted, a second pass (from L2, as in rung 4) writes it
 * directly: no softmax or log-softmax output written to device memory and read back, as
 * PyTorch's log_softmax, nll_loss and their backwards do (4 row passes of device memory).
 * losses.cu's cross_entropy_loss adds the terms into the mean (in double, in a fixed order), and
 * cross_entropy_loss_backward asks for the gradient alone.
 *
 * Cost model (R = 4 rows cols bytes; [8192, 50257]: R = 1.65 GB):
 *   bytes  loss alone: R read (one pass). Loss and gradient: R read + R written from device
 *          memory, the row's second read from L2: the bytes of a copy.
 *   FLOPs  an exp an element in each pass.
 *
 * Run it: python -m stage4_cuda.softmax_bench --rungs cross_entropy */
#include "softmax.cuh"

__global__ void softmax_cross_entropy_kernel(const float *logits, const int64_t *labels,
                                             float *terms, float *grad, int64_t rows,
                                             int64_t cols, int keep);

extern "C" int s2c_cuda_softmax_cross_entropy(const float *logits, const int64_t *labels,
                                              float *terms, float *grad, int64_t rows,
                                              int64_t cols)
{
    if (rows == 0)
        return S2C_CUDA_OK;
    // BEGIN SOLUTION week 14, task cross_entropy_loss
    size_t kept = grad != NULL ? kept_row_bytes(cols) : 0; /* the loss alone reads once */
    CUDA_CHECK(allow_dynamic_shared(softmax_cross_entropy_kernel, kept));
    softmax_cross_entropy_kernel<<<rows, online_threads(cols), kept>>>(logits, labels, terms, grad,
                                                                        rows, cols, kept != 0);
    LAUNCH_CHECK("softmax_cross_entropy_kernel");
    return S2C_CUDA_OK;
}

/* terms[row] (unless terms is NULL) and grad[row] (unless grad is NULL) from logits[row]. */
__global__ void __launch_bounds__(ONLINE_THREADS)
softmax_cross_entropy_kernel(const float *logits, const int64_t *labels, float *terms,
                             float *grad, int64_t rows, int64_t cols, int keep)
{
    extern __shared__ __align__(16) float shared[]; /* the row, when kept (softmax.cuh) */
    const float *row = logits + blockIdx.x * cols;
    float *kept = kept_row(shared, row, cols, keep);
    int64_t label = labels[blockIdx.x];
    RowStats stats = {-INFINITY, 0.0f};
    for_each_in_row(row, cols, [&](int64_t, float value) { stats_add(stats, value); }, kept);
    stats = block_stats(stats);
    float log_sum_exp = stats.max + logf(stats.sum);
    if (terms != NULL && threadIdx.x == 0)
        terms[blockIdx.x] = log_sum_exp - row[label];
    if (grad != NULL) {
        float inverse_rows = 1.0f / (float)rows;
        map_row(row, grad + blockIdx.x * cols, cols, [=](int64_t j, float value) {
            return (expf(value - log_sum_exp) - (j == label ? 1.0f : 0.0f)) * inverse_rows;
        }, kept);
    }
    // END SOLUTION
}

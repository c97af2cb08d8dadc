/* 05_cross_entropy.cu -- rung 5: softmax fused with the cross-entropy loss and its gradient.
 *
 * What it changes: a classifier never needs the probabilities themselves, only
 *     loss term   = log(sum(exp(logits))) - logits[label]            (a float per row)
 *     gradient    = (softmax(logits) - one_hot(label)) / rows        ([rows, cols])
 * Both follow from rung 4's row statistics: log-sum-exp = max + log(sum). So one read of the
 * logits into the block's registers (rung 4's HeldRow) gives every row's term (a block per row,
 * the online statistics, one more read for the label's logit), and, when the gradient is wanted,
 * writes it from the same registers: no softmax or log-softmax output written to device memory
 * and read back, as PyTorch's log_softmax, nll_loss and their backwards do (4 row passes of
 * device memory). losses.cu's cross_entropy_loss adds the terms into the mean (in double, in a
 * fixed order), and cross_entropy_loss_backward asks for the gradient alone.
 *
 * Cost model (R = 4 rows cols bytes; [8192, 50257]: R = 1.65 GB):
 *   bytes  loss alone: R read. Loss and gradient: R read + R written, the bytes of a copy.
 *   FLOPs  an exp an element for the statistics, another for the gradient.
 *
 * Run it: python -m bench.softmax_ladder --rungs cross_entropy */
#include "softmax.cuh"

template <int HELD>
__global__ void softmax_cross_entropy_kernel(const float *logits, const int64_t *labels,
                                             float *terms, float *grad, int64_t rows,
                                             int64_t cols);

extern "C" int s2c_cuda_softmax_cross_entropy(const float *logits, const int64_t *labels,
                                              float *terms, float *grad, int64_t rows,
                                              int64_t cols)
{
    if (rows == 0)
        return S2C_CUDA_OK;
    // BEGIN SOLUTION week 14, task cross_entropy_loss
    HeldLaunch launch = held_launch(cols);
    return with_held(launch.held, [&](auto held) {
        launch_overlapped(softmax_cross_entropy_kernel<held>, rows, launch.threads, 0, logits,
                          labels, terms, grad, rows, cols);
        LAUNCH_CHECK("softmax_cross_entropy_kernel");
        return S2C_CUDA_OK;
    });
}

/* terms[row] (unless terms is NULL) and grad[row] (unless grad is NULL) from logits[row]. */
template <int HELD>
__global__ void __launch_bounds__(ONLINE_THREADS, 1)
softmax_cross_entropy_kernel(const float *logits, const int64_t *labels, float *terms,
                             float *grad, int64_t rows, int64_t cols)
{
    wait_for_previous_kernel();
    HeldRow<HELD> row(logits + blockIdx.x * cols, cols);
    int64_t label = labels[blockIdx.x];
    RowStats stats = block_stats(row.stats());
    float log_sum_exp = stats.max + logf(stats.sum);
    if (terms != NULL && threadIdx.x == 0)
        terms[blockIdx.x] = log_sum_exp - row.row[label];
    if (grad != NULL) {
        float inverse_rows = 1.0f / (float)rows;
        row.map(grad + blockIdx.x * cols, [=](int64_t j, float value) {
            return (__expf(value - log_sum_exp) - (j == label ? 1.0f : 0.0f)) * inverse_rows;
        });
    }
    // END SOLUTION
}

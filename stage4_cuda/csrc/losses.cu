/* losses.cu -- the losses and their gradients (week 14). A forward leaves its mean on the device
 * (the wrapper returns it as a DeviceScalar: no wait for the GPU). Each backward takes the
 * forward's arguments and returns the gradient w.r.t. the first.
 *
 * A mean adds its terms in double, in the same order on every run (no atomics: float atomic
 * additions land in a different order each time). Cross-entropy (rung 5 of the softmax ladder,
 * softmax/05_cross_entropy.cu) writes one term per row into a scratch array and mean_kernel adds
 * them in one block: a batch has thousands of rows. mse and
 * bce have a term per element, millions of them, and hinge reads every score: one block runs on
 * one multiprocessor of a hundred or so, far from the device's bandwidth. Their means have two
 * levels: a grid of blocks each adds its share into one partial sum (in `partials`, scratch from
 * the wrapper), then one block adds the partial sums. The number of blocks is a function of the
 * size alone, so the partial sums are the same on every run. mse and bce compute their terms
 * inside the first level (no array of terms written and read back): 8 bytes an element read,
 * nothing written. */
#include "elementwise.cuh"
#include "reduce.cuh"

#define LOSS_THREADS 256 /* mean_kernel */
#define MEAN_THREADS 256 /* a block of the first level of a two-level mean */
#define ROW_WARPS 8      /* hinge: a warp per row (100 columns is 3 or 4 loads a lane: a block
                          * per row left 96 of 128 threads idle and paid two barriers a row) */

/* loss[0] = the mean of terms[0..n), in double: one block striding over the terms, then a tree. */
__global__ void mean_kernel(const float *terms, float *loss, int64_t n) {
    wait_for_previous_kernel();
    double partial = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) partial += terms[i];
    double total = block_sum(partial);
    if (threadIdx.x == 0) loss[0] = (float)(total / (double)n);
}

static inline int launch_mean(const float *terms, float *loss, int64_t n) {
    launch_overlapped(mean_kernel, 1, LOSS_THREADS, 0, terms, loss, n);
    LAUNCH_CHECK("mean_kernel");
    return S2C_CUDA_OK;
}

typedef float (*term_function)(float a, float b);

/* How many blocks the first level of a mean over `work` items uses: 16 items a thread (enough
 * loads in flight, and few partial sums), at most S2C_CUDA_MEAN_BLOCKS (8 blocks of 256 threads
 * on each of 128 multiprocessors or so fill a large GPU). A function of the size alone. */
static inline int64_t mean_blocks(int64_t work)
{
    int64_t blocks = ceil_div(work, MEAN_THREADS * 16);
    return blocks < 1 ? 1 : blocks < S2C_CUDA_MEAN_BLOCKS ? blocks : S2C_CUDA_MEAN_BLOCKS;
}

/* Level 1: partials[block] = the sum of F(a[i], b[i]) over the block's share of i < n, a
 * grid-stride loop: thread t takes elements t, t + grid, ... (a warp reads 32 neighbours at a
 * time); as float4 loads (16 bytes) when `quads` (aligned pointers), the last n % 4 elements
 * as floats. */
template <term_function F>
__global__ void sum_terms_kernel(const float *a, const float *b, double *partials, int64_t n,
                                 int quads)
{
    wait_for_previous_kernel();
    int64_t first = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    int64_t grid = (int64_t)gridDim.x * blockDim.x, tail = 0;
    double partial = 0.0;
    if (quads) {
        const float4 *a4 = (const float4 *)a, *b4 = (const float4 *)b;
#pragma unroll 4 /* 4 iterations' loads issued before their sums wait for them */
        for (int64_t q = first; q < n / 4; q += grid) {
            float4 u = a4[q], v = b4[q];
            partial += (double)F(u.x, v.x) + (double)F(u.y, v.y) + (double)F(u.z, v.z) +
                       (double)F(u.w, v.w);
        }
        tail = n / 4 * 4;
    }
    for (int64_t i = tail + first; i < n; i += grid) partial += (double)F(a[i], b[i]);
    double total = block_sum(partial);
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

/* Level 2: loss[0] = the sum of partials[0..blocks) / n, one block, in a fixed order. */
__global__ void mean_of_partials_kernel(const double *partials, float *loss, int64_t blocks,
                                        int64_t n)
{
    wait_for_previous_kernel();
    double partial = 0.0;
    for (int64_t i = threadIdx.x; i < blocks; i += blockDim.x) partial += partials[i];
    double total = block_sum(partial);
    if (threadIdx.x == 0) loss[0] = (float)(total / (double)n);
}

static inline int launch_mean_of_partials(const double *partials, float *loss, int64_t blocks,
                                          int64_t n)
{
    launch_overlapped(mean_of_partials_kernel, 1, MEAN_THREADS, 0, partials, loss, blocks, n);
    LAUNCH_CHECK("mean_of_partials_kernel");
    return S2C_CUDA_OK;
}

/* loss[0] = the mean of F(a[i], b[i]) over i < n, in two levels. */
template <term_function F>
int launch_mean_of(const char *kernel, const float *a, const float *b, double *partials,
                   float *loss, int64_t n)
{
    int64_t blocks = mean_blocks(n);
    int quads = aligned16(a) && aligned16(b);
    launch_overlapped(sum_terms_kernel<F>, blocks, MEAN_THREADS, 0, a, b, partials, n, quads);
    LAUNCH_CHECK(kernel);
    return launch_mean_of_partials(partials, loss, blocks, n);
}

/* The stable sigmoid (activations.cu): exp(-|z|) never overflows. */
static inline __device__ float stable_sigmoid(float z) {
    float e = expf(-fabsf(z));
    float positive = 1.0f / (1.0f + e);
    return z >= 0.0f ? positive : e * positive;
}

__device__ float mse_term(float pred, float target);
__device__ float mse_backward_element(float pred, float target, float two_over_n);
__device__ float bce_term(float z, float t);
__device__ float bce_backward_element(float z, float t, float n);
__global__ void hinge_sum_kernel(const float *scores, const int64_t *labels, float margin,
                                 double *partials, int64_t rows, int64_t cols);
__global__ void hinge_backward_kernel(const float *scores, const int64_t *labels, float margin,
                                      float *grad, int64_t rows, int64_t cols);

extern "C" int s2c_cuda_mse_loss(const float *pred, const float *target, double *partials,
                                 float *loss, int64_t n)
{
    // BEGIN SOLUTION week 14, task mse_loss
    return launch_mean_of<mse_term>("sum_terms_kernel<mse_term>", pred, target, partials, loss,
                                    n);
}

__device__ float mse_term(float pred, float target) {
    float diff = pred - target;
    return diff * diff;
    // END SOLUTION
}

extern "C" int s2c_cuda_mse_loss_backward(const float *pred, const float *target, float *grad,
                                          int64_t n)
{
    // BEGIN SOLUTION week 14, task mse_loss_backward
    return launch_zip<mse_backward_element>("mse_backward_element (zip)", pred, target, grad, n, n,
                                            (float)(2.0 / (double)n));
}

/* d mse / d pred = 2 (pred - target) / n: an elementwise zip (12 bytes an element). */
__device__ float mse_backward_element(float pred, float target, float two_over_n) {
    return two_over_n * (pred - target);
    // END SOLUTION
}

extern "C" int s2c_cuda_bce_with_logits_loss(const float *logits, const float *targets,
                                             double *partials, float *loss, int64_t n)
{
    // BEGIN SOLUTION week 14, task bce_with_logits_loss
    return launch_mean_of<bce_term>("sum_terms_kernel<bce_term>", logits, targets, partials, loss,
                                    n);
}

/* The stable form max(z, 0) - z t + log(1 + exp(-|z|)): exp never overflows. */
__device__ float bce_term(float z, float t) {
    float positive_part = z <= 0.0f ? 0.0f : z; /* max(z, 0), keeping a NaN */
    return positive_part - z * t + log1pf(expf(-fabsf(z)));
    // END SOLUTION
}

extern "C" int s2c_cuda_bce_with_logits_loss_backward(const float *logits, const float *targets,
                                                      float *grad, int64_t n)
{
    // BEGIN SOLUTION week 14, task bce_with_logits_loss_backward
    return launch_zip<bce_backward_element>("bce_backward_element (zip)", logits, targets, grad, n,
                                            n, (float)n);
}

/* (sigmoid(z) - t) / n: an elementwise zip (12 bytes an element). */
__device__ float bce_backward_element(float z, float t, float n) {
    return (stable_sigmoid(z) - t) / n;
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
                                   double *partials, float *loss, int64_t rows, int64_t cols)
{
    // BEGIN SOLUTION week 14, task hinge_loss
    int64_t blocks = mean_blocks(rows * 32); /* a warp a row: 32 threads' work each */
    launch_overlapped(hinge_sum_kernel, blocks, ROW_WARPS * 32, 0, scores, labels, margin, partials,
                      rows, cols);
    LAUNCH_CHECK("hinge_sum_kernel");
    return launch_mean_of_partials(partials, loss, blocks, rows);
}

/* Level 1 of the mean: partials[block] = the sum of the block's rows' terms, each
 * sum over j != label of max(0, s_j - s_label + margin), a NaN counting (it makes the loss NaN).
 * A warp per row, rows a grid apart; the lanes read 32 neighbouring scores at a time. Reads the
 * scores and labels once (4 rows x cols + 8 rows bytes), writes one double a block. */
__global__ void hinge_sum_kernel(const float *scores, const int64_t *labels, float margin,
                                 double *partials, int64_t rows, int64_t cols)
{
    wait_for_previous_kernel();
    int lane = threadIdx.x % 32;
    int64_t warps = (int64_t)gridDim.x * ROW_WARPS;
    double partial = 0.0; /* lane 0's rows */
    for (int64_t r = blockIdx.x * (int64_t)ROW_WARPS + threadIdx.x / 32; r < rows; r += warps) {
        const float *row = scores + r * cols;
        int64_t label = labels[r];
        float correct = row[label], term = 0.0f;
        for (int64_t j = lane; j < cols; j += 32) {
            float violation = row[j] - correct + margin;
            if (j != label && !(violation <= 0.0f)) term += violation;
        }
        term = warp_sum(term);
        if (lane == 0) partial += term;
    }
    double total = block_sum(partial);
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
    // END SOLUTION
}

extern "C" int s2c_cuda_hinge_loss_backward(const float *scores, const int64_t *labels,
                                            float margin, float *grad, int64_t rows,
                                            int64_t cols)
{
    // BEGIN SOLUTION week 14, task hinge_loss_backward
    launch_overlapped(hinge_backward_kernel, blocks_for(rows, ROW_WARPS), ROW_WARPS * 32, 0, scores,
                      labels, margin, grad, rows, cols);
    LAUNCH_CHECK("hinge_backward_kernel");
    return S2C_CUDA_OK;
}

/* Each violated margin adds 1/rows to its class and takes 1/rows from the correct one. A warp
 * per row (reads the row and its label, writes the row's gradient: 8 bytes an element), the
 * count of violations summed by shuffles. */
__global__ void hinge_backward_kernel(const float *scores, const int64_t *labels, float margin,
                                      float *grad, int64_t rows, int64_t cols)
{
    wait_for_previous_kernel();
    int64_t r = blockIdx.x * (int64_t)ROW_WARPS + threadIdx.x / 32;
    if (r >= rows) return; /* the whole warp: the shuffles below need all 32 lanes */
    int lane = threadIdx.x % 32;
    int64_t offset = r * cols, label = labels[r];
    float correct = scores[offset + label], violated = 0.0f, n = (float)rows;
    for (int64_t j = lane; j < cols; j += 32) {
        if (j == label) continue;
        bool active = scores[offset + j] - correct + margin > 0.0f;
        grad[offset + j] = active ? 1.0f / n : 0.0f;
        violated += active ? 1.0f : 0.0f;
    }
    violated = warp_sum(violated);
    if (lane == 0) grad[offset + label] = -violated / n;
    // END SOLUTION
}

/* 01_naive.cu -- rung 1: attention as the definition, three kernels and S in device memory.
 *
 * What it does: kernel 1 writes S = scale q k^T (masked) for every query and key, a thread per
 * score reading a row of q and a row of k; kernel 2 turns each row of S into P = softmax(S) in
 * place, a block per row in three passes (maximum, sum of exp, outputs: softmax rung 1's passes
 * in one kernel) and writes lse = max + log(sum); kernel 3 writes y = P v, a thread per output
 * reading a row of P and a column of v.
 *
 * Cost model (per head: n queries, m keys, head dimension d; [n = m = 4096, d = 64]):
 *   memory an n x m buffer a head: 64 MiB at n = m = 4096, 1 GiB at 16384 (quadratic in n).
 *   bytes  S written once, read three times, P written and read once: 24 n m bytes beside
 *          q, k, v and y (4 (2 n + 2 m) d); the rows of q, k and v a thread reads come mostly
 *          from L1 and L2, not device memory.
 *   FLOPs  4 n m d (2 n m d for q k^T, 2 n m d for P v) and about 5 n m for the softmax.
 *   so     bound by the n x m bytes at small d and by the loads of its dot products (one load a
 *          multiply-add, no reuse in registers) at d = 64: the baseline.
 *
 * Run it: python -m bench.attention_ladder --rungs naive */
#include "attention.cuh"

__global__ void scores_kernel(const float *q, const float *k, float *s, int64_t heads, int64_t n,
                              int64_t m, int64_t d, int causal, float scale);
__global__ void softmax_rows_kernel(float *s, float *lse, int64_t m);
__global__ void weighted_values_kernel(const float *p, const float *v, float *y, int64_t heads,
                                       int64_t n, int64_t m, int64_t d);

extern "C" int s2c_cuda_attention_naive(const float *q, const float *k, const float *v, float *y,
                                        float *lse, float *scratch, int64_t heads, int64_t n,
                                        int64_t m, int64_t d, int causal, float scale)
{
    if (heads * n * m * d == 0)
        return S2C_CUDA_OK;
    int status = attention_scores(q, k, scratch, heads, n, m, d, causal, scale);
    if (status != S2C_CUDA_OK)
        return status;
    launch_overlapped(softmax_rows_kernel, heads * n, SCORE_ROW_THREADS, 0, scratch, lse, m);
    LAUNCH_CHECK("softmax_rows_kernel");
    launch_overlapped(weighted_values_kernel, blocks_for(heads * n * d, 256), 256, 0, scratch, v,
                      y, heads, n, m, d);
    LAUNCH_CHECK("weighted_values_kernel");
    return S2C_CUDA_OK;
}

int attention_scores(const float *q, const float *k, float *s, int64_t heads, int64_t n,
                     int64_t m, int64_t d, int causal, float scale)
{
    launch_overlapped(scores_kernel, blocks_for(heads * n * m, 256), 256, 0, q, k, s, heads, n,
                      m, d, causal, scale);
    LAUNCH_CHECK("scores_kernel");
    return S2C_CUDA_OK;
}

/* Thread e: S[h][i][j] for e = (h n + i) m + j (neighbouring threads, neighbouring keys). */
__global__ void scores_kernel(const float *q, const float *k, float *s, int64_t heads, int64_t n,
                              int64_t m, int64_t d, int causal, float scale)
{
    wait_for_previous_kernel();
    int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    int64_t row = index_div(e, m), j = e - row * m, h = index_div(row, n), i = row - h * n;
    if (h >= heads)
        return;
    const float *qi = q + row * d, *kj = k + (h * m + j) * d;
    float dot = 0.0f;
    for (int64_t c = 0; c < d; c++)
        dot += qi[c] * kj[c];
    s[e] = masked_score(dot, scale, i, j, causal);
}

/* Block r: row r of S in place. Three passes over the row (its maximum, the sum of exp(S - max),
 * then P = exp(S - max) / sum), the threads striding along it (reduce.cuh's block reductions);
 * lse[r] = max + log(sum). A NaN in the row makes the maximum NaN and every output NaN; a row of
 * -inf gets P = 0 and lse = -inf. */
__global__ void softmax_rows_kernel(float *s, float *lse, int64_t m)
{
    wait_for_previous_kernel();
    float *row = s + blockIdx.x * m;
    float top = -INFINITY;
    for (int64_t j = threadIdx.x; j < m; j += blockDim.x)
        top = nan_max(top, row[j]);
    top = block_max(top);
    float shift = lse_shift(top), total = 0.0f;
    for (int64_t j = threadIdx.x; j < m; j += blockDim.x)
        total += expf(row[j] - shift);
    total = block_sum(total);
    float inverse = inverse_sum(total);
    for (int64_t j = threadIdx.x; j < m; j += blockDim.x)
        row[j] = expf(row[j] - shift) * inverse;
    if (threadIdx.x == 0)
        lse[blockIdx.x] = top + logf(total);
}

/* Thread e: y[h][i][c] = sum over j of P[h][i][j] v[h][j][c], for e = (h n + i) d + c. */
__global__ void weighted_values_kernel(const float *p, const float *v, float *y, int64_t heads,
                                       int64_t n, int64_t m, int64_t d)
{
    wait_for_previous_kernel();
    int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    int64_t row = index_div(e, d), c = e - row * d, h = index_div(row, n);
    if (h >= heads)
        return;
    const float *pi = p + row * m, *vc = v + h * m * d + c;
    float total = 0.0f;
    for (int64_t j = 0; j < m; j++)
        total += pi[j] * vc[j * d];
    y[e] = total;
}

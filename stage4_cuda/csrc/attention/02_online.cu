/* 02_online.cu -- rung 2: rung 1 with the online softmax fused into its neighbours.
 *
 * What it changes: rung 1 reads S three times and writes P. Here one pass over each row of S
 * takes its maximum and its sum of exp(S - max) together, rescaling the sum whenever the maximum
 * grows (softmax.cuh's online statistics, the softmax ladder's rung 4), and writes only
 * lse = max + log(sum); P is never written: the last kernel computes y = exp(S - lse) v,
 * exponentiating each score as it reads it. S is still in device memory.
 *
 * Cost model (per head: n queries, m keys, head dimension d):
 *   memory an n x m buffer a head, as rung 1.
 *   bytes  S written once and read twice: 12 n m bytes (rung 1: 24 n m), beside q, k, v, y.
 *   FLOPs  4 n m d, and an exp per score in each of the two reads of S.
 *   so     half rung 1's bytes over S; its dot products are rung 1's (a load a multiply-add).
 *
 * Run it: python -m bench.attention_ladder --rungs online */
#include "attention.cuh"

__global__ void row_lse_kernel(const float *s, float *lse, int64_t m);
__global__ void exp_weighted_values_kernel(const float *s, const float *lse, const float *v,
                                           float *y, int64_t heads, int64_t n, int64_t m,
                                           int64_t d);

extern "C" int s2c_cuda_attention_online(const float *q, const float *k, const float *v, float *y,
                                         float *lse, float *scratch, int64_t heads, int64_t n,
                                         int64_t m, int64_t d, int causal, float scale)
{
    if (heads * n * m * d == 0)
        return S2C_CUDA_OK;
    int status = attention_scores(q, k, scratch, heads, n, m, d, causal, scale);
    if (status != S2C_CUDA_OK)
        return status;
    launch_overlapped(row_lse_kernel, heads * n, SCORE_ROW_THREADS, 0, scratch, lse, m);
    LAUNCH_CHECK("row_lse_kernel");
    launch_overlapped(exp_weighted_values_kernel, blocks_for(heads * n * d, 256), 256, 0, scratch,
                      lse, v, y, heads, n, m, d);
    LAUNCH_CHECK("exp_weighted_values_kernel");
    return S2C_CUDA_OK;
}

/* Block r: lse[r] of row r of S in one pass: each thread keeps the online statistics of its
 * elements (the maximum so far and sum(exp(x - maximum)), rescaled when the maximum grows), then
 * the block takes the largest maximum (block_max) and adds the sums rescaled to it (block_sum).
 * The statistics are written out here rather than taken from softmax.cuh: those are week 14's
 * exercise, and given code must build before a learner has written them. */
__global__ void row_lse_kernel(const float *s, float *lse, int64_t m)
{
    wait_for_previous_kernel();
    const float *row = s + blockIdx.x * m;
    float top = -INFINITY, sum = 0.0f;
    for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
        float x = row[j];
        if (x > top) { /* x's own term is exp(x - x): 1, or NaN for x = +inf (inf - inf) */
            sum = sum * __expf(top - x) + (isinf(x) ? NAN : 1.0f);
            top = x;
        } else {
            sum += x == -INFINITY ? 0.0f : __expf(x - top); /* a NaN x: the sum NaN */
        }
    }
    float row_top = block_max(top);
    float share = (top == row_top || top == -INFINITY) ? sum : sum * __expf(top - row_top);
    float total = block_sum(share);
    if (threadIdx.x == 0)
        lse[blockIdx.x] = row_top + logf(total);
}

/* Thread e: y[h][i][c] = sum over j of exp(S[h][i][j] - lse[h][i]) v[h][j][c]. */
__global__ void exp_weighted_values_kernel(const float *s, const float *lse, const float *v,
                                           float *y, int64_t heads, int64_t n, int64_t m,
                                           int64_t d)
{
    wait_for_previous_kernel();
    int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    int64_t row = index_div(e, d), c = e - row * d, h = index_div(row, n);
    if (h >= heads)
        return;
    const float *si = s + row * m, *vc = v + h * m * d + c;
    float top = lse_shift(lse[row]), total = 0.0f;
    for (int64_t j = 0; j < m; j++)
        total += __expf(si[j] - top) * vc[j * d];
    y[e] = total;
}

/* attention.c -- what a transformer block needs besides matmul and softmax (week 22): layer
 * normalization over the last dimension, the GELU activation, and scaled dot-product attention.
 *
 * Layer norm sees x as [rows, d]: each row (a token's d features) has its own mean and variance,
 * summed in double over its d contiguous floats, so the threads split the rows. The backward's
 * dgamma and dbeta are sums down the rows instead, one per feature: the threads split the
 * features into blocks, and each walks every row for its block, adding in the same order however
 * many threads run (the result does not depend on the thread count).
 *
 * Attention sees q [bh, n, d] and k, v [bh, m, d] (bh = batch * heads, each head on its own). The
 * forward never holds a row of n x m scores: each query streams its keys KEY_BLOCK at a time with
 * the online softmax (a running max, a running sum of exponentials, a running output rescaled
 * when the max grows), FlashAttention's way. The threads split (head, block of QUERY_BLOCK
 * queries) pairs, and every sum runs in one order inside one thread, whatever the thread count. */
#include <math.h>
#include <stdlib.h>

#include "internal.h"

#define SQRT_HALF 0.70710678118654752440f      /* erf(x / sqrt(2)) = erf(x * SQRT_HALF) */
#define NORMAL_DENSITY 0.39894228040143267794f /* 1 / sqrt(2 pi): the normal density at 0 */
#define TANH_SCALE 0.79788456080286535588f     /* sqrt(2 / pi) */
#define TANH_CUBIC 0.044715f
#define FEATURE_BLOCK 64 /* features whose gradient sums one thread keeps, in double */
#define QUERY_BLOCK 16   /* attention: queries (or keys, backward) one thread takes at a time */
#define KEY_BLOCK 64     /* attention: keys whose scores a query holds at once */
/* Attention's work is bh * n * m * d multiply-adds per pass, far more than the elements it
 * writes: threads pay from a quarter million on, well below the elementwise ops' threshold. */
#define ATTENTION_PARALLEL_MIN (S2C_PARALLEL_MIN / 16)

int s2c_layernorm(const float *x, const float *gamma, const float *beta, float *y, float *mean,
                  float *invstd, int64_t rows, int64_t d, double eps)
{
    S2C_REQUIRE(rows >= 1 && d >= 1);
    /* BEGIN SOLUTION week 22, task layernorm */
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (rows * d >= S2C_PARALLEL_MIN)
    for (int64_t r = 0; r < rows; r++) {
        const float *row = x + r * d;
        /* two passes (mean, then squared deviations): no E[x^2] - E[x]^2 cancelling */
        double sum = 0.0;
        #pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < d; j++)
            sum += row[j];
        double row_mean = sum / (double)d;
        double squares = 0.0;
        #pragma omp simd reduction(+ : squares)
        for (int64_t j = 0; j < d; j++) {
            double deviation = row[j] - row_mean;
            squares += deviation * deviation;
        }
        double inverse_std = 1.0 / sqrt(squares / (double)d + eps);
        mean[r] = (float)row_mean;
        invstd[r] = (float)inverse_std;
        for (int64_t j = 0; j < d; j++)
            y[r * d + j] = (float)(gamma[j] * ((row[j] - row_mean) * inverse_std) + beta[j]);
    }
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_layernorm_backward(const float *dy, const float *x, const float *gamma, const float *mean,
                           const float *invstd, float *dx, float *dgamma, float *dbeta,
                           int64_t rows, int64_t d)
{
    S2C_REQUIRE(rows >= 1 && d >= 1);
    /* BEGIN SOLUTION week 22, task layernorm_backward */
    /* dx, row by row: with xhat = (x - mean) * invstd and g = dy * gamma (xhat's gradient),
     *   dx = invstd * (g - mean(g) - xhat * mean(g * xhat)),
     * the two row means being the gradient through the row's mean and variance. */
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (rows * d >= S2C_PARALLEL_MIN)
    for (int64_t r = 0; r < rows; r++) {
        double row_mean = mean[r], inverse_std = invstd[r];
        double g_sum = 0.0, g_xhat_sum = 0.0;
        #pragma omp simd reduction(+ : g_sum, g_xhat_sum)
        for (int64_t j = 0; j < d; j++) {
            double g = (double)dy[r * d + j] * gamma[j];
            g_sum += g;
            g_xhat_sum += g * ((x[r * d + j] - row_mean) * inverse_std);
        }
        double mean_g = g_sum / (double)d, mean_g_xhat = g_xhat_sum / (double)d;
        for (int64_t j = 0; j < d; j++) {
            double xhat = (x[r * d + j] - row_mean) * inverse_std;
            double g = (double)dy[r * d + j] * gamma[j];
            dx[r * d + j] = (float)(inverse_std * (g - mean_g - xhat * mean_g_xhat));
        }
    }
    /* dbeta = sum of dy and dgamma = sum of dy * xhat down the rows, a block of features a
     * thread: each row's block is FEATURE_BLOCK neighbouring floats. */
    int64_t blocks = (d + FEATURE_BLOCK - 1) / FEATURE_BLOCK;
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (rows * d >= S2C_PARALLEL_MIN)
    for (int64_t block = 0; block < blocks; block++) {
        int64_t first = block * FEATURE_BLOCK, width = s2c_min(FEATURE_BLOCK, d - first);
        double dy_sum[FEATURE_BLOCK] = {0.0}, dy_xhat_sum[FEATURE_BLOCK] = {0.0};
        for (int64_t r = 0; r < rows; r++) {
            double row_mean = mean[r], inverse_std = invstd[r];
            const float *grads = dy + r * d + first, *values = x + r * d + first;
            #pragma omp simd
            for (int64_t j = 0; j < width; j++) {
                dy_sum[j] += grads[j];
                dy_xhat_sum[j] += grads[j] * ((values[j] - row_mean) * inverse_std);
            }
        }
        for (int64_t j = 0; j < width; j++) {
            dbeta[first + j] = (float)dy_sum[j];
            dgamma[first + j] = (float)dy_xhat_sum[j];
        }
    }
    return S2C_OK;
    /* END SOLUTION */
}

/* (s, 1 - s) for gelu's tanh form: s = (1 + tanh(u)) / 2 with u = sqrt(2 / pi) (v + 0.044715 v^3),
 * computed as sigmoid(2u) = 1 / (1 + exp(-2u)) from exp(-|2u|), which never overflows:
 * 1 + tanh(u) and 1 - tanh(u)^2 cancel to a few digits where tanh(u) is near -1 or 1 (an error of
 * 1e-6 in gelu' at x = -5), the sigmoid's two halves do not. Given to the learner: week 21
 * wrote it in Python (a C exercise region must sit in a function returning a status). */
static inline void sigmoid_halves(float v, float *s, float *one_minus_s)
{
    float z = 2.0f * TANH_SCALE * (v + TANH_CUBIC * v * v * v);
    float e = expf(-fabsf(z)), p = 1.0f / (1.0f + e);
    *s = z >= 0.0f ? p : e * p; /* NaN fails z >= 0: both NaN */
    *one_minus_s = z >= 0.0f ? e * p : p;
}

int s2c_gelu(const float *x, float *y, int64_t size, int tanh_form)
{
    S2C_REQUIRE(size >= 1);
    /* BEGIN SOLUTION week 22, task gelu */
    /* y = x * Phi(x), Phi(x) = (1 + erf(x / sqrt(2))) / 2, or its tanh form */
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (size >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < size; i++) {
        float v = x[i], s, one_minus_s;
        if (tanh_form) {
            sigmoid_halves(v, &s, &one_minus_s);
            y[i] = v * s;
        } else {
            y[i] = 0.5f * v * (1.0f + erff(v * SQRT_HALF));
        }
    }
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_gelu_backward(const float *x, const float *dy, float *dx, int64_t size, int tanh_form)
{
    S2C_REQUIRE(size >= 1);
    /* BEGIN SOLUTION week 22, task gelu_backward */
    /* exact: gelu'(x) = Phi(x) + x * phi(x), phi the normal density; tanh form, with
     * u = sqrt(2 / pi) (x + 0.044715 x^3) and s = (1 + tanh(u)) / 2: s (1 + 2x (1 - s) du/dx) */
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (size >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < size; i++) {
        float v = x[i], derivative;
        if (tanh_form) {
            float s, one_minus_s;
            sigmoid_halves(v, &s, &one_minus_s);
            float du = TANH_SCALE * (1.0f + 3.0f * TANH_CUBIC * v * v);
            derivative = s * (1.0f + 2.0f * v * one_minus_s * du);
        } else {
            derivative = 0.5f * (1.0f + erff(v * SQRT_HALF)) +
                         v * NORMAL_DENSITY * expf(-0.5f * v * v);
        }
        dx[i] = dy[i] * derivative;
    }
    return S2C_OK;
    /* END SOLUTION */
}

/* 1 when x[0 .. size-1] holds no NaN and no Inf: x * 0 is NaN exactly for those, and a sum of
 * zeros stays zero (vectorizes, unlike a test per element). */
static inline int all_finite(const float *x, int64_t size)
{
    float poisoned = 0.0f;
    #pragma omp simd reduction(+ : poisoned)
    for (int64_t i = 0; i < size; i++)
        poisoned += x[i] * 0.0f;
    return poisoned == 0.0f;
}

/* S_ij = scale * q_i . k_j; a key the causal mask hides gets S_ij - inf, as PyTorch adds -inf
 * (-inf, or NaN where S_ij is NaN or +Inf). */
static inline float score(const float *qi, const float *kj, int64_t d, float scale, int masked)
{
    float dot = 0.0f;
    #pragma omp simd reduction(+ : dot)
    for (int64_t c = 0; c < d; c++)
        dot += qi[c] * kj[c];
    return masked ? scale * dot - INFINITY : scale * dot;
}

/* P_ij = exp(S_ij - lse_i); 0 on a row whose every score is -inf (lse -inf), as PyTorch's safe
 * softmax gives, where exp(-inf - -inf) would be NaN. */
static inline float probability(float s, float lse)
{
    return lse == -INFINITY ? 0.0f : expf(s - lse);
}

/* x . y over d floats */
static inline float dot(const float *x, const float *y, int64_t d)
{
    float sum = 0.0f;
    #pragma omp simd reduction(+ : sum)
    for (int64_t c = 0; c < d; c++)
        sum += x[c] * y[c];
    return sum;
}

/* Where a causal mask lets a kernel skip the keys it hides: the keys a query (or the queries a
 * key) must visit. Their terms are exactly 0 only when every input is finite (0 * Inf is NaN, as
 * in PyTorch's P @ v), so with a NaN or Inf anywhere every key is visited. */
static inline int64_t keys_to_visit(int64_t i, int64_t m, int causal, int skip)
{
    return causal && skip ? s2c_min(m, i + 1) : m;
}

int s2c_attention(const float *q, const float *k, const float *v, float *y, float *lse,
                  int64_t bh, int64_t n, int64_t m, int64_t d, int causal, double scale)
{
    S2C_REQUIRE(bh >= 1 && n >= 1 && m >= 1 && d >= 1);
    /* BEGIN SOLUTION week 22, task attention */
    int skip = all_finite(q, bh * n * d) && all_finite(k, bh * m * d) && all_finite(v, bh * m * d);
    int64_t query_blocks = (n + QUERY_BLOCK - 1) / QUERY_BLOCK;
    #pragma omp parallel for schedule(dynamic, 1) num_threads(s2c_get_num_threads()) \
        if (bh * n * m * d >= ATTENTION_PARALLEL_MIN)
    for (int64_t task = 0; task < bh * query_blocks; task++) {
        int64_t head = task / query_blocks, first = (task % query_blocks) * QUERY_BLOCK;
        const float *kh = k + head * m * d, *vh = v + head * m * d;
        for (int64_t i = first; i < s2c_min(n, first + QUERY_BLOCK); i++) {
            const float *qi = q + (head * n + i) * d;
            float *out = y + (head * n + i) * d; /* the running output, rescaled as we go */
            float row_max = -INFINITY, total = 0.0f, s[KEY_BLOCK];
            for (int64_t c = 0; c < d; c++)
                out[c] = 0.0f;
            int64_t keys = keys_to_visit(i, m, causal, skip);
            for (int64_t j0 = 0; j0 < keys; j0 += KEY_BLOCK) {
                int64_t width = s2c_min(KEY_BLOCK, keys - j0);
                float block_max = -INFINITY;
                for (int64_t t = 0; t < width; t++) {
                    s[t] = score(qi, kh + (j0 + t) * d, d, (float)scale, causal && j0 + t > i);
                    block_max = s[t] > block_max ? s[t] : block_max; /* a NaN spreads via exp */
                }
                float new_max = block_max > row_max ? block_max : row_max;
                /* every score -inf so far: no shift (exp(-inf) = 0, where -inf - -inf is NaN) */
                float shift = new_max == -INFINITY ? 0.0f : new_max;
                float rescale = expf(row_max - shift); /* the old terms, to the new max */
                total *= rescale;
                for (int64_t c = 0; c < d; c++)
                    out[c] *= rescale;
                for (int64_t t = 0; t < width; t++) {
                    float p = expf(s[t] - shift);
                    const float *vj = vh + (j0 + t) * d;
                    total += p;
                    #pragma omp simd
                    for (int64_t c = 0; c < d; c++)
                        out[c] += p * vj[c];
                }
                row_max = new_max;
            }
            /* total is 0 on a row of -inf scores: lse -inf, and y = 0 (or NaN from 0 * Inf) */
            lse[head * n + i] = row_max + logf(total);
            if (total > 0.0f)
                for (int64_t c = 0; c < d; c++)
                    out[c] /= total;
        }
    }
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_attention_backward(const float *dy, const float *q, const float *k, const float *v,
                           const float *y, const float *lse, float *dq, float *dk, float *dv,
                           int64_t bh, int64_t n, int64_t m, int64_t d, int causal, double scale)
{
    S2C_REQUIRE(bh >= 1 && n >= 1 && m >= 1 && d >= 1);
    /* BEGIN SOLUTION week 22, task attention_backward */
    /* With P recomputed from lse, dP_ij = dy_i . v_j, Dsum_i = dy_i . y_i and
     * dS_ij = P_ij (dP_ij - Dsum_i): dv_j = sum_i P_ij dy_i and dk_j = scale sum_i dS_ij q_i
     * (sums over the queries: one pass, the threads splitting the keys), then
     * dq_i = scale sum_j dS_ij k_j (over the keys: a second pass, splitting the queries). Each
     * thread owns the rows it writes: no two threads add into one, and no n x m buffer. */
    float *dsum = malloc((size_t)(bh * n) * sizeof(float));
    if (dsum == NULL)
        return S2C_OUT_OF_MEMORY;
    for (int64_t row = 0; row < bh * n; row++)
        dsum[row] = dot(dy + row * d, y + row * d, d);
    int skip = all_finite(dy, bh * n * d) && all_finite(q, bh * n * d) &&
               all_finite(k, bh * m * d) && all_finite(v, bh * m * d) &&
               all_finite(y, bh * n * d) && all_finite(lse, bh * n);
    float s_scale = (float)scale;
    int parallel = bh * n * m * d >= ATTENTION_PARALLEL_MIN;
    int64_t key_blocks = (m + QUERY_BLOCK - 1) / QUERY_BLOCK;
    #pragma omp parallel for schedule(dynamic, 1) num_threads(s2c_get_num_threads()) \
        if (parallel)
    for (int64_t task = 0; task < bh * key_blocks; task++) {
        int64_t head = task / key_blocks, first = (task % key_blocks) * QUERY_BLOCK;
        for (int64_t j = first; j < s2c_min(m, first + QUERY_BLOCK); j++) {
            const float *kj = k + (head * m + j) * d, *vj = v + (head * m + j) * d;
            float *dkj = dk + (head * m + j) * d, *dvj = dv + (head * m + j) * d;
            for (int64_t c = 0; c < d; c++)
                dkj[c] = dvj[c] = 0.0f;
            /* the queries that see key j under a causal mask: i >= j */
            for (int64_t i = causal && skip ? j : 0; i < n; i++) {
                int64_t row = head * n + i;
                const float *qi = q + row * d, *dyi = dy + row * d;
                float p = probability(score(qi, kj, d, s_scale, causal && j > i), lse[row]);
                float ds = s_scale * p * (dot(dyi, vj, d) - dsum[row]);
                #pragma omp simd
                for (int64_t c = 0; c < d; c++) {
                    dvj[c] += p * dyi[c];
                    dkj[c] += ds * qi[c];
                }
            }
        }
    }
    #pragma omp parallel for schedule(dynamic, 1) num_threads(s2c_get_num_threads()) \
        if (parallel)
    for (int64_t row = 0; row < bh * n; row++) {
        int64_t head = row / n, i = row % n;
        const float *qi = q + row * d, *dyi = dy + row * d;
        float *dqi = dq + row * d;
        for (int64_t c = 0; c < d; c++)
            dqi[c] = 0.0f;
        for (int64_t j = 0; j < keys_to_visit(i, m, causal, skip); j++) {
            const float *kj = k + (head * m + j) * d, *vj = v + (head * m + j) * d;
            float p = probability(score(qi, kj, d, s_scale, causal && j > i), lse[row]);
            float ds = s_scale * p * (dot(dyi, vj, d) - dsum[row]);
            #pragma omp simd
            for (int64_t c = 0; c < d; c++)
                dqi[c] += ds * kj[c];
        }
    }
    free(dsum);
    return S2C_OK;
    /* END SOLUTION */
}

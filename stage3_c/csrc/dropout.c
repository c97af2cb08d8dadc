/* dropout.c -- inverted dropout (week 13) on the shared random stream.
 * Element i (flat row-major index) is kept when s2c_uniform(seed, i) >= p, so every tier draws
 * the same mask for the same seed, and the threads can draw their elements in any order. */
#include "internal.h"

int s2c_dropout_forward(const float *x, float *y, float *mask, int64_t size, double p,
                        uint64_t seed)
{
    S2C_REQUIRE(size >= 1 && p >= 0.0 && p < 1.0);
    /* BEGIN SOLUTION week 13, task dropout_forward */
    /* Dividing the kept values by 1 - p keeps the expected activation unchanged, so the
     * network needs no rescaling at evaluation time. */
    float keep_probability = (float)(1.0 - p);
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (size >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < size; i++) {
        mask[i] = s2c_uniform(seed, (uint64_t)i) >= p ? 1.0f : 0.0f;
        y[i] = x[i] * mask[i] / keep_probability;
    }
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_dropout_backward(const float *dy, const float *mask, float *dx, int64_t size, double p)
{
    S2C_REQUIRE(size >= 1 && p >= 0.0 && p < 1.0);
    /* BEGIN SOLUTION week 13, task dropout_backward */
    float keep_probability = (float)(1.0 - p);
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (size >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < size; i++)
        dx[i] = dy[i] * mask[i] / keep_probability;
    return S2C_OK;
    /* END SOLUTION */
}

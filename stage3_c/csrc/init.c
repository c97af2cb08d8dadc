/* init.c -- weight initialization on the shared random stream (week 12).
 * Computed in double and stored as float32, so every tier gives the same weights for a seed.
 * Element i depends only on (seed, i), so the threads can fill any part. */
#include <math.h>

#include "internal.h"

int s2c_xavier_uniform(float *out, int64_t size, int64_t fan_in, int64_t fan_out, uint64_t seed)
{
    S2C_REQUIRE(size >= 1 && fan_in >= 1 && fan_out >= 1);
    /* BEGIN SOLUTION week 12, task xavier_uniform */
    /* uniform on [-bound, bound): variance bound^2 / 3 = 2 / (fan_in + fan_out), which keeps
     * the signal's variance both forward and backward (Glorot and Bengio) */
    double bound = sqrt(6.0 / (double)(fan_in + fan_out));
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (size >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < size; i++)
        out[i] = (float)((2.0 * s2c_uniform(seed, (uint64_t)i) - 1.0) * bound);
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_he_normal(float *out, int64_t size, int64_t fan_in, uint64_t seed)
{
    S2C_REQUIRE(size >= 1 && fan_in >= 1);
    /* BEGIN SOLUTION week 12, task he_normal */
    /* variance 2 / fan_in: ReLU zeroes half of its inputs, and the 2 makes up for it (He et al.) */
    double std = sqrt(2.0 / (double)fan_in);
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (size >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < size; i++)
        out[i] = (float)(s2c_normal(seed, (uint64_t)i) * std);
    return S2C_OK;
    /* END SOLUTION */
}

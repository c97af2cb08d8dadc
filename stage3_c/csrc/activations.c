/* activations.c -- elementwise activations and the row-wise softmax family (week 12).
 * Each backward gets what its formula needs: relu and leaky_relu the input x, sigmoid and tanh
 * the forward's output y (cheaper than recomputing), softmax and log_softmax their output y. */
#include <math.h>

#include "internal.h"

int s2c_relu(const float *x, float *y, int64_t size)
{
    S2C_REQUIRE(size >= 1);
    /* BEGIN SOLUTION week 12, task relu */
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (size >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < size; i++)
        y[i] = x[i] <= 0.0f ? 0.0f : x[i]; /* not `x > 0 ? x : 0`, which turns NaN into 0 */
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_relu_backward(const float *x, const float *dy, float *dx, int64_t size)
{
    S2C_REQUIRE(size >= 1);
    /* BEGIN SOLUTION week 12, task relu_backward */
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (size >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < size; i++)
        dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_leaky_relu(const float *x, float *y, int64_t size, float alpha)
{
    S2C_REQUIRE(size >= 1);
    /* BEGIN SOLUTION week 12, task leaky_relu */
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (size >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < size; i++)
        y[i] = x[i] > 0.0f ? x[i] : alpha * x[i];
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_leaky_relu_backward(const float *x, const float *dy, float *dx, int64_t size, float alpha)
{
    S2C_REQUIRE(size >= 1);
    /* BEGIN SOLUTION week 12, task leaky_relu_backward */
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (size >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < size; i++)
        dx[i] = x[i] > 0.0f ? dy[i] : alpha * dy[i];
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_sigmoid(const float *x, float *y, int64_t size)
{
    S2C_REQUIRE(size >= 1);
    /* BEGIN SOLUTION week 12, task sigmoid */
    /* exp of a large positive argument overflows, so each sign gets the form whose exp
     * argument is <= 0: 1 / (1 + e^-x) for x >= 0, e^x / (1 + e^x) below. */
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (size >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < size; i++) {
        if (x[i] >= 0.0f) {
            y[i] = 1.0f / (1.0f + expf(-x[i]));
        } else {
            float e = expf(x[i]);
            y[i] = e / (1.0f + e);
        }
    }
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_sigmoid_backward(const float *y, const float *dy, float *dx, int64_t size)
{
    S2C_REQUIRE(size >= 1);
    /* BEGIN SOLUTION week 12, task sigmoid_backward */
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (size >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < size; i++)
        dx[i] = dy[i] * y[i] * (1.0f - y[i]);
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_tanh(const float *x, float *y, int64_t size)
{
    S2C_REQUIRE(size >= 1);
    /* BEGIN SOLUTION week 12, task tanh */
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (size >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < size; i++)
        y[i] = tanhf(x[i]);
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_tanh_backward(const float *y, const float *dy, float *dx, int64_t size)
{
    S2C_REQUIRE(size >= 1);
    /* BEGIN SOLUTION week 12, task tanh_backward */
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (size >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < size; i++)
        dx[i] = dy[i] * (1.0f - y[i] * y[i]);
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_softmax(const float *x, float *y, int64_t n, int64_t c)
{
    S2C_REQUIRE(n >= 1 && c >= 1);
    /* BEGIN SOLUTION week 12, task softmax */
    /* Subtracting the row's max leaves the result unchanged and keeps every exp <= 1. */
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (n * c >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < n; i++) {
        const float *row = x + i * c;
        float *out = y + i * c;
        float max = s2c_row_max(row, c);
        double sum = 0.0;
        for (int64_t j = 0; j < c; j++) {
            out[j] = expf(row[j] - max);
            sum += out[j];
        }
        float inverse = (float)(1.0 / sum);
        for (int64_t j = 0; j < c; j++)
            out[j] *= inverse;
    }
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_softmax_backward(const float *y, const float *dy, float *dx, int64_t n, int64_t c)
{
    S2C_REQUIRE(n >= 1 && c >= 1);
    /* BEGIN SOLUTION week 12, task softmax_backward */
    /* dx = y * (dy - sum_j dy_j * y_j): the Jacobian diag(y) - y y^T applied to dy */
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (n * c >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < n; i++) {
        const float *y_row = y + i * c, *dy_row = dy + i * c;
        double dot = 0.0;
        for (int64_t j = 0; j < c; j++)
            dot += (double)dy_row[j] * y_row[j];
        for (int64_t j = 0; j < c; j++)
            dx[i * c + j] = y_row[j] * (dy_row[j] - (float)dot);
    }
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_log_softmax(const float *x, float *y, int64_t n, int64_t c)
{
    S2C_REQUIRE(n >= 1 && c >= 1);
    /* BEGIN SOLUTION week 12, task log_softmax */
    /* log_softmax = x - max - log(sum exp(x - max)): never takes the log of a tiny softmax */
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (n * c >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < n; i++) {
        const float *row = x + i * c;
        float max = s2c_row_max(row, c);
        double sum = 0.0;
        for (int64_t j = 0; j < c; j++)
            sum += expf(row[j] - max);
        float log_sum = (float)log(sum);
        for (int64_t j = 0; j < c; j++)
            y[i * c + j] = row[j] - max - log_sum;
    }
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_log_softmax_backward(const float *y, const float *dy, float *dx, int64_t n, int64_t c)
{
    S2C_REQUIRE(n >= 1 && c >= 1);
    /* BEGIN SOLUTION week 12, task log_softmax_backward */
    /* dx = dy - softmax * sum_j dy_j, and softmax = exp(y) */
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (n * c >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < n; i++) {
        const float *y_row = y + i * c, *dy_row = dy + i * c;
        double sum = 0.0;
        for (int64_t j = 0; j < c; j++)
            sum += dy_row[j];
        for (int64_t j = 0; j < c; j++)
            dx[i * c + j] = dy_row[j] - expf(y_row[j]) * (float)sum;
    }
    return S2C_OK;
    /* END SOLUTION */
}

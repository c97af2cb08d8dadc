/* linalg.c -- the elementwise and reduction ops of linear algebra (week 11).
 * matmul itself is the ladder in matmul.c; the wrapper calls the kernel it is asked for. */
#include <string.h>

#include "internal.h"

/* Transpose tile by tile: a whole tile of `a` and of `out` fits in L1, so both the row-wise reads
 * and the column-wise writes reuse every cache line they load. */
#define TRANSPOSE_TILE 32

int s2c_transpose(const float *a, float *out, int64_t n, int64_t m)
{
    S2C_REQUIRE(n >= 1 && m >= 1);
    /* BEGIN SOLUTION week 11, task transpose */
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (n * m >= S2C_PARALLEL_MIN)
    for (int64_t i0 = 0; i0 < n; i0 += TRANSPOSE_TILE) {
        int64_t i_end = s2c_min(i0 + TRANSPOSE_TILE, n);
        for (int64_t j0 = 0; j0 < m; j0 += TRANSPOSE_TILE) {
            int64_t j_end = s2c_min(j0 + TRANSPOSE_TILE, m);
            for (int64_t i = i0; i < i_end; i++)
                for (int64_t j = j0; j < j_end; j++)
                    out[j * n + i] = a[i * m + j];
        }
    }
    return S2C_OK;
    /* END SOLUTION */
}

/* x [A, B, C, D] -> out [A, C, B, D]: each output row of D floats is one input row, copied whole,
 * so both sides are read and written D floats at a time. */
int s2c_swap_middle_axes(const float *x, float *out, int64_t a, int64_t b, int64_t c, int64_t d)
{
    S2C_REQUIRE(a >= 1 && b >= 1 && c >= 1 && d >= 1);
    /* BEGIN SOLUTION week 22, task swap_middle_axes */
    #pragma omp parallel for collapse(2) num_threads(s2c_get_num_threads()) \
        if (a * b * c * d >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < a; i++)
        for (int64_t k = 0; k < c; k++)
            for (int64_t j = 0; j < b; j++)
                memcpy(out + ((i * c + k) * b + j) * d, x + ((i * b + j) * c + k) * d,
                       (size_t)d * sizeof(float));
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_add(const float *a, const float *b, float *out, int64_t size, int64_t b_size)
{
    S2C_REQUIRE(size >= 1 && b_size >= 1 && size % b_size == 0);
    /* BEGIN SOLUTION week 11, task add */
    /* One loop for both cases: a is `rows` rows of b_size elements (one row when the sizes
     * match), and b is added to each row. */
    int64_t rows = size / b_size;
    #pragma omp parallel for num_threads(s2c_get_num_threads()) \
        collapse(2) if (size >= S2C_PARALLEL_MIN)
    for (int64_t row = 0; row < rows; row++)
        for (int64_t j = 0; j < b_size; j++)
            out[row * b_size + j] = a[row * b_size + j] + b[j];
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_mul(const float *a, const float *b, float *out, int64_t size, int64_t b_size)
{
    S2C_REQUIRE(size >= 1 && b_size >= 1 && size % b_size == 0);
    /* BEGIN SOLUTION week 11, task mul */
    int64_t rows = size / b_size;
    #pragma omp parallel for num_threads(s2c_get_num_threads()) \
        collapse(2) if (size >= S2C_PARALLEL_MIN)
    for (int64_t row = 0; row < rows; row++)
        for (int64_t j = 0; j < b_size; j++)
            out[row * b_size + j] = a[row * b_size + j] * b[j];
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_scale(const float *a, float s, float *out, int64_t size)
{
    S2C_REQUIRE(size >= 1);
    /* BEGIN SOLUTION week 11, task scale */
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (size >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < size; i++)
        out[i] = s * a[i];
    return S2C_OK;
    /* END SOLUTION */
}

/* Columns summed together by one thread: their running sums stay in registers and L1. */
#define SUM_ROWS_BLOCK 256

int s2c_sum_rows(const float *x, float *out, int64_t n, int64_t m)
{
    S2C_REQUIRE(n >= 1 && m >= 1);
    /* BEGIN SOLUTION week 11, task sum_rows */
    /* Walk down the rows (reading each row contiguously) while a block of column sums stays in
     * double: thousands of float32 additions in a row would lose digits. Threads take separate
     * blocks of columns, so no two write the same sum. */
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (n * m >= S2C_PARALLEL_MIN)
    for (int64_t j0 = 0; j0 < m; j0 += SUM_ROWS_BLOCK) {
        int64_t width = s2c_min(SUM_ROWS_BLOCK, m - j0);
        double sums[SUM_ROWS_BLOCK] = {0.0};
        for (int64_t i = 0; i < n; i++) {
            const float *row = x + i * m + j0;
            for (int64_t j = 0; j < width; j++)
                sums[j] += row[j];
        }
        for (int64_t j = 0; j < width; j++)
            out[j0 + j] = (float)sums[j];
    }
    return S2C_OK;
    /* END SOLUTION */
}

/* dense.c -- the fully connected layer y = x @ w.T + b (week 12), on top of s2c_gemm.
 * x [n, n_in], w [n_out, n_in] (PyTorch's layout), b [n_out], y [n, n_out]. */
#include "internal.h"

int s2c_linear_forward(const float *x, const float *w, const float *b, float *y,
                       int64_t n, int64_t n_in, int64_t n_out)
{
    S2C_REQUIRE(n >= 1 && n_in >= 1 && n_out >= 1);
    /* BEGIN SOLUTION week 12, task linear_forward */
    /* Start every row of y at the bias and let the GEMM add x @ w.T on top: w is stored
     * [n_out, n_in], which is w.T stored transposed, so no copy is needed. */
    for (int64_t i = 0; i < n; i++)
        for (int64_t o = 0; o < n_out; o++)
            y[i * n_out + o] = b[o];
    return s2c_gemm(0, 1, n, n_out, n_in, x, w, y, 1);
    /* END SOLUTION */
}

int s2c_linear_backward(const float *x, const float *w, const float *dy,
                        float *dx, float *dw, float *db, int64_t n, int64_t n_in, int64_t n_out)
{
    S2C_REQUIRE(n >= 1 && n_in >= 1 && n_out >= 1);
    /* BEGIN SOLUTION week 12, task linear_backward */
    /* dx [n, n_in] = dy [n, n_out] @ w [n_out, n_in] */
    int status = s2c_gemm(0, 0, n, n_in, n_out, dy, w, dx, 0);
    if (status != S2C_OK)
        return status;
    /* dw [n_out, n_in] = dy.T [n_out, n] @ x [n, n_in] */
    status = s2c_gemm(1, 0, n_out, n_in, n, dy, x, dw, 0);
    if (status != S2C_OK)
        return status;
    /* db [n_out]: the bias was added to every row, so its gradient sums over the rows */
    return s2c_sum_rows(dy, db, n, n_out);
    /* END SOLUTION */
}

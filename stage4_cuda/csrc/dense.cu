/* dense.cu -- the dense layer (week 15): y = x @ w.T + b and its gradients, all on matmul.cu's
 * product, which reads w and dy.T in place (stored transposed) and adds the bias as it writes. */
#include "common.h"

extern "C" int s2c_cuda_linear_forward(const float *x, const float *w, const float *b, float *y,
                                       int64_t n, int64_t in, int64_t out)
{
    // BEGIN SOLUTION week 15, task linear_forward
    return s2c_cuda_gemm(x, w, b, y, n, in, out, 0, 1); /* x [n, in] @ (w [out, in]).T + b */
    // END SOLUTION
}

extern "C" int s2c_cuda_linear_backward(const float *x, const float *w, const float *dy, float *dx,
                                        float *dw, float *db, int64_t n, int64_t in, int64_t out)
{
    // BEGIN SOLUTION week 15, task linear_backward
    int status = s2c_cuda_gemm(dy, w, NULL, dx, n, out, in, 0, 0); /* dy [n, out] @ w [out, in] */
    if (status == S2C_CUDA_OK) /* (dy [n, out]).T @ x [n, in] */
        status = s2c_cuda_gemm(dy, x, NULL, dw, out, n, in, 1, 0);
    if (status == S2C_CUDA_OK) status = s2c_cuda_sum_rows(dy, db, n, out); /* column sums of dy */
    return status;
    // END SOLUTION
}

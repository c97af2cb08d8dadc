/* dense.cu -- the dense layer (week 15): y = x @ w.T + b and its gradients, all on matmul.cu's
 * product, which reads w and dy.T in place (stored transposed) and adds the bias (and, in
 * inference, the ReLU after the layer) as it writes.
 * `scratch` holds s2c_cuda_linear_scratch floats: the products split along k write their partial
 * tiles there (matmul.cu says when and why); the backward's two products use it in turn. */
#include "common.h"

int64_t gemm_scratch(int64_t n, int64_t k, int64_t m); /* matmul.cu */
int gemm_epilogue(const float *a, const float *b, const float *bias, float *c, float *scratch,
                  int64_t n, int64_t k, int64_t m, int transpose_a, int transpose_b, bool relu);

extern "C" int s2c_cuda_linear_scratch(int64_t n, int64_t in, int64_t out, int64_t *floats)
{
    int64_t forward = gemm_scratch(n, in, out), dx = gemm_scratch(n, out, in);
    int64_t dw = gemm_scratch(out, n, in), most = forward > dx ? forward : dx;
    *floats = most > dw ? most : dw;
    return S2C_CUDA_OK;
}

extern "C" int s2c_cuda_linear_forward(const float *x, const float *w, const float *b, float *y,
                                       float *scratch, int64_t n, int64_t in, int64_t out)
{
    // BEGIN SOLUTION week 15, task linear_forward
    /* x [n, in] @ (w [out, in]).T + b */
    return s2c_cuda_gemm(x, w, b, y, scratch, n, in, out, 0, 1);
    // END SOLUTION
}

/* An extra of the library, not an op of the contract: relu(x @ w.T + b), what linear_forward then
 * relu give, the ReLU in gemm's last kernel (inference's dense layer followed by a ReLU:
 * nn/inference.py): one launch fewer. */
extern "C" int s2c_cuda_linear_relu_forward(const float *x, const float *w, const float *b,
                                            float *y, float *scratch, int64_t n, int64_t in,
                                            int64_t out)
{
    // BEGIN SOLUTION week 15, task linear_forward
    return gemm_epilogue(x, w, b, y, scratch, n, in, out, 0, 1, true);
    // END SOLUTION
}

extern "C" int s2c_cuda_linear_backward(const float *x, const float *w, const float *dy, float *dx,
                                        float *dw, float *db, float *scratch, int64_t n,
                                        int64_t in, int64_t out)
{
    // BEGIN SOLUTION week 15, task linear_backward
    int status = s2c_cuda_gemm(dy, w, NULL, dx, scratch, n, out, in, 0, 0); /* dy @ w [out, in] */
    if (status == S2C_CUDA_OK) /* (dy [n, out]).T @ x [n, in] */
        status = s2c_cuda_gemm(dy, x, NULL, dw, scratch, out, n, in, 1, 0);
    if (status == S2C_CUDA_OK) status = s2c_cuda_sum_rows(dy, db, n, out); /* column sums of dy */
    return status;
    // END SOLUTION
}

/* s2c.h -- the C tier's API: status codes and every op of the contract (contract/CONTRACT.md).
 * Every op returns a status; the Python wrappers (linalg.py, conv.py, ... beside csrc/) check
 * arguments before calling in and turn a status into an exception. Arrays are C-contiguous
 * (row-major) float32, labels and argmax int64; sizes are int64_t and always >= 1; outputs are
 * fully overwritten.
 * build.py hands this file to cffi as the declarations, so it holds declarations only. */
#ifndef S2C_H
#define S2C_H

#include <stdint.h>

enum s2c_status {
    S2C_OK = 0,
    S2C_NOT_IMPLEMENTED = 1, /* an exercise stub: the wrapper raises NotImplementedError */
    S2C_BAD_ARGUMENT = 2,    /* a check the wrapper should have made: raises ValueError */
    S2C_OUT_OF_MEMORY = 3    /* a scratch allocation failed: raises MemoryError */
};

#include "matmul.h"

/* The compiler flags the extension was built with (build.py defines it in the module's own
 * source, from its --arch or S2C_ARCH_FLAGS): stage3_c.build_info() reports them. */
const char *s2c_build_flags(void);

/* ---- linear algebra (week 11, linalg.c); matmul is the ladder of matmul.h ---- */
/* out[m, n] = a[n, m] transposed */
int s2c_transpose(const float *a, float *out, int64_t n, int64_t m);
int s2c_swap_middle_axes(const float *x, float *out, int64_t a, int64_t b, int64_t c, int64_t d);
/* out = a + b (a has `size` elements; b has b_size = size elements, or b_size = a's last dimension
 * and is added to every row); s2c_mul the same with the product */
int s2c_add(const float *a, const float *b, float *out, int64_t size, int64_t b_size);
int s2c_mul(const float *a, const float *b, float *out, int64_t size, int64_t b_size);
/* out = s * a */
int s2c_scale(const float *a, float s, float *out, int64_t size);
/* out[m] = the sums of the columns of x[n, m] */
int s2c_sum_rows(const float *x, float *out, int64_t n, int64_t m);

/* ---- dense (week 12, dense.c): x [n, n_in], w [n_out, n_in], b [n_out] ---- */
int s2c_linear_forward(const float *x, const float *w, const float *b, float *y,
                       int64_t n, int64_t n_in, int64_t n_out);
int s2c_linear_backward(const float *x, const float *w, const float *dy,
                        float *dx, float *dw, float *db, int64_t n, int64_t n_in, int64_t n_out);

/* ---- activations (week 12, activations.c): elementwise over `size` elements; softmax and
 * log_softmax row-wise over x [n, c] ---- */
int s2c_relu(const float *x, float *y, int64_t size);
int s2c_relu_backward(const float *x, const float *dy, float *dx, int64_t size);
int s2c_leaky_relu(const float *x, float *y, int64_t size, float alpha);
int s2c_leaky_relu_backward(const float *x, const float *dy, float *dx, int64_t size, float alpha);
int s2c_sigmoid(const float *x, float *y, int64_t size);
int s2c_sigmoid_backward(const float *y, const float *dy, float *dx, int64_t size);
int s2c_tanh(const float *x, float *y, int64_t size);
int s2c_tanh_backward(const float *y, const float *dy, float *dx, int64_t size);
int s2c_softmax(const float *x, float *y, int64_t n, int64_t c);
int s2c_softmax_backward(const float *y, const float *dy, float *dx, int64_t n, int64_t c);
int s2c_log_softmax(const float *x, float *y, int64_t n, int64_t c);
int s2c_log_softmax_backward(const float *y, const float *dy, float *dx, int64_t n, int64_t c);

/* ---- losses (week 12, losses.c): the mean loss goes to *loss; each backward writes the
 * gradient w.r.t. its first argument. labels [n] hold class indices in [0, c). ---- */
int s2c_mse_loss(const float *pred, const float *target, int64_t size, double *loss);
int s2c_mse_loss_backward(const float *pred, const float *target, float *grad, int64_t size);
int s2c_cross_entropy_loss(const float *logits, const int64_t *labels, int64_t n, int64_t c,
                           double *loss);
int s2c_cross_entropy_loss_backward(const float *logits, const int64_t *labels, float *grad,
                                    int64_t n, int64_t c);
int s2c_bce_with_logits_loss(const float *logits, const float *targets, int64_t size,
                             double *loss);
int s2c_bce_with_logits_loss_backward(const float *logits, const float *targets, float *grad,
                                      int64_t size);
int s2c_hinge_loss(const float *scores, const int64_t *labels, int64_t n, int64_t c,
                   double margin, double *loss);
int s2c_hinge_loss_backward(const float *scores, const int64_t *labels, float *grad,
                            int64_t n, int64_t c, double margin);

/* ---- convolution (week 13, conv.c): x [n, c, h, w]; weights [k, c, r, s]; bias [k];
 * y [n, k, oh, ow] with oh = (h + 2 * padding - r) / stride + 1 (likewise ow);
 * cols [n, c * kh * kw, oh * ow] as torch.nn.functional.unfold. The backward passes skip dx
 * when it is NULL (a first layer's input needs no gradient). ---- */
int s2c_im2col(const float *x, float *cols, int64_t n, int64_t c, int64_t h, int64_t w,
               int64_t kh, int64_t kw, int64_t stride, int64_t padding);
int s2c_col2im(const float *cols, float *x, int64_t n, int64_t c, int64_t h, int64_t w,
               int64_t kh, int64_t kw, int64_t stride, int64_t padding);
/* through im2col and s2c_gemm (the fast way) */
int s2c_conv2d_forward(const float *x, const float *weights, const float *bias, float *y,
                       int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t r,
                       int64_t s, int64_t stride, int64_t padding);
int s2c_conv2d_backward(const float *x, const float *weights, const float *dy,
                        float *dx, float *dweights, float *dbias,
                        int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t r,
                        int64_t s, int64_t stride, int64_t padding);
/* through direct loops (the definition, for teaching and for checking) */
int s2c_conv2d_forward_direct(const float *x, const float *weights, const float *bias, float *y,
                              int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t r,
                              int64_t s, int64_t stride, int64_t padding);
int s2c_conv2d_backward_direct(const float *x, const float *weights, const float *dy,
                               float *dx, float *dweights, float *dbias,
                               int64_t n, int64_t c, int64_t h, int64_t w, int64_t k,
                               int64_t r, int64_t s, int64_t stride, int64_t padding);

/* ---- inference (week 13, inference.c): relu(conv2d(x, weights) + bias) max-pooled over
 * pool x pool windows at stride pool, y [n, k, oh / pool, ow / pool] (pool 1: no pooling);
 * nothing is kept for a backward ---- */
int s2c_conv2d_bias_relu_pool(const float *x, const float *weights, const float *bias, float *y,
                              int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t r,
                              int64_t s, int64_t stride, int64_t padding, int64_t pool);

/* ---- pooling (week 13, pooling.c): x [n, c, h, w] -> y [n, c, oh, ow], no padding,
 * oh = (h - k) / stride + 1; argmax holds the flat index ih * w + iw within each [h, w]
 * plane ---- */
int s2c_maxpool2d_forward(const float *x, float *y, int64_t *argmax, int64_t n, int64_t c,
                          int64_t h, int64_t w, int64_t k, int64_t stride);
int s2c_maxpool2d_backward(const float *dy, const int64_t *argmax, float *dx, int64_t n,
                           int64_t c, int64_t h, int64_t w, int64_t k, int64_t stride);
int s2c_avgpool2d_forward(const float *x, float *y, int64_t n, int64_t c, int64_t h, int64_t w,
                          int64_t k, int64_t stride);
int s2c_avgpool2d_backward(const float *dy, float *dx, int64_t n, int64_t c, int64_t h,
                           int64_t w, int64_t k, int64_t stride);

/* ---- batch normalization (week 13, norm.c): x [n, c, spatial] (spatial = h * w, or 1 for
 * [n, c]); gamma, beta, running_mean, running_var, mean, invstd [c] ---- */
int s2c_batchnorm_forward(const float *x, const float *gamma, const float *beta,
                          float *running_mean, float *running_var, float *y, float *mean,
                          float *invstd, int64_t n, int64_t c, int64_t spatial, int training,
                          double momentum, double eps);
int s2c_batchnorm_backward(const float *dy, const float *x, const float *gamma,
                           const float *mean, const float *invstd, float *dx, float *dgamma,
                           float *dbeta, int64_t n, int64_t c, int64_t spatial);

/* ---- dropout (week 13, dropout.c): element i is kept when s2c_uniform(seed, i) >= p ---- */
int s2c_dropout_forward(const float *x, float *y, float *mask, int64_t size, double p,
                        uint64_t seed);
int s2c_dropout_backward(const float *dy, const float *mask, float *dx, int64_t size, double p);

/* ---- optimizers (week 12, optim.c): update p (and the state arrays) in place ---- */
int s2c_sgd_step(float *p, const float *g, int64_t size, double lr, double weight_decay);
int s2c_momentum_step(float *p, const float *g, float *v, int64_t size, double lr,
                      double momentum, int nesterov, double weight_decay);
int s2c_rmsprop_step(float *p, const float *g, float *s, int64_t size, double lr, double alpha,
                     double eps, double weight_decay);
int s2c_adam_step(float *p, const float *g, float *m, float *v, int64_t size, int64_t t,
                  double lr, double beta1, double beta2, double eps, double weight_decay);

/* ---- initialization (week 12, init.c): fans as PyTorch computes them ---- */
int s2c_xavier_uniform(float *out, int64_t size, int64_t fan_in, int64_t fan_out, uint64_t seed);
int s2c_he_normal(float *out, int64_t size, int64_t fan_in, uint64_t seed);

/* ---- the shared random stream (random_stream.c; written in week 4, given here): counter-based
 * splitmix64, so element i of any stream can be drawn in any order, by any thread ---- */
uint64_t s2c_random_bits(uint64_t seed, uint64_t i);
double s2c_uniform(uint64_t seed, uint64_t i); /* in [0, 1), a multiple of 2^-24 */
double s2c_normal(uint64_t seed, uint64_t i);  /* standard normal, Box-Muller */

/* ---- int8 inference (int8.c): x ~ scale * (q - zero_point). quantize_int8 writes
 * q = clamp(round_half_even(x / scale) + zero_point, -128, 127) (NaN -> zero_point). The int8
 * ops write y = scale[j] * sum_k (x - x_zero) * w[j, k] + b[j] (the sum exact in int32):
 * int8_linear x [n, k], w [m, k] -> y [n, m]; int8_conv2d x [n, c, h, w], w [m, c, r, s] ->
 * y [n, m, oh, ow]. `kernel`: 0 the best rung this CPU runs, 1 scalar, 2 AVX2, 3 AVX-VNNI,
 * 4 AVX-512 VNNI (a rung this build or CPU lacks: S2C_BAD_ARGUMENT). ---- */
int s2c_quantize_int8(const float *x, int8_t *q, int64_t size, float scale, int zero_point);
int s2c_int8_linear(const int8_t *x, int x_zero, const int8_t *w, const float *scale,
                    const float *b, float *y, int64_t n, int64_t k, int64_t m, int kernel);
int s2c_int8_conv2d(const int8_t *x, int x_zero, const int8_t *w, const float *scale,
                    const float *b, float *y, int64_t n, int64_t c, int64_t h, int64_t width,
                    int64_t m, int64_t r, int64_t s, int64_t stride, int64_t padding, int kernel);
/* The _to_int8 forms write int8 codes q instead: round_half_even(y) + y_zero clamped to
 * [-128, 127], or to [y_zero, 127] with `relu` (the code of max(y, 0)); scale and b are then
 * divided by the output's scale. maxpool2d_int8 pools int8 codes, x [planes, h, w]. */
int s2c_int8_linear_to_int8(const int8_t *x, int x_zero, const int8_t *w, const float *scale,
                            const float *b, int y_zero, int relu, int8_t *q, int64_t n, int64_t k,
                            int64_t m, int kernel);
int s2c_int8_conv2d_to_int8(const int8_t *x, int x_zero, const int8_t *w, const float *scale,
                            const float *b, int y_zero, int relu, int8_t *q, int64_t n, int64_t c,
                            int64_t h, int64_t width, int64_t m, int64_t r, int64_t s,
                            int64_t stride, int64_t padding, int kernel);
int s2c_maxpool2d_int8(const int8_t *x, int8_t *y, int64_t planes, int64_t h, int64_t w,
                       int64_t k, int64_t stride);
int s2c_int8_kernel_supported(int kernel);
int s2c_int8_best_kernel(void);
int s2c_int8_gemm_rung_status(int kernel);

/* ---- attention (week 22, attention.c): layer norm over x [rows, d] (each row its own
 * statistics: mean, invstd [rows]; gamma, beta, dgamma, dbeta [d]), and GELU elementwise,
 * tanh_form 0 for the exact erf form, 1 for the tanh form ---- */
int s2c_layernorm(const float *x, const float *gamma, const float *beta, float *y, float *mean,
                  float *invstd, int64_t rows, int64_t d, double eps);
int s2c_layernorm_backward(const float *dy, const float *x, const float *gamma, const float *mean,
                           const float *invstd, float *dx, float *dgamma, float *dbeta,
                           int64_t rows, int64_t d);
int s2c_gelu(const float *x, float *y, int64_t size, int tanh_form);
int s2c_gelu_backward(const float *x, const float *dy, float *dx, int64_t size, int tanh_form);
/* scaled dot-product attention over q [bh, n, d], k, v [bh, m, d] (bh = batch * heads): y [bh, n,
 * d] and lse [bh, n]; causal 1 masks key j for query i when j > i; scale multiplies q . k */
int s2c_attention(const float *q, const float *k, const float *v, float *y, float *lse,
                  int64_t bh, int64_t n, int64_t m, int64_t d, int causal, double scale);
int s2c_attention_backward(const float *dy, const float *q, const float *k, const float *v,
                           const float *y, const float *lse, float *dq, float *dk, float *dv,
                           int64_t bh, int64_t n, int64_t m, int64_t d, int causal, double scale);

#endif

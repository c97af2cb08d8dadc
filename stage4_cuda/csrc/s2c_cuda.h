/* s2c_cuda.h -- every function the nvcc variant's library exports, in C.
 *
 * Pointers are device pointers (float32 data, int64 labels); sizes are int64 element counts. Each
 * function launches its kernels on the calling thread's default stream (graph.cu says why) and
 * returns a status (common.h) without waiting for them. The wrapper (stage4_cuda/nvcc_impl/_library.py) reads this file as cffi's
 * declarations, skipping the preprocessor lines and the C++ guard: one list of functions, not two.
 * The ops follow contract/CONTRACT.md; the Python wrappers give their shapes. */
#ifndef S2C_CUDA_H
#define S2C_CUDA_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

const char *s2c_cuda_error_message(void);

/* activations.cu: elementwise forward y = f(x); backward dx = f(x or y, dy) */
int s2c_cuda_relu(const float *x, float *y, int64_t n);
int s2c_cuda_relu_backward(const float *x, const float *dy, float *dx, int64_t n);
int s2c_cuda_leaky_relu(const float *x, float *y, int64_t n, float alpha);
int s2c_cuda_leaky_relu_backward(const float *x, const float *dy, float *dx, int64_t n,
                                 float alpha);
int s2c_cuda_sigmoid(const float *x, float *y, int64_t n);
int s2c_cuda_sigmoid_backward(const float *y, const float *dy, float *dx, int64_t n);
int s2c_cuda_tanh(const float *x, float *y, int64_t n);
int s2c_cuda_tanh_backward(const float *y, const float *dy, float *dx, int64_t n);

/* softmax/: the softmax ladder, row-wise over x [rows, cols], log picks log_softmax; scratch
 * holds 2 * rows floats for three_pass and is NULL for the others (softmax/softmax.cuh) */
int s2c_cuda_softmax_three_pass(const float *x, float *y, float *scratch, int64_t rows,
                                int64_t cols, int log);
int s2c_cuda_softmax_tree(const float *x, float *y, float *scratch, int64_t rows, int64_t cols,
                          int log);
int s2c_cuda_softmax_shuffle(const float *x, float *y, float *scratch, int64_t rows, int64_t cols,
                             int log);
int s2c_cuda_softmax_online(const float *x, float *y, float *scratch, int64_t rows, int64_t cols,
                            int log);
/* rung 5, fused cross-entropy: terms [rows] (the loss per row) unless NULL, and the gradient
 * grad [rows, cols] unless NULL, from logits [rows, cols] and labels [rows] */
int s2c_cuda_softmax_cross_entropy(const float *logits, const int64_t *labels, float *terms,
                                   float *grad, int64_t rows, int64_t cols);
int s2c_cuda_softmax_backward(const float *y, const float *dy, float *dx, int64_t rows,
                              int64_t cols, int log);

/* linalg.cu: b has a's n elements or is one row of b_n elements repeated along a */
int s2c_cuda_add(const float *a, const float *b, float *out, int64_t n, int64_t b_n);
int s2c_cuda_mul(const float *a, const float *b, float *out, int64_t n, int64_t b_n);
int s2c_cuda_scale(const float *a, float *out, int64_t n, float s);
int s2c_cuda_transpose(const float *a, float *out, int64_t rows, int64_t cols);
int s2c_cuda_swap_middle_axes(const float *x, float *out, int64_t a, int64_t b, int64_t c, int64_t d);
int s2c_cuda_sum_rows(const float *x, float *out, int64_t rows, int64_t cols);

/* epilogue.cu (an extra, not a contract op): y [rows, cols] = relu(x + bias), bias [cols] */
int s2c_cuda_bias_relu(const float *x, const float *bias, float *y, int64_t rows, int64_t cols);

/* matmul.cu: c [n, m] = op(a) @ op(b) (+ bias [m] on every row when bias is not NULL), where
 * op(a) is a [n, k], or a stored [k, n] and transposed when transpose_a; op(b) is b [k, m], or b
 * stored [m, k] when transpose_b; scratch (NULL or enough floats for the product's pieces) lets a
 * product of few tiles split along k */
int s2c_cuda_matmul(const float *a, const float *b, float *c, int64_t n, int64_t k, int64_t m);
int s2c_cuda_gemm(const float *a, const float *b, const float *bias, float *c, float *scratch,
                  int64_t n, int64_t k, int64_t m, int transpose_a, int transpose_b);

/* sgemm/: the SGEMM ladder (week 16), rungs 1-8: c [n, m] = a [n, k] @ b [k, m], any sizes
 * (sgemm/README.md); nvcc_impl's matmul(a, b, kernel=...) runs one of them */
int s2c_sgemm_naive(const float *a, const float *b, float *c, int64_t n, int64_t k, int64_t m);
int s2c_sgemm_coalesced(const float *a, const float *b, float *c, int64_t n, int64_t k, int64_t m);
int s2c_sgemm_shared_tiles(const float *a, const float *b, float *c, int64_t n, int64_t k,
                           int64_t m);
int s2c_sgemm_register_1d(const float *a, const float *b, float *c, int64_t n, int64_t k,
                          int64_t m);
int s2c_sgemm_register_2d(const float *a, const float *b, float *c, int64_t n, int64_t k,
                          int64_t m);
int s2c_sgemm_vectorized(const float *a, const float *b, float *c, int64_t n, int64_t k, int64_t m);
int s2c_sgemm_warp_tiles(const float *a, const float *b, float *c, int64_t n, int64_t k, int64_t m);
int s2c_sgemm_cp_async(const float *a, const float *b, float *c, int64_t n, int64_t k, int64_t m);

/* dense.cu: x [n, in], w [out, in], b [out]; scratch: s2c_cuda_linear_scratch floats */
int s2c_cuda_linear_scratch(int64_t n, int64_t in, int64_t out, int64_t *floats);
int s2c_cuda_linear_forward(const float *x, const float *w, const float *b, float *y,
                            float *scratch, int64_t n, int64_t in, int64_t out);
int s2c_cuda_linear_backward(const float *x, const float *w, const float *dy, float *dx,
                             float *dw, float *db, float *scratch, int64_t n, int64_t in,
                             int64_t out);
/* An extra, not an op of the contract: relu(x @ w.T + b), the ReLU in the product's last kernel */
int s2c_cuda_linear_relu_forward(const float *x, const float *w, const float *b, float *y,
                                 float *scratch, int64_t n, int64_t in, int64_t out);

/* losses.cu: a forward writes the mean into loss[0] (one float on the device), using scratch:
 * cross-entropy `terms` (one float per row), the others `partials` (S2C_CUDA_MEAN_BLOCKS
 * doubles: the partial sums of a two-level mean); labels are int64 and already checked in range;
 * cross_entropy_loss also writes its gradient into grad unless it is NULL */
enum { S2C_CUDA_MEAN_BLOCKS = 1024 };
int s2c_cuda_mse_loss(const float *pred, const float *target, double *partials, float *loss,
                      int64_t n);
int s2c_cuda_mse_loss_backward(const float *pred, const float *target, float *grad, int64_t n);
int s2c_cuda_bce_with_logits_loss(const float *logits, const float *targets, double *partials,
                                  float *loss, int64_t n);
int s2c_cuda_bce_with_logits_loss_backward(const float *logits, const float *targets, float *grad,
                                           int64_t n);
int s2c_cuda_cross_entropy_loss(const float *logits, const int64_t *labels, float *terms,
                                float *loss, float *grad, int64_t rows, int64_t cols);
int s2c_cuda_cross_entropy_loss_backward(const float *logits, const int64_t *labels, float *grad,
                                         int64_t rows, int64_t cols);
int s2c_cuda_hinge_loss(const float *scores, const int64_t *labels, float margin,
                        double *partials, float *loss, int64_t rows, int64_t cols);
int s2c_cuda_hinge_loss_backward(const float *scores, const int64_t *labels, float margin,
                                 float *grad, int64_t rows, int64_t cols);

/* optim.cu: in place on p and the state, n parameters; the Adam corrections are 1 - beta^t */
int s2c_cuda_sgd_step(float *p, const float *g, int64_t n, float lr, float weight_decay);
int s2c_cuda_momentum_step(float *p, const float *g, float *v, int64_t n, float lr, float momentum,
                           int nesterov, float weight_decay);
int s2c_cuda_rmsprop_step(float *p, const float *g, float *s, int64_t n, float lr, float alpha,
                          float eps, float weight_decay);
int s2c_cuda_adam_step(float *p, const float *g, float *m, float *v, int64_t n, float lr,
                       float beta1, float beta2, float eps, float weight_decay, float correction1,
                       float correction2);
/* momentum_step on `count` tensors at once (host arrays of their pointers, sizes and weight
 * decays): what recorded steps launch for an optimizer's momentum steps */
int s2c_cuda_momentum_step_list(float **p, const float **g, float **v, const int64_t *n,
                                const float *weight_decay, int64_t count, float lr,
                                float momentum, int nesterov);

/* init.cu: w [n] from the shared random stream (random.cuh), scaled by bound or std */
int s2c_cuda_xavier_uniform(float *w, int64_t n, uint64_t seed, double bound);
int s2c_cuda_he_normal(float *w, int64_t n, uint64_t seed, double std);

/* dropout.cu: element i kept when uniform(seed, i) >= p, kept elements scaled by 1 / (1 - p) */
int s2c_cuda_dropout_forward(const float *x, float *y, float *mask, int64_t n, double p,
                             uint64_t seed);
int s2c_cuda_dropout_backward(const float *dy, const float *mask, float *dx, int64_t n, double p);

/* pooling.cu: over planes = N*C planes of [height, width] -> [out_height, out_width]; argmax holds
 * the flat index h * width + w of each window's maximum within its plane */
struct s2c_pool_geometry {
    int64_t planes, height, width, out_height, out_width, k, stride;
};
int s2c_cuda_maxpool2d_forward(const float *x, float *y, int64_t *argmax,
                               const struct s2c_pool_geometry *g);
int s2c_cuda_maxpool2d_backward(const float *dy, const int64_t *argmax, float *dx,
                                const struct s2c_pool_geometry *g);
/* Fused with the ReLU after the pooling (an extra, not an op of the contract): y = relu(max);
 * the backward routes dy only where relu_y (that y) > 0, and takes k == stride only */
int s2c_cuda_maxpool2d_relu_forward(const float *x, float *y, int64_t *argmax,
                                    const struct s2c_pool_geometry *g);
int s2c_cuda_maxpool2d_relu_backward(const float *dy, const int64_t *argmax, const float *relu_y,
                                     float *dx, const struct s2c_pool_geometry *g);
int s2c_cuda_avgpool2d_forward(const float *x, float *y, const struct s2c_pool_geometry *g);
int s2c_cuda_avgpool2d_backward(const float *dy, float *dx, const struct s2c_pool_geometry *g);

/* conv/ (im2col.cu and the conv2d ladder, conv/conv.cuh): x [n, channels, height, width],
 * w [filters, channels, kh, kw], b [filters], y [n, filters, out_height, out_width]. im2col's cols
 * is [n, channels*kh*kw, oh*ow] (the contract's layout) or, batch_last, [channels*kh*kw, n*oh*ow]
 * (the layout rung 2 multiplies in one product). Each forward rung (1 direct, 2 im2col,
 * 3 implicit_gemm, 4 winograd and 6 winograd_4x4: 3x3 stride 1 only, 5 fft, 7 shallow:
 * C*kh*kw <= S2C_CUDA_SHALLOW_DEPTH only) and the backward (rung 0) take the caller's scratch of
 * s2c_cuda_conv2d_scratch(g, rung, &floats) floats (NULL when 0); the backward's dx may be NULL
 * (not needed). s2c_cuda_load_cufft loads cuFFT for rung 5 from `path`
 * (or, NULL, by its usual names): S2C_CUDA_ERROR, saying so, when it is not there. */
struct s2c_conv_geometry {
    int64_t n, channels, height, width, filters, kh, kw, stride, padding, out_height, out_width;
};
int s2c_cuda_im2col(const float *x, float *cols, const struct s2c_conv_geometry *g,
                    int batch_last);
int s2c_cuda_col2im(const float *cols, float *x, const struct s2c_conv_geometry *g,
                    int batch_last);
int s2c_cuda_conv2d_scratch(const struct s2c_conv_geometry *g, int rung, int64_t *floats);
/* The ladder's choices, made in conv/dispatch.cu alone: *rung = the rung that computes g when
 * rung `asked` (1..7, or 0 for "best") is asked for; the blocks (2 or 4) of the backward's
 * Winograd for dx and dw, or 0 and 0 when it takes none. Winograd from
 * S2C_CUDA_WINOGRAD_MIN_CHANNELS channels (and, for the backward, filters) up; rung 7 for windows
 * of S2C_CUDA_SHALLOW_DEPTH weights (C*kh*kw) or fewer. */
enum { S2C_CUDA_WINOGRAD_MIN_CHANNELS = 16, S2C_CUDA_SHALLOW_DEPTH = 32 };
int s2c_cuda_conv2d_rung(const struct s2c_conv_geometry *g, int asked, int *rung);
int s2c_cuda_conv2d_backward_blocks(const struct s2c_conv_geometry *g, int *dx_block,
                                    int *dw_block);
int s2c_cuda_conv2d_direct(const float *x, const float *w, const float *b, float *y,
                           float *scratch, const struct s2c_conv_geometry *g);
int s2c_cuda_conv2d_im2col(const float *x, const float *w, const float *b, float *y,
                           float *scratch, const struct s2c_conv_geometry *g);
int s2c_cuda_conv2d_implicit_gemm(const float *x, const float *w, const float *b, float *y,
                                  float *scratch, const struct s2c_conv_geometry *g);
int s2c_cuda_conv2d_winograd(const float *x, const float *w, const float *b, float *y,
                             float *scratch, const struct s2c_conv_geometry *g);
int s2c_cuda_conv2d_fft(const float *x, const float *w, const float *b, float *y, float *scratch,
                        const struct s2c_conv_geometry *g);
int s2c_cuda_conv2d_winograd_4x4(const float *x, const float *w, const float *b, float *y,
                                 float *scratch, const struct s2c_conv_geometry *g);
int s2c_cuda_conv2d_shallow(const float *x, const float *w, const float *b, float *y,
                            float *scratch, const struct s2c_conv_geometry *g);
int s2c_cuda_load_cufft(const char *path);
int s2c_cuda_conv2d_backward(const float *x, const float *w, const float *dy, float *dx, float *dw,
                             float *db, float *scratch, const struct s2c_conv_geometry *g);

/* inference/conv_bias_relu_pool.cu: relu(conv2d(x, w) + b) max-pooled over pool x pool windows
 * at stride pool, y [n, filters, out_height / pool, out_width / pool] (pool 1: no pooling), in one
 * kernel that keeps nothing for a backward (two when a small batch's product is split along its
 * depth); g as the conv ladder's. `scratch` holds s2c_cuda_conv2d_bias_relu_pool_scratch(g, pool,
 * &floats) floats (NULL when 0, or to split nothing). */
int s2c_cuda_conv2d_bias_relu_pool_scratch(const struct s2c_conv_geometry *g, int64_t pool,
                                           int64_t *floats);
int s2c_cuda_conv2d_bias_relu_pool(const float *x, const float *w, const float *b, float *y,
                                   float *scratch, const struct s2c_conv_geometry *g,
                                   int64_t pool);

/* norm.cu: x seen as [n, channels, length] (length = H*W, or 1 for [N, C]); per channel mean and
 * invstd (saved for the backward) and, in training, the running statistics updated in place.
 * `partials` is scratch for 2 * S2C_CUDA_BATCHNORM_BLOCKS * channels doubles (the per-block sums
 * of the two-level reductions); the forward reads it only in training (else it may be NULL). */
enum { S2C_CUDA_BATCHNORM_BLOCKS = 64 };
int s2c_cuda_batchnorm_forward(const float *x, const float *gamma, const float *beta,
                               float *running_mean, float *running_var, float *y, float *mean,
                               float *invstd, double *partials, int64_t n, int64_t channels,
                               int64_t length, int training, float momentum, float eps);
int s2c_cuda_batchnorm_backward(const float *dy, const float *x, const float *gamma,
                                const float *mean, const float *invstd, float *dx, float *dgamma,
                                float *dbeta, double *partials, int64_t n, int64_t channels,
                                int64_t length);

/* device_data.cu: the device-data hooks (not ops of the contract; indices already checked) */
int s2c_cuda_take(const float *x, const int64_t *indices, float *y, int64_t count,
                  int64_t row_size);
int s2c_cuda_take_int64(const int64_t *x, const int64_t *indices, int64_t *y, int64_t count,
                        int64_t row_size);
int s2c_cuda_shift_images(const float *x, const int64_t *rows, const int64_t *cols,
                          const float *fill, float *y, int64_t images, int64_t channels,
                          int64_t height, int64_t width, int64_t max_shift);
int s2c_cuda_correct_count(const float *logits, const int64_t *labels, float *count, int64_t rows,
                           int64_t cols);

/* augment.cu: uint8 images [count, channels, height, width] shifted by (rows[n] - max_shift,
 * cols[n] - max_shift), mirrored where flips[n], normalized through levels [channels, 256] into
 * y (float32, same shape); on `stream` (NULL: the default stream) */
int s2c_cuda_augment_images(const uint8_t *images, const int64_t *rows, const int64_t *cols,
                            const uint8_t *flips, const float *levels, float *y, int64_t count,
                            int64_t channels, int64_t height, int64_t width, int64_t max_shift,
                            void *stream);

/* checks.cu: min and max of an int64 index array, into host memory (the wrappers' range check) */
int s2c_cuda_index_range(const int64_t *x, int64_t n, int64_t *extremes);

/* graph.cu: capture this thread's launches into a CUDA graph, run it, and a device-to-device copy
 * in stream order */
int s2c_cuda_capture_begin(void);
int s2c_cuda_capture_end(void **graph_exec);
int s2c_cuda_graph_launch(void *graph_exec);
int s2c_cuda_graph_destroy(void *graph_exec);
int s2c_cuda_copy(void *destination, const void *source, int64_t bytes);

/* streams.cu: pinned host memory, non-blocking streams, events, and copies from the host; a NULL
 * stream stands for the default streams the kernels run on */
int s2c_cuda_host_alloc(void **pointer, int64_t bytes);
int s2c_cuda_host_free(void *pointer);
int s2c_cuda_stream_create(void **stream);
int s2c_cuda_stream_destroy(void *stream);
int s2c_cuda_stream_synchronize(void *stream);
int s2c_cuda_event_create(void **event, int timing);
int s2c_cuda_event_destroy(void *event);
int s2c_cuda_event_record(void *event, void *stream);
int s2c_cuda_stream_wait_event(void *stream, void *event);
int s2c_cuda_event_synchronize(void *event);
int s2c_cuda_event_elapsed(void *start, void *end, float *milliseconds);
int s2c_cuda_copy_to_device(void *destination, const void *source, int64_t bytes, void *stream);

/* int8/: int8 inference (week 19). quantize_int8: q = clamp(round_half_even(x / scale) + zero,
 * -128, 127). int8_linear x [n, k], w [m, k] -> y [n, m] and int8_conv2d x [n, c, h, width],
 * w [m, c, r, s] -> y [n, m, oh, ow]: y = scale[j] * sum (x - x_zero) * w[j] + b[j], the sum in
 * int32. Scratch: rows [rows, k32] int8 (rows = n, or n * oh * ow; k32 = k, or c * r * s, rounded
 * up to 32), packed [m, k32] int8, weight_sums [m] int32. rung: 0 the best this GPU has, 1 dp4a,
 * 2 tensor-core MMA (int8_best_rung says which 0 picks). */
int s2c_cuda_quantize_int8(const float *x, int8_t *q, int64_t n, float scale, int zero_point);
int s2c_cuda_int8_linear(const int8_t *x, int x_zero, const int8_t *w, const float *scale,
                         const float *b, float *y, int8_t *rows, int8_t *packed,
                         int32_t *weight_sums, int64_t n, int64_t k, int64_t m, int rung);
int s2c_cuda_int8_conv2d(const int8_t *x, int x_zero, const int8_t *w, const float *scale,
                         const float *b, float *y, int8_t *rows, int8_t *packed,
                         int32_t *weight_sums, int64_t n, int64_t c, int64_t h, int64_t width,
                         int64_t m, int64_t r, int64_t s, int64_t stride, int64_t padding,
                         int rung);
/* The _to_int8 forms write int8 codes q instead of y: round_half_even(y) + y_zero, clamped to
 * [-128, 127] (to [y_zero, 127] with relu). maxpool2d_int8: int8 x [planes, h, w] -> y
 * [planes, oh, ow], the largest code of each k x k window. */
int s2c_cuda_int8_linear_to_int8(const int8_t *x, int x_zero, const int8_t *w, const float *scale,
                                 const float *b, int y_zero, int relu, int8_t *q, int8_t *rows,
                                 int8_t *packed, int32_t *weight_sums, int64_t n, int64_t k,
                                 int64_t m, int rung);
int s2c_cuda_int8_conv2d_to_int8(const int8_t *x, int x_zero, const int8_t *w, const float *scale,
                                 const float *b, int y_zero, int relu, int8_t *q, int8_t *rows,
                                 int8_t *packed, int32_t *weight_sums, int64_t n, int64_t c,
                                 int64_t h, int64_t width, int64_t m, int64_t r, int64_t s,
                                 int64_t stride, int64_t padding, int rung);
int s2c_cuda_maxpool2d_int8(const int8_t *x, int8_t *y, int64_t planes, int64_t h, int64_t w,
                            int64_t k, int64_t stride);
int s2c_cuda_int8_best_rung(int *rung);
/* A model's weights packed once when it is loaded: packed [m, k32], weight_sums [m]. Then
 * int8_linear (q NULL) or int8_linear_to_int8 (y NULL) on them, and inference's fused
 * int8_conv2d_pool_to_int8 (inference/int8_conv_pool.cu): int8_conv2d_to_int8 then maxpool2d_int8
 * over pool x pool windows at stride pool (pool 1: none), from codes x or from float32 pixels
 * quantized by x_scale and x_zero (the other NULL), writing q [n, m, oh / pool, ow / pool]. */
int s2c_cuda_int8_pack_weights(const int8_t *w, int8_t *packed, int32_t *weight_sums, int64_t m,
                               int64_t k);
int s2c_cuda_int8_linear_packed(const int8_t *x, int x_zero, const int8_t *packed,
                                const int32_t *weight_sums, const float *scale, const float *b,
                                float *y, int8_t *q, int y_zero, int relu, int8_t *rows, int64_t n,
                                int64_t k, int64_t m, int rung);
int s2c_cuda_int8_conv2d_pool_to_int8(const int8_t *x, const float *pixels, float x_scale,
                                      int x_zero, const int8_t *packed, const int32_t *weight_sums,
                                      const float *scale, const float *b, int y_zero, int relu,
                                      int8_t *q, int64_t n, int64_t c, int64_t h, int64_t width,
                                      int64_t m, int64_t r, int64_t s, int64_t stride,
                                      int64_t padding, int64_t pool);

/* attention.cu: layer norm over x [rows, d], each row its own statistics (mean, invstd [rows];
 * gamma, beta, dgamma, dbeta [d]; the backward's partial sums in `partial`); GELU elementwise, tanh_form 0 for the exact erf form, 1 for
 * the tanh form */
int s2c_cuda_layernorm(const float *x, const float *gamma, const float *beta, float *y,
                       float *mean, float *invstd, int64_t rows, int64_t d, float eps);
int s2c_cuda_layernorm_backward(const float *dy, const float *x, const float *gamma,
                                const float *mean, const float *invstd, float *dx, float *dgamma,
                                float *dbeta, float *partial, int64_t rows, int64_t d);
/* the chunks of rows whose partial sums layernorm_backward adds: `partial` holds
 * 2 chunks d floats */
int64_t s2c_cuda_layernorm_chunks(int64_t rows);
int s2c_cuda_gelu(const float *x, float *y, int64_t n, int tanh_form);
int s2c_cuda_gelu_backward(const float *x, const float *dy, float *dx, int64_t n, int tanh_form);

/* attention/: the attention ladder over heads slices of q [heads, n, d], k and v [heads, m, d]
 * (d <= 128): y [heads, n, d] and lse [heads, n]; scratch as attention/attention.cuh says. The
 * backward writes dq, dk and dv from dy, the inputs, y and lse; its scratch holds heads + heads n
 * floats. */
int s2c_cuda_attention_naive(const float *q, const float *k, const float *v, float *y, float *lse,
                             float *scratch, int64_t heads, int64_t n, int64_t m, int64_t d,
                             int causal, float scale);
int s2c_cuda_attention_online(const float *q, const float *k, const float *v, float *y,
                              float *lse, float *scratch, int64_t heads, int64_t n, int64_t m,
                              int64_t d, int causal, float scale);
int s2c_cuda_attention_flash1(const float *q, const float *k, const float *v, float *y,
                              float *lse, float *scratch, int64_t heads, int64_t n, int64_t m,
                              int64_t d, int causal, float scale);
int s2c_cuda_attention_flash2(const float *q, const float *k, const float *v, float *y,
                              float *lse, float *scratch, int64_t heads, int64_t n, int64_t m,
                              int64_t d, int causal, float scale);
int s2c_cuda_attention_flash2_regs(const float *q, const float *k, const float *v, float *y,
                                   float *lse, float *scratch, int64_t heads, int64_t n,
                                   int64_t m, int64_t d, int causal, float scale);
int s2c_cuda_attention_backward(const float *dy, const float *q, const float *k, const float *v,
                                const float *y, const float *lse, float *dq, float *dk,
                                float *dv, float *scratch, int64_t heads, int64_t n, int64_t m,
                                int64_t d, int causal, float scale);

#ifdef __cplusplus
}
#endif

#endif

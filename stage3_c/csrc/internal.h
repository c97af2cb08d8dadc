/* internal.h -- small helpers the C files share; not part of the API (that is s2c.h). */
#ifndef S2C_INTERNAL_H
#define S2C_INTERNAL_H

#include <stdint.h>

#include "s2c.h"

/* Below this many elements, a loop runs on one thread. Elementwise ops are bound by memory
 * bandwidth, which one core nearly saturates, so threads gain little there; and each parallel
 * region waits for its slowest thread, which on a busy machine (more runnable processes than
 * cores) may not be scheduled for milliseconds. Parallel loops run on s2c_get_num_threads()
 * threads, which stage3_c.set_num_threads sets. */
#define S2C_PARALLEL_MIN 4194304

/* An argument check the Python wrapper has already made, repeated so that a direct call with
 * nonsense sizes returns S2C_BAD_ARGUMENT instead of walking through memory. */
#define S2C_REQUIRE(condition)              \
    do {                                    \
        if (!(condition))                   \
            return S2C_BAD_ARGUMENT;        \
    } while (0)

static inline int64_t s2c_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t s2c_max(int64_t a, int64_t b) { return a > b ? a : b; }

/* The largest of row[0 .. c-1] (c >= 1): softmax and the losses subtract it before exp. */
static inline float s2c_row_max(const float *row, int64_t c)
{
    float max = row[0];
    for (int64_t j = 1; j < c; j++)
        max = row[j] > max ? row[j] : max;
    return max;
}

/* Output size of a convolution or pooling window sliding along one axis. */
static inline int64_t s2c_out_size(int64_t in_size, int64_t window, int64_t stride,
                                   int64_t padding)
{
    return (in_size + 2 * padding - window) / stride + 1;
}

/* image [c, h, w] -> padded [c, h + 2 * padding, w + 2 * padding] with zeros around it, and
 * `slack` zeros after it (inference's fused convolutions read the padded copy without tests). */
static inline void s2c_pad_image(const float *image, float *padded, int64_t c, int64_t h,
                                 int64_t w, int64_t padding, int64_t slack)
{
    int64_t padded_h = h + 2 * padding, padded_w = w + 2 * padding;
    for (int64_t f = 0; f < c * padded_h * padded_w + slack; f++)
        padded[f] = 0.0f;
    for (int64_t channel = 0; channel < c; channel++)
        for (int64_t y = 0; y < h; y++)
            for (int64_t x = 0; x < w; x++)
                padded[(channel * padded_h + y + padding) * padded_w + x + padding] =
                    image[(channel * h + y) * w + x];
}

/* winograd.c: the fused convolution of 3 x 3 filters at stride 1 with 2 x 2 max-pooling; its
 * transformed filters are S2C_WINOGRAD_POSITIONS * k * c floats. */
#define S2C_WINOGRAD_POSITIONS 16
void s2c_winograd_filters(const float *weights, int64_t k, int64_t c, float *transformed);
int64_t s2c_winograd_scratch(int64_t images, int64_t c, int64_t h, int64_t w, int64_t k,
                             int64_t padding);
int s2c_winograd_bias_relu_pool(const float *x, const float *transformed, const float *bias,
                                float *y, int64_t images, int64_t c, int64_t h, int64_t w,
                                int64_t k, int64_t padding, float *scratch);

#endif

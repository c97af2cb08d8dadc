/* augment.cu -- a batch of raw images made into the network's input on the device: each uint8
 * image [C, H, W] shifted by its own offset (padded with black, cropped), mirrored left-right when
 * chosen, then normalized to float32, bit for bit as nn/augment.py and the Normalizer of
 * nn/data.py make it on the host. What lets nn/host_pipeline.py send one byte a pixel and leave
 * the host nothing to do pixel by pixel.
 *
 * The draws (rows, cols, flips) come from the host (nn/augment.py's batch_draws), the same
 * generator as the host's augmentation. Output pixel (i, j) of image n: shifted first, then
 * flipped, so it is column j' = (flips[n] ? W - 1 - j : j) of the shifted image, which is pixel
 * (i + rows[n] - max_shift, j' + cols[n] - max_shift) of the image, or black (0) where that lies
 * outside it.
 *
 * Normalization by table: levels[c * 256 + v] is the float32 the host's Normalizer gives pixel
 * value v in channel c (256 values a channel, computed there once). A pixel's output is a lookup,
 * so it is the host's value to the bit whatever the compiler makes of (v / 255 - mean) / std
 * (by default nvcc contracts a product and a difference into one fused multiply-add, rounded
 * once, where NumPy rounds twice). */
#include "common.h"

#define AUGMENT_THREADS 256
#define PIXEL_LEVELS 256 /* the values of a uint8 pixel */

__global__ void augment_images_kernel(const uint8_t *images, const int64_t *rows,
                                      const int64_t *cols, const uint8_t *flips,
                                      const float *levels, float *y, int64_t count,
                                      int64_t channels, int64_t height, int64_t width,
                                      int64_t max_shift)
{
    wait_for_previous_kernel();
    int64_t index = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= count * channels * height * width) return;
    int64_t j = index % width, i = index / width % height;
    int64_t c = index / (width * height) % channels, image = index / (width * height * channels);
    int64_t shifted_j = flips[image] ? width - 1 - j : j;
    int64_t source_i = i + rows[image] - max_shift, source_j = shifted_j + cols[image] - max_shift;
    bool inside = 0 <= source_i && source_i < height && 0 <= source_j && source_j < width;
    int64_t source = ((image * channels + c) * height + source_i) * width + source_j;
    int value = inside ? images[source] : 0;
    y[index] = levels[c * PIXEL_LEVELS + value];
}

/* On `stream` (NULL: this thread's default stream), so that a pipeline makes the next batch on
 * its copy stream, right after that batch's copy, while the step before it computes. */
extern "C" int s2c_cuda_augment_images(const uint8_t *images, const int64_t *rows,
                                       const int64_t *cols, const uint8_t *flips,
                                       const float *levels, float *y, int64_t count,
                                       int64_t channels, int64_t height, int64_t width,
                                       int64_t max_shift, void *stream)
{
    int64_t n = count * channels * height * width;
    if (n == 0) return S2C_CUDA_OK;
    cudaStream_t on = stream == NULL ? cudaStreamPerThread : (cudaStream_t)stream;
    launch_overlapped_on(on, augment_images_kernel, blocks_for(n, AUGMENT_THREADS), AUGMENT_THREADS,
                         0, images, rows, cols, flips, levels, y, count, channels, height, width,
                         max_shift);
    LAUNCH_CHECK("augment_images_kernel");
    return S2C_CUDA_OK;
}

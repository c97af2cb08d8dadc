/* device_data.cu -- the device-data hooks (contract/CONTRACT.md, "Training with the data on the
 * device"): what nn's trainer needs to keep the training set on the GPU and gather each batch
 * there. Given code, not exercises: none of these is an op of the contract.
 *
 *   take           y[b, :] = x[indices[b], :]: one read and one write of each chosen row (4 or 8
 *                  bytes an element: float32 images or int64 labels).
 *   shift_images   each image moved by its own offset, as nn/augment.shifted does on the
 *                  host (pad by max_shift, crop at (rows[n], cols[n])); pixels shifted in take
 *                  fill[c].
 *   correct_count  how many rows of logits predict their label, written as one float on the
 *                  device: one block, each thread counting rows, a shared-memory tree adding the
 *                  counts in a fixed order (no atomics: the same count every run). */
#include "common.h"
#include "reduce.cuh"

#define DATA_THREADS 256

template <typename T>
__global__ void take_kernel(const T *x, const int64_t *indices, T *y, int64_t count,
                            int64_t row_size)
{
    wait_for_previous_kernel();
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count * row_size)
        y[i] = x[indices[i / row_size] * row_size + i % row_size];
}

template <typename T>
static int take(const T *x, const int64_t *indices, T *y, int64_t count, int64_t row_size,
                const char *name)
{
    if (count * row_size == 0) return S2C_CUDA_OK;
    launch_overlapped(take_kernel<T>, blocks_for(count * row_size, DATA_THREADS), DATA_THREADS, 0,
                      x, indices, y, count, row_size);
    LAUNCH_CHECK(name);
    return S2C_CUDA_OK;
}

extern "C" int s2c_cuda_take(const float *x, const int64_t *indices, float *y, int64_t count,
                             int64_t row_size)
{
    return take(x, indices, y, count, row_size, "take_kernel<float>");
}

extern "C" int s2c_cuda_take_int64(const int64_t *x, const int64_t *indices, int64_t *y,
                                   int64_t count, int64_t row_size)
{
    return take(x, indices, y, count, row_size, "take_kernel<int64_t>");
}

__global__ void shift_kernel(const float *x, const int64_t *rows, const int64_t *cols,
                             const float *fill, float *y, int64_t images, int64_t channels,
                             int64_t height, int64_t width, int64_t max_shift)
{
    wait_for_previous_kernel();
    int64_t index = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= images * channels * height * width) return;
    int64_t j = index % width, i = index / width % height;
    int64_t c = index / (width * height) % channels, image = index / (width * height * channels);
    int64_t source_i = i + rows[image] - max_shift, source_j = j + cols[image] - max_shift;
    bool inside = 0 <= source_i && source_i < height && 0 <= source_j && source_j < width;
    y[index] = inside ? x[((image * channels + c) * height + source_i) * width + source_j]
                      : fill[c];
}

extern "C" int s2c_cuda_shift_images(const float *x, const int64_t *rows, const int64_t *cols,
                                     const float *fill, float *y, int64_t images,
                                     int64_t channels, int64_t height, int64_t width,
                                     int64_t max_shift)
{
    int64_t n = images * channels * height * width;
    if (n == 0) return S2C_CUDA_OK;
    launch_overlapped(shift_kernel, blocks_for(n, DATA_THREADS), DATA_THREADS, 0, x, rows, cols,
                      fill, y, images, channels, height, width, max_shift);
    LAUNCH_CHECK("shift_kernel");
    return S2C_CUDA_OK;
}

__global__ void correct_count_kernel(const float *logits, const int64_t *labels, float *count,
                                     int64_t rows, int64_t cols)
{
    wait_for_previous_kernel();
    float mine = 0.0f; /* exact: a float holds every count below 2^24 */
    for (int64_t row = threadIdx.x; row < rows; row += blockDim.x) {
        const float *scores = logits + row * cols;
        int64_t predicted = 0;
        if (cols == 1) { /* one logit: class 1 when it is positive */
            predicted = scores[0] > 0.0f ? 1 : 0;
        } else { /* the first highest logit, as NumPy's argmax */
            for (int64_t j = 1; j < cols; j++)
                if (scores[j] > scores[predicted]) predicted = j;
        }
        mine += predicted == labels[row] ? 1.0f : 0.0f;
    }
    float total = block_sum(mine);
    if (threadIdx.x == 0) count[0] = total;
}

extern "C" int s2c_cuda_correct_count(const float *logits, const int64_t *labels, float *count,
                                      int64_t rows, int64_t cols)
{
    launch_overlapped(correct_count_kernel, 1, DATA_THREADS, 0, logits, labels, count, rows, cols);
    LAUNCH_CHECK("correct_count_kernel");
    return S2C_CUDA_OK;
}

/* epilogue.cu -- a fused epilogue (an extra of the library, not an op of the contract): y = relu(x
 * + bias) over x [rows, cols], the bias a row added to every row, in one pass.
 *
 * A dense layer's output goes through a bias and an activation. Done as two ops, add then relu,
 * the [rows, cols] matrix crosses the memory bus four times (add reads x and writes the sum, relu
 * reads the sum and writes y): 16 bytes an element. Fused, it crosses twice (x read, y written: 8
 * bytes, the bias row staying in cache): half the traffic, so about half the time for a kernel
 * bound by memory (bench/memory_bound.py times both). It is elementwise.cuh's zip with the bias as zip's broadcast row:
 * one element function. y may be x (each element is read before it is written). */
#include "elementwise.cuh"

__device__ float bias_relu_element(float x, float bias, float);

extern "C" int s2c_cuda_bias_relu(const float *x, const float *bias, float *y, int64_t rows,
                                  int64_t cols)
{
    return launch_zip<bias_relu_element>("bias_relu_element (zip)", x, bias, y, rows * cols, cols,
                                         0.0f);
}

/* relu(x + bias); a NaN stays (NaN <= 0 is false), as in relu. */
__device__ float bias_relu_element(float x, float bias, float) {
    float sum = x + bias;
    return sum <= 0.0f ? 0.0f : sum;
}

/* activations.cu -- the elementwise activations and their gradients (week 14), each a
 * per-element device function that elementwise.cuh's map (forward: y = f(x, alpha)) or zip
 * (backward: dx = f(x or y, dy, alpha)) applies; alpha is leaky_relu's, unused by the others.
 * NaN goes through as in PyTorch: each function is written so that a NaN input gives a NaN output
 * (fmaxf(x, 0) would not). */
#include "elementwise.cuh"

__device__ float relu_element(float x, float);
__device__ float relu_backward_element(float x, float dy, float);
__device__ float leaky_relu_element(float x, float alpha);
__device__ float leaky_relu_backward_element(float x, float dy, float alpha);
__device__ float sigmoid_element(float x, float);
__device__ float sigmoid_backward_element(float y, float dy, float);
__device__ float tanh_element(float x, float);
__device__ float tanh_backward_element(float y, float dy, float);

extern "C" int s2c_cuda_relu(const float *x, float *y, int64_t n) {
    // BEGIN SOLUTION week 14, task relu
    return launch_map<relu_element>("relu_element (map)", x, y, n, 0.0f);
}

__device__ float relu_element(float x, float) {
    return x <= 0.0f ? 0.0f : x; /* NaN <= 0 is false: NaN stays */
    // END SOLUTION
}

extern "C" int s2c_cuda_relu_backward(const float *x, const float *dy, float *dx, int64_t n) {
    // BEGIN SOLUTION week 14, task relu_backward
    return launch_zip<relu_backward_element>("relu_backward_element (zip)", x, dy, dx, n, n, 0.0f);
}

__device__ float relu_backward_element(float x, float dy, float) {
    return x > 0.0f ? dy : 0.0f;
    // END SOLUTION
}

extern "C" int s2c_cuda_leaky_relu(const float *x, float *y, int64_t n, float alpha) {
    // BEGIN SOLUTION week 14, task leaky_relu
    return launch_map<leaky_relu_element>("leaky_relu_element (map)", x, y, n, alpha);
}

__device__ float leaky_relu_element(float x, float alpha) {
    return x > 0.0f ? x : alpha * x;
    // END SOLUTION
}

extern "C" int s2c_cuda_leaky_relu_backward(const float *x, const float *dy, float *dx, int64_t n,
                                            float alpha)
{
    // BEGIN SOLUTION week 14, task leaky_relu_backward
    return launch_zip<leaky_relu_backward_element>("leaky_relu_backward_element (zip)", x, dy, dx,
                                                   n, n, alpha);
}

__device__ float leaky_relu_backward_element(float x, float dy, float alpha) {
    return x > 0.0f ? dy : alpha * dy;
    // END SOLUTION
}

extern "C" int s2c_cuda_sigmoid(const float *x, float *y, int64_t n) {
    // BEGIN SOLUTION week 14, task sigmoid
    return launch_map<sigmoid_element>("sigmoid_element (map)", x, y, n, 0.0f);
}

/* exp(-|x|) is in (0, 1]: it never overflows. sigmoid(|x|) = 1 / (1 + e) and
 * sigmoid(-|x|) = e / (1 + e), both accurate. */
__device__ float sigmoid_element(float x, float) {
    float e = expf(-fabsf(x));
    float positive = 1.0f / (1.0f + e);
    return x >= 0.0f ? positive : e * positive;
    // END SOLUTION
}

extern "C" int s2c_cuda_sigmoid_backward(const float *y, const float *dy, float *dx, int64_t n) {
    // BEGIN SOLUTION week 14, task sigmoid_backward
    return launch_zip<sigmoid_backward_element>("sigmoid_backward_element (zip)", y, dy, dx, n, n,
                                                0.0f);
}

__device__ float sigmoid_backward_element(float y, float dy, float) {
    return dy * y * (1.0f - y);
    // END SOLUTION
}

extern "C" int s2c_cuda_tanh(const float *x, float *y, int64_t n) {
    // BEGIN SOLUTION week 14, task tanh
    return launch_map<tanh_element>("tanh_element (map)", x, y, n, 0.0f);
}

__device__ float tanh_element(float x, float) {
    return tanhf(x);
    // END SOLUTION
}

extern "C" int s2c_cuda_tanh_backward(const float *y, const float *dy, float *dx, int64_t n) {
    // BEGIN SOLUTION week 14, task tanh_backward
    return launch_zip<tanh_backward_element>("tanh_backward_element (zip)", y, dy, dx, n, n, 0.0f);
}

__device__ float tanh_backward_element(float y, float dy, float) {
    return dy * (1.0f - y * y);
    // END SOLUTION
}

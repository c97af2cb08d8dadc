/* 05_fft.cu -- rung 5: convolution as products of spectra, through cuFFT.
 *
 * What it changes: a cross-correlation is a product in the frequency domain. With every plane
 * zero-padded to F_h x F_w (at least the padded image, H + 2 padding by W + 2 padding, so that
 * the circular correlation's wrap-around only meets zeros),
 *
 *     X[n, c] = FFT2(x[n, c] padded)           N*C real-to-complex transforms
 *     W[k, c] = FFT2(w[k, c] padded)           K*C of them
 *     Y[n, k] = sum over c of X[n, c] conj(W[k, c])    at each of F_h (F_w/2 + 1) frequencies
 *     y[n, k, oh, ow] = IFFT2(Y[n, k])[oh*stride, ow*stride] / (F_h F_w) + b[k]
 *
 * The cost no longer grows with R*S: O(F^2 log F) per plane for the transforms and C complex
 * multiply-adds per frequency and output plane. That wins for large kernels on large images;
 * the curriculum's 3x3 and 5x5 kernels on 28x28 images are far from that regime (the table
 * shows by how much), and this rung is here to show it.
 *
 * Accuracy: a transform of F values rounds O(log F) times in terms of the plane's whole
 * magnitude, so small outputs get errors relative to the largest (tests/test_stage4_nvcc.py
 * derives the tolerance).
 *
 * cuFFT is loaded at run time (cufft_runtime.h says why): without it this rung returns
 * S2C_CUDA_ERROR saying so and the rest of the library works. Plans are made once per shape
 * and kept (making one takes far longer than a transform).
 *
 * Cost model: 2 x the sizes of x, y and w in transforms (5 F log2 F FLOPs per complex point),
 * 8 N K C F_h (F_w/2 + 1) FLOPs in the spectral products; device memory: each padded plane and
 * spectrum written and read once.
 *
 * Run it: python -m bench.conv_ladder --kernel fft */
#include <dlfcn.h>

#include <map>
#include <mutex>
#include <tuple>

#include "conv.cuh"
#include "cufft_runtime.h"

#define FFT_THREADS 256

static cufft_functions cufft;
static bool cufft_loaded = false;
static std::mutex cufft_mutex;

/* The loaded library's functions; S2C_CUDA_ERROR, naming the rung, when it cannot be loaded. */
extern "C" int s2c_cuda_load_cufft(const char *path)
{
    std::lock_guard<std::mutex> lock(cufft_mutex);
    if (cufft_loaded) return S2C_CUDA_OK;
    const char *names[] = {"libcufft.so", "libcufft.so.12", "libcufft.so.11", "libcufft.so.10"};
    void *library = NULL;
    if (path != NULL)
        library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    for (const char *name : names)
        if (library == NULL && path == NULL) library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (library != NULL) {
        cufft.plan_many = (decltype(cufft.plan_many))dlsym(library, "cufftPlanMany");
        cufft.exec_r2c = (decltype(cufft.exec_r2c))dlsym(library, "cufftExecR2C");
        cufft.exec_c2r = (decltype(cufft.exec_c2r))dlsym(library, "cufftExecC2R");
        cufft.set_stream = (decltype(cufft.set_stream))dlsym(library, "cufftSetStream");
        cufft_loaded = cufft.plan_many && cufft.exec_r2c && cufft.exec_c2r && cufft.set_stream;
    }
    if (!cufft_loaded) {
        static char what[400];
        snprintf(what, sizeof what, "conv2d rung 5 (fft) needs cuFFT, which did not load (%s)",
                 path != NULL ? path : "libcufft.so by its usual names");
        s2c_cuda_set_error(what, cudaErrorSharedObjectInitFailed);
        return S2C_CUDA_ERROR;
    }
    return S2C_CUDA_OK;
}

/* The smallest size >= n whose prime factors are 2, 3, 5 and 7 (cuFFT's fast sizes). */
static int64_t fft_size(int64_t n)
{
    for (int64_t size = n > 1 ? n : 1;; size++) {
        int64_t rest = size;
        for (int64_t p : {2, 3, 5, 7})
            while (rest % p == 0) rest /= p;
        if (rest == 1) return size;
    }
}

struct fft_layout {
    int64_t fh, fw, plane, spectrum; /* sizes; floats of a padded plane, of a spectrum */
    int64_t x_planes, w_planes, y_planes;
    int64_t padded_x, spectra_x, padded_w, spectra_w, spectra_y, full_y, total; /* offsets */
};

static int64_t aligned(int64_t floats) { return ceil_div(floats, 4) * 4; } /* 16 bytes */

static fft_layout fft_plan_layout(const conv_geometry &g)
{
    fft_layout l;
    l.fh = fft_size(g.height + 2 * g.padding);
    l.fw = fft_size(g.width + 2 * g.padding);
    l.plane = l.fh * l.fw;
    l.spectrum = 2 * l.fh * (l.fw / 2 + 1);
    l.x_planes = g.n * g.channels;
    l.w_planes = g.filters * g.channels;
    l.y_planes = g.n * g.filters;
    l.padded_x = 0;
    l.spectra_x = l.padded_x + aligned(l.x_planes * l.plane);
    l.padded_w = l.spectra_x + aligned(l.x_planes * l.spectrum);
    l.spectra_w = l.padded_w + aligned(l.w_planes * l.plane);
    l.spectra_y = l.spectra_w + aligned(l.w_planes * l.spectrum);
    l.full_y = l.spectra_y + aligned(l.y_planes * l.spectrum);
    l.total = l.full_y + aligned(l.y_planes * l.plane);
    return l;
}

int64_t conv_fft_scratch(const conv_geometry &g) { return fft_plan_layout(g).total; }

__global__ void pad_planes_kernel(const float *in, float *out, int64_t planes, int64_t height,
                                  int64_t width, int64_t padding, int64_t fh, int64_t fw);
__global__ void spectral_products_kernel(const cufftComplex *x, const cufftComplex *w,
                                         cufftComplex *y, int64_t n, int64_t filters,
                                         int64_t channels, int64_t frequencies);
__global__ void crop_kernel(const float *full, const float *b, float *y, conv_geometry g,
                            int64_t fh, int64_t fw);
static int transform(int64_t fh, int64_t fw, cufftType type, int64_t batch, void *in, void *out);

extern "C" int s2c_cuda_conv2d_fft(const float *x, const float *w, const float *b, float *y,
                                   float *scratch, const conv_geometry *g)
{
    // BEGIN SOLUTION week 16, task conv_fft
    int status = s2c_cuda_load_cufft(NULL); /* a no-op once loaded (the wrapper loads it) */
    if (status != S2C_CUDA_OK) return status;
    fft_layout l = fft_plan_layout(*g);
    int64_t frequencies = l.spectrum / 2;
    float *padded_x = scratch + l.padded_x, *padded_w = scratch + l.padded_w;
    launch_overlapped(pad_planes_kernel, blocks_for(l.x_planes * l.plane, FFT_THREADS), FFT_THREADS,
                      0, x, padded_x, l.x_planes, g->height, g->width, g->padding, l.fh, l.fw);
    LAUNCH_CHECK("pad_planes_kernel (x)");
    launch_overlapped(pad_planes_kernel, blocks_for(l.w_planes * l.plane, FFT_THREADS), FFT_THREADS,
                      0, w, padded_w, l.w_planes, g->kh, g->kw, 0, l.fh, l.fw);
    LAUNCH_CHECK("pad_planes_kernel (w)");
    status = transform(l.fh, l.fw, CUFFT_R2C, l.x_planes, padded_x, scratch + l.spectra_x);
    if (status == S2C_CUDA_OK)
        status = transform(l.fh, l.fw, CUFFT_R2C, l.w_planes, padded_w, scratch + l.spectra_w);
    if (status != S2C_CUDA_OK) return status;
    int64_t products = l.y_planes * frequencies;
    launch_overlapped(spectral_products_kernel, blocks_for(products, FFT_THREADS), FFT_THREADS, 0,
                      (const cufftComplex *)(scratch + l.spectra_x),
                      (const cufftComplex *)(scratch + l.spectra_w),
                      (cufftComplex *)(scratch + l.spectra_y),
                      g->n, g->filters, g->channels, frequencies);
    LAUNCH_CHECK("spectral_products_kernel");
    status = transform(l.fh, l.fw, CUFFT_C2R, l.y_planes, scratch + l.spectra_y,
                       scratch + l.full_y);
    if (status != S2C_CUDA_OK) return status;
    int64_t outputs = g->n * g->filters * conv_positions(*g);
    launch_overlapped(crop_kernel, blocks_for(outputs, FFT_THREADS), FFT_THREADS, 0,
                      scratch + l.full_y, b, y, *g, l.fh, l.fw);
    LAUNCH_CHECK("crop_kernel");
    return S2C_CUDA_OK;
}

/* Run a batch of 2-D transforms of fh x fw on the calling thread's default stream (where the
 * library's kernels run: nvcc_build.py's --default-stream per-thread), with a plan made once per
 * (size, direction, batch) and kept. */
static int transform(int64_t fh, int64_t fw, cufftType type, int64_t batch, void *in, void *out)
{
    static std::map<std::tuple<int64_t, int64_t, int, int64_t>, cufftHandle> plans;
    static std::mutex plans_mutex;
    cufftHandle plan;
    {
        std::lock_guard<std::mutex> lock(plans_mutex);
        auto key = std::make_tuple(fh, fw, (int)type, batch);
        auto found = plans.find(key);
        if (found == plans.end()) {
            int sizes[2] = {(int)fh, (int)fw};
            cufftResult made = cufft.plan_many(&plan, 2, sizes, NULL, 1, 0, NULL, 1, 0, type,
                                               (int)batch);
            if (made == 0) made = cufft.set_stream(plan, cudaStreamPerThread);
            if (made != 0) {
                s2c_cuda_set_error("cufftPlanMany (conv2d rung 5)", cudaErrorUnknown);
                return S2C_CUDA_ERROR;
            }
            found = plans.emplace(key, plan).first;
        }
        plan = found->second;
    }
    cufftResult done = type == CUFFT_R2C
                           ? cufft.exec_r2c(plan, (float *)in, (cufftComplex *)out)
                           : cufft.exec_c2r(plan, (cufftComplex *)in, (float *)out);
    if (done != 0) {
        s2c_cuda_set_error(type == CUFFT_R2C ? "cufftExecR2C (conv2d rung 5)"
                                             : "cufftExecC2R (conv2d rung 5)",
                           cudaErrorUnknown);
        return S2C_CUDA_ERROR;
    }
    return S2C_CUDA_OK;
}

/* out[plane] (fh x fw) = in[plane] (height x width) at (padding, padding), zeros around it. */
__global__ void pad_planes_kernel(const float *in, float *out, int64_t planes, int64_t height,
                                  int64_t width, int64_t padding, int64_t fh, int64_t fw)
{
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= planes * fh * fw) return;
    int64_t plane = i / (fh * fw), h = i / fw % fh - padding, w = i % fw - padding;
    bool inside = 0 <= h && h < height && 0 <= w && w < width;
    out[i] = inside ? in[(plane * height + h) * width + w] : 0.0f;
}

/* Y[n, k, f] = sum over c of X[n, c, f] conj(W[k, c, f]): the correlation's spectrum. */
__global__ void spectral_products_kernel(const cufftComplex *x, const cufftComplex *w,
                                         cufftComplex *y, int64_t n, int64_t filters,
                                         int64_t channels, int64_t frequencies)
{
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= n * filters * frequencies) return;
    int64_t image = i / (filters * frequencies), k = i / frequencies % filters;
    int64_t f = i % frequencies;
    float re = 0.0f, im = 0.0f;
    for (int64_t c = 0; c < channels; c++) {
        cufftComplex a = x[(image * channels + c) * frequencies + f];
        cufftComplex v = w[(k * channels + c) * frequencies + f];
        re += a.x * v.x + a.y * v.y; /* a * conj(v) */
        im += a.y * v.x - a.x * v.y;
    }
    y[i] = make_float2(re, im);
}

/* y[n, k, oh, ow] = full[n, k, oh*stride, ow*stride] / (fh fw) + b[k] (cuFFT's inverse does not
 * divide by the size). */
__global__ void crop_kernel(const float *full, const float *b, float *y, conv_geometry g,
                            int64_t fh, int64_t fw)
{
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    int64_t positions = conv_positions(g);
    if (i >= g.n * g.filters * positions) return;
    int64_t plane = i / positions, p = i % positions, k = plane % g.filters;
    int64_t h = p / g.out_width * g.stride, w = p % g.out_width * g.stride;
    y[i] = full[(plane * fh + h) * fw + w] / (float)(fh * fw) + b[k];
    // END SOLUTION
}

/* bench.cu -- runs the SGEMM ladder against cuBLAS: validates every rung, times it, writes JSON.
 *
 * A program of its own (a `main`), built apart from the shared library with the rungs,
 * ../errors.cu and -lcublas; cuBLAS appears only here, as the reference. The usual way to build
 * and run it, and to turn its JSON into the table of README.md, is
 *
 *     python3 bench/sgemm_ladder.py [--rung N] [--sizes 1024,4096,1000x999x1001]
 *
 * which calls nvcc and then this program:
 *
 *     bench [--rung N] [--sizes LIST] [--repeats R] [--batch-ms T] [--json PATH]
 *
 * For each size (n = k = m = S, or n x k x m), with inputs uniform in [-1, 1):
 *   - cuBLAS SGEMM (CUBLAS_DEFAULT_MATH: float32 FMAs, no TF32) computes the reference C and
 *     |A| @ |B|, the scale of each element's rounding error;
 *   - each rung runs into a C filled with NaN, and passes when every element satisfies
 *     |c - c_ref| <= 16 sqrt(k) 2^-24 (|A| @ |B|): Higham and Mary's probabilistic bound
 *     lambda sqrt(k) u for each of the two sums (lambda = 8, u = 2^-24), which holds whatever the
 *     order of summation (on random inputs the ratio stays near u, far below it), while at these
 *     sizes (k up to about 16384) a missing or repeated term exceeds it; NaN, an unwritten
 *     element, fails;
 *   - timing: CUDA events around a batch of back-to-back launches, long enough (>= --batch-ms)
 *     that launch overheads hide behind the kernels; one warm-up call first; the median of
 *     --repeats batches. Inputs that fit stay in L2 between launches, for cuBLAS alike, which
 *     is timed before and after the rungs (the faster of the two is kept).
 * The exit status is 1 when a rung fails its check (the JSON is written all the same). */
#include "sgemm.h"

/* CI compiles every .cu file alone, where cuBLAS may not be installed: without it this file
 * compiles to a program that says so (bench/sgemm_ladder.py never builds it that way: it finds cuBLAS
 * first). */
#if __has_include(<cublas_v2.h>)
#include <cublas_v2.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

typedef int (*Launcher)(const float *, const float *, float *, int64_t, int64_t, int64_t);
typedef const void *(*KernelOf)(int64_t, int64_t, int64_t);

struct Rung {
    int number;
    const char *name;
    Launcher launch;
    KernelOf kernel;
};

#define RUNG(number, name) {number, #name, s2c_sgemm_##name, s2c_sgemm_##name##_kernel}
static const Rung RUNGS[] = {RUNG(1, naive),       RUNG(2, coalesced),   RUNG(3, shared_tiles),
                             RUNG(4, register_1d), RUNG(5, register_2d), RUNG(6, vectorized),
                             RUNG(7, warp_tiles),  RUNG(8, cp_async)};
#undef RUNG
#define RUNG_COUNT (int)(sizeof RUNGS / sizeof RUNGS[0])

static void fail(const char *what, const char *detail)
{
    fprintf(stderr, "bench: %s: %s\n", what, detail);
    exit(2);
}

#define CHECK_CUDA(call)                                                                        \
    do {                                                                                        \
        cudaError_t error_ = (call);                                                            \
        if (error_ != cudaSuccess)                                                              \
            fail(#call, cudaGetErrorString(error_));                                            \
    } while (0)

#define CHECK_CUBLAS(call)                                                                      \
    do {                                                                                        \
        cublasStatus_t status_ = (call);                                                        \
        if (status_ != CUBLAS_STATUS_SUCCESS)                                                   \
            fail(#call, cublasGetStatusString(status_));                                        \
    } while (0)

/* --- inputs and the check -- */

/* x[i] uniform in [-1, 1), from a hash of (seed, i): the same matrices on every run. */
__global__ void fill_uniform(float *x, int64_t count, uint64_t seed)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x) {
        uint64_t z = seed + (uint64_t)i * 0x9E3779B97F4A7C15ull; /* splitmix64 */
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        x[i] = (float)(z >> 40) * (2.0f / 16777216.0f) - 1.0f; /* 24 random bits */
    }
}

__global__ void absolute(const float *x, float *y, int64_t count)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = fabsf(x[i]);
}

/* *worst = max over i of |c[i] - ref[i]| / scale[i] (+inf for NaN, or any error where the scale
 * is 0), as the bits of a non-negative float, which order like unsigned integers. */
__global__ void worst_error(const float *c, const float *ref, const float *scale, int64_t count,
                            unsigned *worst)
{
    float mine = 0.0f;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x) {
        float difference = fabsf(c[i] - ref[i]);
        float ratio = difference == 0.0f ? 0.0f : difference / scale[i];
        if (!(ratio <= INFINITY)) /* NaN */
            ratio = INFINITY;
        mine = fmaxf(mine, ratio);
    }
    for (int offset = 16; offset > 0; offset /= 2)
        mine = fmaxf(mine, __shfl_down_sync(0xffffffffu, mine, offset));
    if (threadIdx.x % 32 == 0)
        atomicMax(worst, __float_as_uint(mine));
}

static const int GRID = 1024, BLOCK = 256; /* grid-stride loops over the matrices */

/* --- timing -- */

struct Timer {
    cudaEvent_t start, stop;
    Timer() { CHECK_CUDA(cudaEventCreate(&start)); CHECK_CUDA(cudaEventCreate(&stop)); }
    ~Timer() { cudaEventDestroy(start); cudaEventDestroy(stop); }
};

/* The median over `repeats` batches of the milliseconds per call of `call` (which launches one
 * product on the default stream and returns a status), or a negative number when it fails. */
template <class Call> static double median_ms(Call call, int repeats, double batch_ms)
{
    Timer timer;
    if (call() != 0) /* the warm-up */
        return -1.0;
    CHECK_CUDA(cudaDeviceSynchronize());
    float once = 0.0f;
    CHECK_CUDA(cudaEventRecord(timer.start));
    call();
    CHECK_CUDA(cudaEventRecord(timer.stop));
    CHECK_CUDA(cudaEventSynchronize(timer.stop));
    CHECK_CUDA(cudaEventElapsedTime(&once, timer.start, timer.stop));
    int calls = (int)std::min(1000.0, std::max(1.0, std::ceil(batch_ms / std::max(once, 1e-3f))));
    std::vector<double> per_call;
    for (int repeat = 0; repeat < repeats; repeat++) {
        float ms = 0.0f;
        CHECK_CUDA(cudaEventRecord(timer.start));
        for (int i = 0; i < calls; i++)
            call();
        CHECK_CUDA(cudaEventRecord(timer.stop));
        CHECK_CUDA(cudaEventSynchronize(timer.stop));
        CHECK_CUDA(cudaEventElapsedTime(&ms, timer.start, timer.stop));
        per_call.push_back(ms / calls);
    }
    std::sort(per_call.begin(), per_call.end());
    return per_call[per_call.size() / 2];
}

/* --- one size -- */

struct Size {
    int64_t n, k, m;
};

struct Matrices {
    float *a, *b, *c, *ref, *scale, *abs_a, *abs_b;
    unsigned *worst;
};

/* C[n, m] = A[n, k] @ B[k, m], row-major, through column-major cuBLAS: C^T = B^T A^T. */
static int cublas_product(cublasHandle_t handle, const float *a, const float *b, float *c,
                          Size s)
{
    const float one = 1.0f, zero = 0.0f;
    return cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, (int)s.m, (int)s.n, (int)s.k, &one, b,
                       (int)s.m, a, (int)s.k, &zero, c, (int)s.m) != CUBLAS_STATUS_SUCCESS;
}

static std::string json_number(double x)
{
    if (!std::isfinite(x))
        return "null";
    char text[64];
    snprintf(text, sizeof text, "%.6g", x);
    return text;
}

/* One rung's outcome at one size. */
struct Outcome {
    const Rung *rung;
    std::string status; /* "ok", "wrong", "not implemented", or the launch's error */
    double ms;
    float worst; /* the largest |c - c_ref| / (|A| @ |B|) */
    cudaFuncAttributes attributes;
    std::string config;
};

/* Runs the chosen rungs at one size, with cuBLAS timed before and after them (the faster of the
 * two is kept: a clock that drifts during the run cannot flatter the rungs); returns the size's
 * JSON object; *failed is set when a rung fails its check or its launch. */
static std::string run_size(cublasHandle_t handle, Size s, int only_rung, int repeats,
                            double batch_ms, bool *failed)
{
    Matrices x;
    int64_t count_a = s.n * s.k, count_b = s.k * s.m, count_c = s.n * s.m;
    CHECK_CUDA(cudaMalloc(&x.a, count_a * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&x.b, count_b * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&x.abs_a, count_a * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&x.abs_b, count_b * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&x.c, count_c * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&x.ref, count_c * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&x.scale, count_c * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&x.worst, sizeof(unsigned)));
    fill_uniform<<<GRID, BLOCK>>>(x.a, count_a, 1);
    fill_uniform<<<GRID, BLOCK>>>(x.b, count_b, 2);
    absolute<<<GRID, BLOCK>>>(x.a, x.abs_a, count_a);
    absolute<<<GRID, BLOCK>>>(x.b, x.abs_b, count_b);
    CHECK_CUDA(cudaGetLastError());
    if (cublas_product(handle, x.a, x.b, x.ref, s) || cublas_product(handle, x.abs_a, x.abs_b,
                                                                     x.scale, s))
        fail("cublasSgemm", "the reference product failed");
    double gflop = 2.0 * s.n * s.k * s.m / 1e9;
    double bound = 16.0 * std::sqrt((double)std::max<int64_t>(s.k, 1)) * std::ldexp(1.0, -24);
    auto time_cublas = [&] {
        return median_ms([&] { return cublas_product(handle, x.a, x.b, x.c, s); }, repeats,
                         batch_ms);
    };
    double cublas_before = time_cublas();
    std::vector<Outcome> outcomes;
    for (const Rung &rung : RUNGS) {
        if (only_rung && rung.number != only_rung)
            continue;
        Outcome outcome = {&rung, "", 0.0, 0.0f, {}, ""};
        CHECK_CUDA(cudaMemset(x.c, 0xff, count_c * sizeof(float))); /* NaN everywhere */
        CHECK_CUDA(cudaMemset(x.worst, 0, sizeof(unsigned)));
        int status = rung.launch(x.a, x.b, x.c, s.n, s.k, s.m);
        if (status != S2C_CUDA_OK) {
            outcome.status = status == S2C_CUDA_NOT_IMPLEMENTED ? "not implemented"
                             : status == S2C_CUDA_BAD_ARGUMENT  ? "bad argument"
                                                                : s2c_cuda_error_message();
            *failed = *failed || status != S2C_CUDA_NOT_IMPLEMENTED;
            outcomes.push_back(outcome);
            continue;
        }
        CHECK_CUDA(cudaDeviceSynchronize()); /* an error inside the kernel surfaces here */
        worst_error<<<GRID, BLOCK>>>(x.c, x.ref, x.scale, count_c, x.worst);
        unsigned worst_bits = 0;
        CHECK_CUDA(cudaMemcpy(&worst_bits, x.worst, sizeof worst_bits, cudaMemcpyDeviceToHost));
        memcpy(&outcome.worst, &worst_bits, sizeof outcome.worst);
        outcome.status = outcome.worst <= bound ? "ok" : "wrong";
        *failed = *failed || outcome.status != "ok";
        outcome.ms = median_ms([&] { return rung.launch(x.a, x.b, x.c, s.n, s.k, s.m); },
                               repeats, batch_ms);
        if (outcome.ms < 0.0) { /* a launch that worked once and then failed */
            outcome.status = s2c_cuda_error_message();
            *failed = true;
        }
        CHECK_CUDA(cudaFuncGetAttributes(&outcome.attributes, rung.kernel(s.n, s.k, s.m)));
        if (rung.number == 8)
            outcome.config = s2c_sgemm_cp_async_config(s.n, s.k, s.m);
        outcomes.push_back(outcome);
    }
    double cublas_after = time_cublas();
    double cublas_ms = std::min(cublas_before, cublas_after);
    for (void *p : {(void *)x.a, (void *)x.b, (void *)x.c, (void *)x.ref, (void *)x.scale,
                    (void *)x.abs_a, (void *)x.abs_b, (void *)x.worst})
        CHECK_CUDA(cudaFree(p));

    printf("%lld x %lld x %lld: cuBLAS %.4f ms (%.4f before the rungs, %.4f after), "
           "%.0f GFLOP/s; error bound %.2g\n",
           (long long)s.n, (long long)s.k, (long long)s.m, cublas_ms, cublas_before,
           cublas_after, gflop / cublas_ms * 1e3, bound);
    char head[320];
    snprintf(head, sizeof head,
             "{\"n\": %lld, \"k\": %lld, \"m\": %lld, \"gflop\": %s, \"error_bound\": %s, "
             "\"cublas\": {\"ms\": %s, \"gflops\": %s, \"ms_before\": %s, \"ms_after\": %s}, "
             "\"rungs\": [",
             (long long)s.n, (long long)s.k, (long long)s.m, json_number(gflop).c_str(),
             json_number(bound).c_str(), json_number(cublas_ms).c_str(),
             json_number(gflop / cublas_ms * 1e3).c_str(), json_number(cublas_before).c_str(),
             json_number(cublas_after).c_str());
    std::string json = head;
    for (size_t i = 0; i < outcomes.size(); i++) {
        const Outcome &o = outcomes[i];
        json += std::string(i ? ", " : "") + "{\"rung\": " + std::to_string(o.rung->number) +
                ", \"name\": \"" + o.rung->name + "\", \"status\": \"" + o.status + "\"";
        if (o.ms <= 0.0) { /* not launched */
            printf("  %d %-13s %s\n", o.rung->number, o.rung->name, o.status.c_str());
            json += "}";
            continue;
        }
        printf("  %d %-13s %9.4f ms %8.0f GFLOP/s %5.1f%% of cuBLAS  error %.2g %s  "
               "%d registers, %zu bytes spilled %s\n",
               o.rung->number, o.rung->name, o.ms, gflop / o.ms * 1e3, 100.0 * cublas_ms / o.ms,
               o.worst, o.status == "ok" ? "ok" : "FAILED", o.attributes.numRegs,
               o.attributes.localSizeBytes, o.config.c_str());
        json += ", \"ms\": " + json_number(o.ms) + ", \"gflops\": " +
                json_number(gflop / o.ms * 1e3) + ", \"share_of_cublas\": " +
                json_number(cublas_ms / o.ms) + ", \"max_error_ratio\": " +
                json_number(o.worst) + ", \"registers\": " +
                std::to_string(o.attributes.numRegs) + ", \"spill_bytes\": " +
                std::to_string(o.attributes.localSizeBytes) + ", \"config\": \"" + o.config +
                "\"}";
    }
    return json + "]}";
}

/* --- the command line -- */

/* "1024,4096,1000x999x1001": squares, or n x k x m. */
static std::vector<Size> parse_sizes(const char *text)
{
    std::vector<Size> sizes;
    std::string list = text;
    size_t start = 0;
    while (start <= list.size()) {
        size_t end = list.find(',', start);
        std::string item = list.substr(start, end == std::string::npos ? end : end - start);
        long long n = 0, k = 0, m = 0;
        char extra = 0;
        if (sscanf(item.c_str(), "%lldx%lldx%lld%c", &n, &k, &m, &extra) == 3) {
        } else if (sscanf(item.c_str(), "%lld%c", &n, &extra) == 1) {
            k = m = n;
        } else {
            fail("--sizes", "expected sizes such as 1024,4096 or 1000x999x1001");
        }
        if (n < 1 || k < 1 || m < 1 || n > INT32_MAX || k > INT32_MAX || m > INT32_MAX)
            fail("--sizes", "every size must be between 1 and 2^31 - 1 (cuBLAS takes int)");
        sizes.push_back({n, k, m});
        if (end == std::string::npos)
            break;
        start = end + 1;
    }
    return sizes;
}

int main(int argc, char **argv)
{
    int only_rung = 0, repeats = 5;
    double batch_ms = 25.0;
    const char *json_path = NULL, *size_list = "1024,4096";
    for (int i = 1; i < argc; i++) {
        bool has_value = i + 1 < argc;
        if (!strcmp(argv[i], "--rung") && has_value)
            only_rung = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sizes") && has_value)
            size_list = argv[++i];
        else if (!strcmp(argv[i], "--repeats") && has_value)
            repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch-ms") && has_value)
            batch_ms = atof(argv[++i]);
        else if (!strcmp(argv[i], "--json") && has_value)
            json_path = argv[++i];
        else
            fail(argv[i], "usage: bench [--rung 1-8] [--sizes 1024,4096,NxKxM] [--repeats R] "
                          "[--batch-ms T] [--json PATH]");
    }
    if (only_rung < 0 || only_rung > RUNG_COUNT || repeats < 1 || !(batch_ms > 0))
        fail("arguments", "--rung must be 1-8, --repeats and --batch-ms positive");
    std::vector<Size> sizes = parse_sizes(size_list);

    const char *override_tf32 = getenv("NVIDIA_TF32_OVERRIDE");
    if (override_tf32 && strcmp(override_tf32, "0") != 0)
        fail("NVIDIA_TF32_OVERRIDE", "is set: unset it, cuBLAS must not use TF32 here");
    int device = 0, runtime = 0, cublas_version = 0;
    cudaDeviceProp properties;
    CHECK_CUDA(cudaGetDevice(&device));
    CHECK_CUDA(cudaGetDeviceProperties(&properties, device));
    CHECK_CUDA(cudaRuntimeGetVersion(&runtime));
    cublasHandle_t handle;
    CHECK_CUBLAS(cublasCreate(&handle));
    CHECK_CUBLAS(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH)); /* float32 FMAs, no TF32 */
    CHECK_CUBLAS(cublasGetVersion(handle, &cublas_version));
    printf("%s (sm_%d%d, %d multiprocessors), CUDA runtime %d, cuBLAS %d\n", properties.name,
           properties.major, properties.minor, properties.multiProcessorCount, runtime,
           cublas_version);

    bool failed = false;
    std::string results;
    for (size_t i = 0; i < sizes.size(); i++)
        results += (i ? ", " : "") +
                   run_size(handle, sizes[i], only_rung, repeats, batch_ms, &failed);
    CHECK_CUBLAS(cublasDestroy(handle));

    if (json_path) {
        char date[32];
        time_t now = time(NULL);
        strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
        FILE *out = fopen(json_path, "w");
        if (!out)
            fail(json_path, strerror(errno));
        fprintf(out,
                "{\"device\": \"%s\", \"compute_capability\": \"%d.%d\", \"multiprocessors\": %d, "
                "\"date\": \"%s\", \"cuda_runtime\": %d, \"cublas\": %d, "
                "\"cublas_math\": \"CUBLAS_DEFAULT_MATH (no TF32)\", "
                "\"timing\": \"CUDA events around batches of back-to-back launches (>= %g ms "
                "each) after a warm-up call, median of %d batches; cuBLAS timed before and "
                "after the rungs, the faster kept\", "
                "\"check\": \"|c - c_cublas| <= 16 sqrt(k) 2^-24 (|A| @ |B|) elementwise\", "
                "\"sizes\": [%s]}\n",
                properties.name, properties.major, properties.minor,
                properties.multiProcessorCount, date, runtime, cublas_version, batch_ms, repeats,
                results.c_str());
        fclose(out);
        printf("wrote %s\n", json_path);
    }
    return failed ? 1 : 0;
}
#else
#include <stdio.h>
int main(void)
{
    fputs("bench: built without cuBLAS (cublas_v2.h was not found), which it needs as the "
          "reference\n", stderr);
    return 2;
}
#endif

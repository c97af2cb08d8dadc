/* 03_implicit_gemm.cu -- rung 3: implicit GEMM, rung 2's product with no im2col buffer.
 *
 * What it changes: the product's tile loader computes each column entry where it loads it,
 *
 *     B(k, col) = x[n, c, oh*stride + r - padding, ow*stride + s - padding]
 *     for k = (c, r, s) and col = (n, oh, ow),
 *
 * zero in the padding, straight into shared memory (tiled_product.cuh), and the store writes
 * y[n, k, oh, ow] + b[k] in the contract's layout. So neither the R*S-fold columns nor the
 * product's transposed copy ever reach device memory: the pixels are read from x (which, a few
 * hundred KB to a few MB, stays in the 50 MB L2 while overlapping windows read it R*S times) and
 * y is written once. The price: a division or two per loaded element to find (c, r, s), which the
 * tile's 16-fold (or more) reuse of each loaded element in FMAs pays for.
 *
 * Cost model: 2 K (C R S)(N OH OW) FLOPs; device memory x, w, y once: 4 (N C H W + K C R S +
 * N K OH OW) bytes (Fashion-CNN conv2 at batch 64: 1.14 GFLOP, 3.1 MB: bound by the FMAs and the
 * loads from L2/shared memory).
 *
 * Run it: python -m bench.conv_ladder --kernel implicit_gemm */
#include "../tiled_product.cuh"
#include "conv.cuh"

static int implicit_gemm(const float *x, const float *w, const float *b, float *y,
                         const conv_geometry &g);

extern "C" int s2c_cuda_conv2d_implicit_gemm(const float *x, const float *w, const float *b,
                                             float *y, float *scratch, const conv_geometry *g)
{
    // BEGIN SOLUTION week 16, task conv_implicit_gemm
    (void)scratch; /* none needed */
    return implicit_gemm(x, w, b, y, *g);
}

/* A(k, j) = w[k, j]: the weights as [K, C*R*S]. */
struct FilterRows {
    const float *w;
    int depth;
    __device__ float operator()(int, int k, int j) const { return __ldg(w + (int64_t)k * depth + j); }
};

/* B(j, col) = x's pixel under weight j = (c, r, s) of the window at col = (n, oh, ow); the kernel
 * size KH x KW known at compile time, or read from kh, kw when 0 (with_kernel_size). */
template <int KH, int KW>
struct WindowColumns {
    const float *x;
    int channels, height, width, kh, kw, stride, padding, out_width, positions;
    struct Column {
        const float *image;
        int top, left; /* the window's corner, in the padded image */
    };
    __device__ Column column(int, int col) const
    {
        int n = col / positions, p = col % positions;
        return {x + (int64_t)n * channels * height * width, p / out_width * stride - padding,
                p % out_width * stride - padding};
    }
    __device__ float operator()(const Column &at, int j) const
    {
        const int taps_wide = KW ? KW : kw, taps = KH ? KH * KW : kh * kw;
        int c = j / taps, rs = j % taps, h = at.top + rs / taps_wide, w = at.left + rs % taps_wide;
        bool inside = 0 <= h && h < height && 0 <= w && w < width;
        return inside ? __ldg(at.image + (c * height + h) * width + w) : 0.0f;
    }
};

/* y[n, k, p] = sum + b[k] for col = (n, p). */
struct OutputPlusBias {
    float *y;
    const float *b;
    int filters, positions;
    __device__ void operator()(int, int k, int col, float sum) const
    {
        int n = col / positions, p = col % positions;
        y[((int64_t)n * filters + k) * positions + p] = sum + b[k];
    }
};

static int implicit_gemm(const float *x, const float *w, const float *b, float *y,
                         const conv_geometry &g)
{
    int positions = (int)conv_positions(g);
    FilterRows filters = {w, (int)conv_rows(g)};
    OutputPlusBias output = {y, b, (int)g.filters, positions};
    return with_kernel_size(g, [&](auto kh, auto kw) {
        WindowColumns<kh.value, kw.value> windows = {
            x, (int)g.channels, (int)g.height, (int)g.width, (int)g.kh, (int)g.kw, (int)g.stride,
            (int)g.padding, (int)g.out_width, positions};
        return launch_tiled_product("conv implicit_gemm tiled_product_kernel", filters, windows,
                                    output, g.filters, g.n * positions, conv_rows(g), 1, 0);
    });
    // END SOLUTION
}

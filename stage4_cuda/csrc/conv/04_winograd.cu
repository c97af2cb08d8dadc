/* 04_winograd.cu -- rung 4: Winograd's F(2x2, 3x3), for 3x3 kernels with stride 1.
 *
 * What it changes: rungs 1-3 spend 36 multiplications on each 2x2 block of outputs of one
 * channel pair (4 outputs x 9 taps). Winograd's minimal filtering (Lavin and Gray, 2015) spends 16:
 * with the 4x4 input patch d under the block, the 3x3 filter g and constant matrices B, G, A,
 *
 *     Y (2x2) = A^T [ (G g G^T) * (B^T d B) ] A          (* elementwise, over the 4x4 entries)
 *
 * and, summed over the channels, that is 16 independent products, one per entry xi of the 4x4:
 *
 *     U[xi][k, c] = (G g[k, c] G^T)[xi]      the filters transformed (K x C, once per call)
 *     V[xi][c, t] = (B^T d[c, t] B)[xi]      every input patch t = (n, th, tw) transformed
 *     M[xi][k, t] = sum over c of U[xi][k, c] V[xi][c, t]    16 products (tiled_product.cuh)
 *     y[n, k, 2th + i, 2tw + j] = (A^T M[.][k, t] A)[i, j] + b[k]
 *
 * B, G and A hold only 0, +-1 and +-1/2, so the transforms are additions: the product does
 * 16/36 = 0.44 of rung 3's multiply-adds, paid for by three memory-bound transform kernels
 * and the scratch they go through.
 *
 * Accuracy: the transforms add and subtract up to 4 values of each patch and each product (the
 * 1/2 of G is exact), so each output rounds a few more times than a direct sum, in terms of size
 * up to |x||w| rather than the output's; the tests' tolerance derives from that
 * (tests/test_stage4_nvcc.py). A NaN in a patch reaches all 4 outputs of its 2x2 block.
 *
 * Cost model: 2 * 16 K C T FLOPs in the products (T = N ceil(OH/2) ceil(OW/2) patches; 0.60 GFLOP
 * for Fashion-CNN conv2 at batch 64, against 1.14 for rung 3); device memory: V and M written and
 * read once, 8 * 16 (C + K) T bytes (28 MB there).
 *
 * Shapes it does not handle (another kernel size or stride) are refused with S2C_CUDA_BAD_ARGUMENT;
 * the wrapper never sends them (dispatch.cu runs implicit_gemm instead).
 *
 * The backward's dx (backward_dx.cu) runs here too where it takes 2x2 blocks (rung 6 where 4x4 cost
 * fewer products: conv.cuh's winograd_block): for stride 1 it is the forward of dy through the
 * filters turned by 180 degrees with filters and channels swapped, padded by 2 - padding
 * (conv_winograd with `turned`: the filter transform reads w[c, k, 2 - r, 2 - s]), and no bias.
 *
 * Run it: python -m bench.conv_ladder --kernel winograd */
#include "../tiled_product.cuh"
#include "conv.cuh"

#define TRANSFORM_THREADS 256

/* U [16, K, C], then V [16, C, T], then M [16, K, T]. */
int64_t conv_winograd_scratch(const conv_geometry &g)
{
    int64_t tiles = winograd_tiles(g).tiles;
    return WINOGRAD_ENTRIES * (g.filters * g.channels + g.channels * tiles + g.filters * tiles);
}

__global__ void filter_transform_kernel(const float *w, float *u, int64_t filters,
                                        int64_t channels, bool turned);
__global__ void input_transform_kernel(const float *x, float *v, conv_geometry g,
                                       winograd_shape shape, bool tile_major);
__global__ void output_transform_kernel(const float *m, const float *b, float *y,
                                        conv_geometry g, winograd_shape shape);
static int winograd_products(const float *u, const float *v, float *m, const conv_geometry &g,
                             int64_t tiles);

extern "C" int s2c_cuda_conv2d_winograd(const float *x, const float *w, const float *b, float *y,
                                        float *scratch, const conv_geometry *g)
{
    // BEGIN SOLUTION week 16, task conv_winograd
    if (g->kh != 3 || g->kw != 3 || g->stride != 1) return S2C_CUDA_BAD_ARGUMENT;
    return conv_winograd(x, w, b, y, scratch, *g, false);
}

/* y = x convolved with w (+ b, unless b is NULL) for a 3x3 stride-1 geometry g; with `turned`,
 * w is read as the [C, K, 3, 3] filters w[c, k, 2 - r, 2 - s] of a w stored [K, C, 3, 3]. */
int conv_winograd(const float *x, const float *w, const float *b, float *y, float *scratch,
                  const conv_geometry &g, bool turned)
{
    winograd_shape shape = winograd_tiles(g);
    float *u = scratch, *v = u + WINOGRAD_ENTRIES * g.filters * g.channels;
    float *m = v + WINOGRAD_ENTRIES * g.channels * shape.tiles;
    int64_t pairs = g.filters * g.channels;
    launch_overlapped(filter_transform_kernel, blocks_for(pairs, TRANSFORM_THREADS),
                      TRANSFORM_THREADS, 0, w, u, g.filters, g.channels, turned);
    LAUNCH_CHECK("filter_transform_kernel");
    int status = winograd_input_transform(x, v, g, false);
    if (status != S2C_CUDA_OK) return status;
    status = winograd_products(u, v, m, g, shape.tiles);
    if (status != S2C_CUDA_OK) return status;
    int64_t blocks = g.filters * shape.tiles;
    launch_overlapped(output_transform_kernel, blocks_for(blocks, TRANSFORM_THREADS),
                      TRANSFORM_THREADS, 0, m, b, y, g, shape);
    LAUNCH_CHECK("output_transform_kernel");
    return S2C_CUDA_OK;
}

/* U[xi] = G g G^T for filter pair (k, c); G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]. The
 * filter g is w[k, c] (w [K, C, 3, 3]), or, `turned`, w[c, k] rotated by 180 degrees (w stored
 * [C, K, 3, 3]: tap (r, s) at 8 - (3 r + s)). */
__global__ void filter_transform_kernel(const float *w, float *u, int64_t filters,
                                        int64_t channels, bool turned)
{
    wait_for_previous_kernel();
    int64_t pair = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; /* k * C + c */
    if (pair >= filters * channels) return;
    const float *g = w + (turned ? pair % channels * filters + pair / channels : pair) * 9;
    auto tap = [&](int i) { return turned ? g[8 - i] : g[i]; };
    float half[4][3]; /* G g */
    for (int j = 0; j < 3; j++) {
        float g0 = tap(j), g1 = tap(3 + j), g2 = tap(6 + j);
        half[0][j] = g0;
        half[1][j] = 0.5f * (g0 + g1 + g2);
        half[2][j] = 0.5f * (g0 - g1 + g2);
        half[3][j] = g2;
    }
    for (int i = 0; i < 4; i++) { /* (G g) G^T, row i */
        float h0 = half[i][0], h1 = half[i][1], h2 = half[i][2];
        float row[4] = {h0, 0.5f * (h0 + h1 + h2), 0.5f * (h0 - h1 + h2), h2};
        for (int j = 0; j < 4; j++)
            u[(int64_t)(i * 4 + j) * filters * channels + pair] = row[j];
    }
}

int winograd_input_transform(const float *x, float *v, const conv_geometry &g, bool tile_major)
{
    winograd_shape shape = winograd_tiles(g);
    int64_t patches = g.channels * shape.tiles;
    launch_overlapped(input_transform_kernel, blocks_for(patches, TRANSFORM_THREADS),
                      TRANSFORM_THREADS, 0, x, v, g, shape, tile_major);
    LAUNCH_CHECK("input_transform_kernel");
    return S2C_CUDA_OK;
}

/* V[xi][c, t] = B^T d B for the 4x4 patch d of channel c under output block t = (n, th, tw), or
 * with `tile_major` V[xi][t, c] (the backward's weight gradient reads it along c);
 * B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]. Pixels outside the image read as zero. */
__global__ void input_transform_kernel(const float *x, float *v, conv_geometry g,
                                       winograd_shape shape, bool tile_major)
{
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; /* c * T + t, or t * C + c */
    if (i >= g.channels * shape.tiles) return;
    winograd_patch at = winograd_patch_of(i, g.channels, shape, 2, tile_major);
    int64_t top = at.top - g.padding, left = at.left - g.padding;
    const float *plane = x + (at.n * g.channels + at.c) * g.height * g.width;
    float d[4][4];
    for (int a = 0; a < 4; a++)
        for (int e = 0; e < 4; e++) {
            int64_t h = top + a, w = left + e;
            bool inside = 0 <= h && h < g.height && 0 <= w && w < g.width;
            d[a][e] = inside ? plane[h * g.width + w] : 0.0f;
        }
    float bd[4][4]; /* B^T d */
    for (int e = 0; e < 4; e++) {
        bd[0][e] = d[0][e] - d[2][e];
        bd[1][e] = d[1][e] + d[2][e];
        bd[2][e] = d[2][e] - d[1][e];
        bd[3][e] = d[1][e] - d[3][e];
    }
    int64_t entry = g.channels * shape.tiles; /* the distance between entries xi and xi+1 */
    for (int a = 0; a < 4; a++) { /* (B^T d) B, row a */
        float row[4] = {bd[a][0] - bd[a][2], bd[a][1] + bd[a][2], bd[a][2] - bd[a][1],
                        bd[a][1] - bd[a][3]};
        for (int e = 0; e < 4; e++)
            v[(a * 4 + e) * entry + i] = row[e];
    }
}

static int winograd_products(const float *u, const float *v, float *m, const conv_geometry &g,
                             int64_t tiles)
{
    int64_t k = g.filters, c = g.channels, t = tiles;
    /* product xi: M[xi] [k, t] = U[xi] [k, c] @ V[xi] [c, t], stored matrices, batched along z */
    StridedOperand rows = {u, k * c, c, 1}, columns = {v, c * t, 1, t};
    return launch_tiled_product("conv winograd tiled_product_kernel", rows, columns,
                                StridedResult{m, NULL, k * t, t}, k, t, c, WINOGRAD_ENTRIES, 0);
}

/* y's 2x2 block t of filter k = A^T M A + b[k] (+ 0 when b is NULL); A^T = [1 1 1 0; 0 1 -1 -1]. */
__global__ void output_transform_kernel(const float *m, const float *b, float *y,
                                        conv_geometry g, winograd_shape shape)
{
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; /* k * T + t */
    if (i >= g.filters * shape.tiles) return;
    winograd_patch at = winograd_patch_of(i, g.filters, shape, 2, false);
    int64_t k = at.c, top = at.top, left = at.left;
    int64_t entry = g.filters * shape.tiles;
    float am[2][4]; /* A^T M */
    for (int e = 0; e < 4; e++) {
        float m0 = m[e * entry + i], m1 = m[(4 + e) * entry + i];
        float m2 = m[(8 + e) * entry + i], m3 = m[(12 + e) * entry + i];
        am[0][e] = m0 + m1 + m2;
        am[1][e] = m1 - m2 - m3;
    }
    float *plane = y + (at.n * g.filters + k) * g.out_height * g.out_width, bias = b ? b[k] : 0.0f;
    for (int a = 0; a < 2; a++) {
        float out[2] = {am[a][0] + am[a][1] + am[a][2], am[a][1] - am[a][2] - am[a][3]};
        for (int e = 0; e < 2; e++)
            if (top + a < g.out_height && left + e < g.out_width)
                plane[(top + a) * g.out_width + left + e] = out[e] + bias;
    }
    // END SOLUTION
}

/* winograd.c -- inference's fused convolution for 3 x 3 filters at stride 1 followed by 2 x 2
 * max-pooling (given; inference.c picks it): Winograd's minimal filtering F(2 x 2, 3 x 3)
 * (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", 2016).
 *
 * Each 2 x 2 max-pooling window reads a 2 x 2 tile of the convolution's output, which the direct
 * sums compute with 4 x 9 = 36 multiplies per input channel. Winograd computes the same tile from
 * the 4 x 4 input patch d under it and the 3 x 3 filter g with 16:
 *     tile = A^T [ (G g G^T) * (B^T d B) ] A          (* elementwise, 4 x 4)
 * where G g G^T (the filter transformed, once per call) and B^T d B (the patch transformed, once
 * per patch and channel, shared by every filter) use only additions and halvings. Summed over the
 * c input channels, the 16 elementwise products become 16 matrix products, one per position xi of
 * the 4 x 4 transform: M[xi] [k, tiles] = U[xi] [k, c] @ V[xi] [c, tiles], which s2c_gemm runs at
 * its full speed; the output transform A^T m A then gives the tile, whose max, plus the bias,
 * through ReLU is the pooled output (as pool_bias_relu in inference.c). The Fashion CNN's second
 * layer (64 -> 128 channels, 13 x 13 -> 5 x 5 pooled) then takes 16 * 128 * 64 * 25 * 2 = 6.6
 * MFLOP per image instead of 128 * 11 * 11 * 576 * 2 = 17.8 (the 11th row and column, which the
 * pooling drops, are not computed either). Rounding: the transforms add a few roundings of
 * values of the inputs' size, well inside the tolerance of a sum of c * 9 products.
 *
 * A NaN spreads over its whole 4 x 4 patch in B^T d B, so it reaches every output of the tiles
 * whose patch holds it: the pooled output of each such tile, which the direct sums also make NaN
 * (every element of the window is read), so the pooled result matches theirs. An infinity would
 * not (Inf - Inf = NaN where the definition's sums stay finite, or -Inf that the max drops):
 * inference.c sends images and weights holding a NaN or infinity through its GEMM instead.
 * Costs per image of that layer: the input transform 32 additions per patch and channel (25 x 64
 * patches), the output transform about 30 operations per tile and filter (25 x 128); V and M,
 * 16 * (c + k) floats per tile (12 KB), for a group of images at a time. */
#include <string.h>

#include "internal.h"
#include "matmul.h"

#define TILE 4 /* the transform's size: a 2 x 2 output tile from a 4 x 4 patch */
#define POSITIONS S2C_WINOGRAD_POSITIONS /* TILE * TILE */

/* transformed [POSITIONS][k][c] = G g G^T of each filter g [3, 3] of weights [k, c, 3, 3], with
 * G = [[1, 0, 0], [1/2, 1/2, 1/2], [1/2, -1/2, 1/2], [0, 0, 1]] (rows), so that M[xi] is one GEMM
 * of transformed[xi] [k, c] by V[xi]. */
void s2c_winograd_filters(const float *weights, int64_t k, int64_t c, float *transformed)
{
    /* In chunks of FILTER_CHUNK filters, each position's values gathered in a local array first:
     * written straight out, a filter's 16 values would land k * c floats apart, a power of two
     * here, and so all in one set of the L1 cache, which holds only a few of them. */
    enum { FILTER_CHUNK = 16 };
    for (int64_t first = 0; first < k * c; first += FILTER_CHUNK) {
        const int64_t count = s2c_min(FILTER_CHUNK, k * c - first);
        float chunk[POSITIONS][FILTER_CHUNK];
        for (int64_t f = 0; f < count; f++) {
            const float *g = weights + (first + f) * 9;
            float half[TILE][3]; /* G g: rows of the filter combined */
            for (int j = 0; j < 3; j++) {
                half[0][j] = g[j];
                half[1][j] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);
                half[2][j] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);
                half[3][j] = g[6 + j];
            }
            for (int i = 0; i < TILE; i++) { /* (G g) G^T: its columns combined */
                chunk[i * TILE + 0][f] = half[i][0];
                chunk[i * TILE + 1][f] = 0.5f * (half[i][0] + half[i][1] + half[i][2]);
                chunk[i * TILE + 2][f] = 0.5f * (half[i][0] - half[i][1] + half[i][2]);
                chunk[i * TILE + 3][f] = half[i][2];
            }
        }
        for (int xi = 0; xi < POSITIONS; xi++)
            memcpy(transformed + xi * k * c + first, chunk[xi], (size_t)count * sizeof(float));
    }
}

/* v[xi * position_floats] for the 16 positions xi = B^T d B of the 4 x 4 patch d whose top-left
 * is `patch` (rows `row_floats` apart), B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0],
 * [0, 1, 0, -1]]: 32 additions. */
static inline void transform_patch(const float *patch, int64_t row_floats, float *v,
                                   int64_t position_floats)
{
    float rows[TILE][TILE]; /* B^T d */
    for (int j = 0; j < TILE; j++) {
        float d0 = patch[j], d1 = patch[row_floats + j], d2 = patch[2 * row_floats + j],
              d3 = patch[3 * row_floats + j];
        rows[0][j] = d0 - d2;
        rows[1][j] = d1 + d2;
        rows[2][j] = d2 - d1;
        rows[3][j] = d1 - d3;
    }
    for (int i = 0; i < TILE; i++) { /* (B^T d) B */
        float *out = v + (int64_t)(i * TILE) * position_floats;
        out[0 * position_floats] = rows[i][0] - rows[i][2];
        out[1 * position_floats] = rows[i][1] + rows[i][2];
        out[2 * position_floats] = rows[i][2] - rows[i][1];
        out[3 * position_floats] = rows[i][1] - rows[i][3];
    }
}

/* The largest of the 2 x 2 tile A^T m A, A^T = [[1, 1, 1, 0], [0, 1, -1, -1]], of the 16 values
 * m[xi * stride], plus the bias, through ReLU; a NaN wins the max and stays NaN (as in
 * pool_bias_relu, whose reasoning for adding the bias after the max holds here too). */
static inline float tile_bias_relu(const float *m, int64_t stride, float bias)
{
    float columns[2][TILE]; /* A^T m */
    for (int j = 0; j < TILE; j++) {
        float m0 = m[j * stride], m1 = m[(TILE + j) * stride], m2 = m[(2 * TILE + j) * stride],
              m3 = m[(3 * TILE + j) * stride];
        columns[0][j] = m0 + m1 + m2;
        columns[1][j] = m1 - m2 - m3;
    }
    float best = columns[0][0] + columns[0][1] + columns[0][2];
    float tile[3] = {columns[0][1] - columns[0][2] - columns[0][3],
                     columns[1][0] + columns[1][1] + columns[1][2],
                     columns[1][1] - columns[1][2] - columns[1][3]};
    for (int e = 0; e < 3; e++) /* best == best: not NaN; !(value <= best): greater or NaN */
        best = best == best && !(tile[e] <= best) ? tile[e] : best;
    float value = best + bias;
    return value <= 0.0f ? 0.0f : value; /* ReLU; NaN <= 0 is false: NaN stays */
}

/* The floats s2c_winograd_bias_relu_pool's scratch holds: a padded image, then V and M. */
int64_t s2c_winograd_scratch(int64_t images, int64_t c, int64_t h, int64_t w, int64_t k,
                             int64_t padding)
{
    int64_t tiles = images * ((h + 2 * padding - 2) / 2) * ((w + 2 * padding - 2) / 2);
    return c * (h + 2 * padding) * (w + 2 * padding) + POSITIONS * (c + k) * tiles;
}

/* y [images, k, ph, pw] = relu(maxpool2(conv3x3(x) + bias)) for images [images, c, h, w] at
 * stride 1, ph = (h + 2 * padding - 2) / 2 (likewise pw); `transformed`: s2c_winograd_filters'.
 * scratch: s2c_winograd_scratch(images, ...) floats, a padded image then V and M. */
int s2c_winograd_bias_relu_pool(const float *x, const float *transformed, const float *bias,
                                float *y, int64_t images, int64_t c, int64_t h, int64_t w,
                                int64_t k, int64_t padding, float *scratch)
{
    const int64_t padded_h = h + 2 * padding, padded_w = w + 2 * padding;
    const int64_t ph = (padded_h - 2) / 2, pw = (padded_w - 2) / 2, plane = ph * pw;
    const int64_t tiles = images * plane;
    float *padded = scratch, *v = scratch + c * padded_h * padded_w, *m = v + POSITIONS * c * tiles;
    /* V [POSITIONS][c][tiles]: every patch of every image and channel, transformed. A patch's
     * rows 2 * ty .. 2 * ty + 3 lie inside the padded image (2 * ph + 2 <= padded_h). */
    for (int64_t image = 0; image < images; image++) {
        s2c_pad_image(x + image * c * h * w, padded, c, h, w, padding, 0);
        for (int64_t channel = 0; channel < c; channel++)
            for (int64_t ty = 0; ty < ph; ty++)
                #pragma omp simd /* a row's patches side by side in the lanes */
                for (int64_t tx = 0; tx < pw; tx++)
                    transform_patch(padded + (channel * padded_h + 2 * ty) * padded_w + 2 * tx,
                                    padded_w, v + channel * tiles + image * plane + ty * pw + tx,
                                    c * tiles);
    }
    /* M[xi] [k, tiles] = U[xi] [k, c] @ V[xi] [c, tiles]: 16 products of depth c */
    for (int xi = 0; xi < POSITIONS; xi++) {
        int status = s2c_gemm(0, 0, k, tiles, c, transformed + xi * k * c, v + xi * c * tiles,
                              m + xi * k * tiles, 0);
        if (status != S2C_OK)
            return status;
    }
    for (int64_t image = 0; image < images; image++)
        for (int64_t filter = 0; filter < k; filter++) {
            const float *tile_m = m + filter * tiles + image * plane;
            float *y_plane = y + (image * k + filter) * plane;
            #pragma omp simd /* the image's tiles side by side in the lanes */
            for (int64_t t = 0; t < plane; t++)
                y_plane[t] = tile_bias_relu(tile_m + t, k * tiles, bias[filter]);
        }
    return S2C_OK;
}

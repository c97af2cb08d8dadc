/* matmul.cu -- c = op(a) @ op(b) (+ bias) (week 15): the product under the dense layer, on the
 * register-tiled product that the conv2d ladder also runs (tiled_product.cuh: 16 x 16 threads,
 * each computing a few rows and columns of a tile held in registers, the next step's loads in
 * flight while the current one computes). The SGEMM ladder that reaches cuBLAS lives in sgemm/.
 *
 * Either operand may be stored transposed (the dense layer's w and dy.T): the loader
 * (tiled_product.cuh, StridedOperand) reads element (i, k) at i * row_stride + k * depth_stride,
 * so a transposed operand is the same loader with its strides swapped, read where it lies (no
 * transposed copy). An optional bias is added to every row as c is written (the dense layer's
 * + b: StridedResult).
 *
 * Split along k: a product with few output tiles and a long k leaves most multiprocessors idle
 * while a few blocks walk the whole depth (the Fashion CNN's Linear 3200->256 at batch 64: 16
 * tiles of 64 x 64, 200 steps each, for 132 multiprocessors). Given scratch (gemm_scratch floats),
 * such a product is cut into pieces along k (split_depth), one block per tile and piece (grid z),
 * each writing its partial tile to scratch; a second kernel adds the pieces in a fixed order (and
 * the bias): the same sums in the same order on every run, no atomics.
 *
 * Cost model: 2 n k m FLOPs; device memory a, b and c once (the tiles' re-reads hit L2), plus the
 * partial tiles when split (pieces x n x m floats, written and read once). */
#include "tiled_product.cuh"

/* gemm, its last kernel (the product's store, or the one adding a split product's pieces) also
 * applying the ReLU when `relu`: inference's dense layer followed by a ReLU (dense.cu's
 * s2c_cuda_linear_relu_forward) in one launch fewer than linear_forward then relu. */
int gemm_epilogue(const float *a, const float *b, const float *bias, float *c, float *scratch,
                  int64_t n, int64_t k, int64_t m, int transpose_a, int transpose_b, bool relu);

int64_t gemm_scratch(int64_t n, int64_t k, int64_t m)
{
    depth_split split = split_depth(n, m, k);
    return split.pieces > 1 ? split.pieces * n * m : 0;
}

__global__ void add_pieces_kernel(const float *partial, const float *bias, float *c, int64_t pieces,
                                  int64_t n, int64_t m, bool relu);

extern "C" int s2c_cuda_matmul(const float *a, const float *b, float *c, int64_t n, int64_t k,
                               int64_t m)
{
    return s2c_cuda_gemm(a, b, NULL, c, NULL, n, k, m, 0, 0);
}

extern "C" int s2c_cuda_gemm(const float *a, const float *b, const float *bias, float *c,
                             float *scratch, int64_t n, int64_t k, int64_t m, int transpose_a,
                             int transpose_b)
{
    // BEGIN SOLUTION week 15, task matmul
    return gemm_epilogue(a, b, bias, c, scratch, n, k, m, transpose_a, transpose_b, false);
}

int gemm_epilogue(const float *a, const float *b, const float *bias, float *c, float *scratch,
                  int64_t n, int64_t k, int64_t m, int transpose_a, int transpose_b, bool relu)
{
    depth_split split = scratch != NULL ? split_depth(n, m, k) : depth_split{1, k};
    /* op(a) [n, k]: a [n, k], or a [k, n] read transposed; op(b) [k, m]: b [k, m] or b [m, k] */
    StridedOperand rows = transpose_a ? StridedOperand{a, 0, 1, n} : StridedOperand{a, 0, k, 1};
    StridedOperand columns = transpose_b ? StridedOperand{b, 0, k, 1} : StridedOperand{b, 0, 1, m};
    bool split_up = split.pieces > 1; /* then piece z's partial tile goes to scratch[z] */
    StridedResult tile = {split_up ? scratch : c, split_up ? NULL : bias, n * m, m,
                          relu && !split_up};
    int status = launch_tiled_product("gemm tiled_product_kernel", rows, columns, tile, n, m, k,
                                      split.pieces, split_up ? split.piece : 0);
    if (status != S2C_CUDA_OK || !split_up) return status;
    launch_overlapped(add_pieces_kernel, pieces_blocks(n * m, split.pieces),
                      pieces_threads(split.pieces), 0, scratch, bias, c, split.pieces, n, m, relu);
    LAUNCH_CHECK("add_pieces_kernel");
    return S2C_CUDA_OK;
}

/* c[i, j] = the pieces' partial sums added in a fixed order (+ bias[j]), then its ReLU when
 * relu (a NaN stays: NaN <= 0 is false). */
__global__ void add_pieces_kernel(const float *partial, const float *bias, float *c, int64_t pieces,
                                  int64_t n, int64_t m, bool relu)
{
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    float total = sum_of_pieces(partial, pieces, n * m, i);
    if (threadIdx.y != 0 || i >= n * m) return;
    float value = bias != NULL ? total + bias[i % m] : total;
    c[i] = relu && value <= 0.0f ? 0.0f : value;
    // END SOLUTION
}

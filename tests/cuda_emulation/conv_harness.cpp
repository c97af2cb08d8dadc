/* The conv2d ladder's rungs 1, 3, 4, 5, 6, 7 and the backward on the CPU emulation of CUDA
 * (tests/test_conv_cuda.py builds it). Each runs on random inputs at the curriculum's layer shapes
 * and at odd ones (non-square kernels and images, padding, strides 2 and 3, pixels no window
 * covers), its outputs pre-filled with NaN, against a direct sum in double: every output within
 * 1e-5 of the sum of its terms' magnitudes (float32 rounding of these short sums is far below;
 * one wrong tap, channel or image is far above), rung 6's within 1e-4: its transforms scale
 * values by up to 100 before they round (measured here: up to 1.3e-5 at one channel). Rung 5 calls fake_cufft.cpp's exact DFTs, whose
 * path is the first argument. Prints one line per check and "N passed, M failed". */
#include <cmath>
#include <random>
#include <vector>

#include "conv/conv.cuh"

typedef int (*rung_launcher)(const float *, const float *, const float *, float *, float *,
                             const conv_geometry *);

/* Rung 2 is not built here: it is im2col (a graded op) and the SGEMM ladder's rung 8, which
 * tests/test_sgemm_cuda.py runs on this emulation. */
int64_t conv_im2col_scratch(const conv_geometry &) { return 0; }

static int passed = 0, failed = 0;

/* The largest |got - exact| / magnitude, at most `limit`; a NaN counts as infinitely far. */
static void check(const char *what, const conv_geometry &g, const std::vector<float> &got,
                  const std::vector<double> &exact, const std::vector<double> &magnitude,
                  double limit = 1e-5)
{
    double worst = 0;
    for (size_t i = 0; i < got.size(); i++) {
        double error = std::fabs(got[i] - exact[i]) / (magnitude[i] + 1e-30);
        worst = std::isnan(error) ? INFINITY : std::max(worst, error);
    }
    bool ok = worst <= limit;
    (ok ? passed : failed)++;
    printf("%s N%ld C%ld K%ld %ldx%ld stride %ld padding %ld %ldx%ld: error %.3g of the "
           "magnitude: %s\n",
           what, (long)g.n, (long)g.channels, (long)g.filters, (long)g.kh, (long)g.kw,
           (long)g.stride, (long)g.padding, (long)g.height, (long)g.width, worst,
           ok ? "ok" : "FAILED");
}

static std::vector<float> scratch_for(const conv_geometry &g, int rung)
{
    int64_t floats = 0;
    s2c_cuda_conv2d_scratch(&g, rung, &floats);
    return std::vector<float>(floats + 1);
}

int main(int argc, char **argv)
{
    if (argc != 2 || s2c_cuda_load_cufft(argv[1]) != S2C_CUDA_OK) {
        printf("usage: conv_harness FAKE_CUFFT.so (%s)\n", s2c_cuda_error_message());
        return 2;
    }
    /* N, C, K, kh, kw, stride, padding, H, W */
    const int shapes[][9] = {
        {2, 1, 6, 5, 5, 1, 2, 28, 28},   /* LeNet-5 conv1 */
        {2, 6, 16, 5, 5, 1, 0, 14, 14},  /* LeNet-5 conv2 */
        {2, 1, 64, 3, 3, 1, 0, 28, 28},  /* Fashion CNN conv1 */
        {2, 64, 128, 3, 3, 1, 0, 13, 13}, /* Fashion CNN conv2 */
        {3, 5, 7, 3, 3, 1, 1, 9, 11},
        {3, 4, 33, 3, 3, 2, 1, 10, 7},
        {3, 5, 4, 5, 3, 3, 2, 11, 13},
        {2, 3, 5, 2, 2, 2, 0, 5, 5}, /* the last row and column in no window */
        {2, 7, 5, 1, 1, 1, 0, 8, 9},
        {2, 16, 17, 3, 3, 1, 1, 9, 7},  /* dx by Winograd (16 channels and filters or more) */
        {1, 16, 16, 3, 3, 1, 2, 5, 6},  /* the same, padded by 2: dy through the turned filters */
        {2, 16, 16, 3, 3, 1, 0, 8, 8},  /* dw by 2x2 blocks (6x6 outputs), dx by 4x4 (8x8) */
        {2, 9, 6, 5, 5, 1, 2, 8, 8},    /* dx by the implicit product (more than 8 channels) */
        {2, 12, 5, 3, 3, 2, 1, 9, 9},   /* the same, stride 2 (no Winograd) */
        {2, 2, 37, 3, 3, 2, 1, 9, 7},   /* rung 7: 18 taps, filters 32 and 5 a block */
        {3, 1, 7, 3, 3, 1, 1, 6, 5},    /* the same with 9 taps, 7 filters */
        {1, 1, 3, 3, 3, 1, 1, 66, 66},  /* rung 6: 17x17 4x4 blocks an image (unstaged output); a padded shallow dw */
    };
    std::mt19937 generator(7);
    std::normal_distribution<float> normal;
    for (const int *s : shapes) {
        conv_geometry g = {s[0], s[1], s[7], s[8], s[2], s[3], s[4], s[5], s[6], 0, 0};
        g.out_height = (g.height + 2 * g.padding - g.kh) / g.stride + 1;
        g.out_width = (g.width + 2 * g.padding - g.kw) / g.stride + 1;
        int64_t N = g.n, C = g.channels, K = g.filters, R = g.kh, S = g.kw, H = g.height,
                W = g.width, OH = g.out_height, OW = g.out_width;
        std::vector<float> x(N * C * H * W), w(K * C * R * S), b(K), dy(N * K * OH * OW);
        for (std::vector<float> *values : {&x, &w, &b, &dy})
            for (float &value : *values) value = normal(generator);
        std::vector<double> y(dy.size()), y_size(dy.size()), dx(x.size()), dx_size(x.size(), 1e-3),
            dw(w.size()), dw_size(w.size()), db(K), db_size(K);
        for (int64_t n = 0; n < N; n++)
            for (int64_t k = 0; k < K; k++)
                for (int64_t p = 0; p < OH * OW; p++) {
                    int64_t out = (n * K + k) * OH * OW + p;
                    y[out] = b[k], y_size[out] = std::fabs(b[k]);
                    db[k] += dy[out], db_size[k] += std::fabs(dy[out]);
                    for (int64_t c = 0; c < C; c++)
                        for (int64_t r = 0; r < R; r++)
                            for (int64_t q = 0; q < S; q++) {
                                int64_t h = p / OW * g.stride + r - g.padding;
                                int64_t v = p % OW * g.stride + q - g.padding;
                                if (h < 0 || h >= H || v < 0 || v >= W) continue;
                                int64_t xi = ((n * C + c) * H + h) * W + v;
                                int64_t wi = ((k * C + c) * R + r) * S + q;
                                double term = (double)x[xi] * w[wi];
                                y[out] += term, y_size[out] += std::fabs(term);
                                dx[xi] += (double)w[wi] * dy[out];
                                dx_size[xi] += std::fabs((double)w[wi] * dy[out]);
                                dw[wi] += (double)x[xi] * dy[out];
                                dw_size[wi] += std::fabs((double)x[xi] * dy[out]);
                            }
                }
        const struct {
            const char *name;
            int rung;
            rung_launcher launch;
        } rungs[] = {{"direct", CONV_DIRECT, s2c_cuda_conv2d_direct},
                     {"implicit_gemm", CONV_IMPLICIT_GEMM, s2c_cuda_conv2d_implicit_gemm},
                     {"winograd", CONV_WINOGRAD, s2c_cuda_conv2d_winograd},
                     {"fft", CONV_FFT, s2c_cuda_conv2d_fft},
                     {"winograd_4x4", CONV_WINOGRAD_4X4, s2c_cuda_conv2d_winograd_4x4},
                     {"shallow", CONV_SHALLOW, s2c_cuda_conv2d_shallow}};
        auto applies = [&](int rung) {
            bool winograd = rung == CONV_WINOGRAD || rung == CONV_WINOGRAD_4X4;
            if (winograd) return R == 3 && S == 3 && g.stride == 1;
            return rung != CONV_SHALLOW || C * R * S <= S2C_CUDA_SHALLOW_DEPTH;
        };
        for (const auto &rung : rungs) {
            if (!applies(rung.rung)) continue;
            if (rung.rung == CONV_FFT && C * K > 512) continue; /* the fake's DFTs are slow */
            std::vector<float> scratch = scratch_for(g, rung.rung), out(y.size(), NAN);
            int status = rung.launch(x.data(), w.data(), b.data(), out.data(), scratch.data(), &g);
            if (status != S2C_CUDA_OK) out.assign(out.size(), NAN);
            check(rung.name, g, out, y, y_size, rung.rung == CONV_WINOGRAD_4X4 ? 1e-4 : 1e-5);
        }
        std::vector<float> scratch = scratch_for(g, CONV_BACKWARD), got_dx(x.size(), NAN),
                           got_dw(w.size(), NAN), got_db(K, NAN);
        int status = s2c_cuda_conv2d_backward(x.data(), w.data(), dy.data(), got_dx.data(),
                                              got_dw.data(), got_db.data(), scratch.data(), &g);
        if (status != S2C_CUDA_OK) got_dx.assign(got_dx.size(), NAN);
        check("backward dx", g, got_dx, dx, dx_size);
        check("backward dw", g, got_dw, dw, dw_size);
        check("backward db", g, got_db, db, db_size);

        /* A NaN weight reaches only the pixels its tap covers, as in PyTorch (col2im adds the
         * covering taps alone), not every pixel through the product's 0 x NaN. (Not at the
         * Fashion CNN's conv2: its 8192 channel pairs take the emulation long, and the pass that
         * handles a NaN is the same at every size.) */
        if (C * K > 512) continue;

        /* A NaN pixel reaches only the outputs whose window covers it, as in PyTorch (rung 6's
         * transforms would carry it into every output of its patch's block; not rung 5, whose
         * spectra mix every pixel). */
        int64_t last = (H - 1) * W + W - 1; /* image 0, channel 0 */
        float pixel = x[last];
        x[last] = NAN;
        for (const auto &rung : rungs) {
            if (rung.rung == CONV_FFT || !applies(rung.rung)) continue;
            std::vector<float> scratch = scratch_for(g, rung.rung), out(y.size(), NAN);
            int status = rung.launch(x.data(), w.data(), b.data(), out.data(), scratch.data(), &g);
            int64_t wrong = status == S2C_CUDA_OK ? 0 : 1;
            double limit = rung.rung == CONV_WINOGRAD_4X4 ? 1e-4 : 1e-5;
            for (size_t i = 0; i < out.size(); i++) {
                int64_t n = i / (K * OH * OW), p = i % (OH * OW);
                int64_t r = H - 1 + g.padding - p / OW * g.stride;
                int64_t q = W - 1 + g.padding - p % OW * g.stride;
                bool covers = n == 0 && 0 <= r && r < R && 0 <= q && q < S;
                wrong += covers ? !std::isnan(out[i])
                                : !(std::fabs(out[i] - y[i]) <= limit * y_size[i]);
            }
            (wrong ? failed : passed)++;
            printf("%s, NaN in x[0, 0, %lld, %lld]: %lld wrong: %s\n", rung.name, (long long)H - 1,
                   (long long)W - 1, (long long)wrong, wrong ? "FAILED" : "ok");
        }
        x[last] = pixel;

        /* A NaN in dy reaches only the pixels of dx under its window, as in PyTorch (col2im): dx
         * by Winograd (rung 4 or 6 on dy) has a pass for a non-finite dy too. */
        int64_t corner = OH * OW - 1; /* image 0, filter 0, the last output */
        float gradient = dy[corner];
        dy[corner] = NAN;
        got_dx.assign(x.size(), NAN);
        status = s2c_cuda_conv2d_backward(x.data(), w.data(), dy.data(), got_dx.data(),
                                          got_dw.data(), got_db.data(), scratch.data(), &g);
        dy[corner] = gradient;
        int64_t wrong = status == S2C_CUDA_OK ? 0 : 1;
        for (size_t i = 0; i < x.size(); i++) {
            int64_t n = i / (C * H * W), p = i % (H * W);
            int64_t r = p / W + g.padding - (OH - 1) * g.stride;
            int64_t q = p % W + g.padding - (OW - 1) * g.stride;
            bool covered = n == 0 && 0 <= r && r < R && 0 <= q && q < S;
            wrong += covered ? !std::isnan(got_dx[i])
                             : !(std::fabs(got_dx[i] - dx[i]) <= 1e-5 * dx_size[i]);
        }
        (wrong ? failed : passed)++;
        printf("backward dx, NaN in dy[0, 0, %lld, %lld]: %lld wrong: %s\n", (long long)OH - 1,
               (long long)OW - 1, (long long)wrong, wrong ? "FAILED" : "ok");

        w[0] = NAN; /* filter 0, channel 0, tap (0, 0) */
        std::vector<bool> reached(x.size(), false);
        for (int64_t n = 0; n < N; n++)
            for (int64_t p = 0; p < OH * OW; p++) {
                int64_t h = p / OW * g.stride - g.padding, v = p % OW * g.stride - g.padding;
                if (h >= 0 && h < H && v >= 0 && v < W) reached[(n * C * H + h) * W + v] = true;
            }
        got_dx.assign(x.size(), NAN);
        status = s2c_cuda_conv2d_backward(x.data(), w.data(), dy.data(), got_dx.data(),
                                          got_dw.data(), got_db.data(), scratch.data(), &g);
        wrong = status == S2C_CUDA_OK ? 0 : 1;
        for (size_t i = 0; i < x.size(); i++)
            wrong += reached[i] ? !std::isnan(got_dx[i])
                                : !(std::fabs(got_dx[i] - dx[i]) <= 1e-5 * dx_size[i]);
        (wrong ? failed : passed)++;
        printf("backward dx, NaN in w[0, 0, 0, 0]: %lld wrong: %s\n", (long long)wrong,
               wrong ? "FAILED" : "ok");

        /* A NaN pixel reaches only the weights of the taps whose windows cover it, as in PyTorch.
         * Winograd's dw (3x3, stride 1, 16 channels and filters or more) would carry the last
         * pixel of a padded plane into tap row and column 0 as well, through products whose
         * coefficient is exactly 0: its pass for a non-finite x recomputes dw by the definition. */
        x[last] = NAN;
        got_dw.assign(w.size(), NAN);
        status = s2c_cuda_conv2d_backward(x.data(), w.data(), dy.data(), got_dx.data(),
                                          got_dw.data(), got_db.data(), scratch.data(), &g);
        x[last] = pixel;
        wrong = status == S2C_CUDA_OK ? 0 : 1;
        for (size_t wi = 0; wi < w.size(); wi++) {
            int64_t c = wi / (R * S) % C, r = wi % (R * S) / S, q = wi % S;
            int64_t oh = H - 1 - r + g.padding, ow = W - 1 - q + g.padding; /* times stride */
            bool covers = oh >= 0 && ow >= 0 && oh % g.stride == 0 && ow % g.stride == 0 &&
                          oh / g.stride < OH && ow / g.stride < OW;
            wrong += c == 0 && covers ? !std::isnan(got_dw[wi])
                                      : !(std::fabs(got_dw[wi] - dw[wi]) <= 1e-5 * dw_size[wi]);
        }
        (wrong ? failed : passed)++;
        printf("backward dw, NaN in x[0, 0, %lld, %lld]: %lld wrong: %s\n", (long long)H - 1,
               (long long)W - 1, (long long)wrong, wrong ? "FAILED" : "ok");
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}

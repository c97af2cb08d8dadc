/* A stand-in for cuFFT on the CPU (tests/test_conv_cuda.py): cufftPlanMany for 2-D transforms in
 * cuFFT's default layouts, cufftSetStream doing nothing, cufftExecR2C and cufftExecC2R as direct
 * DFTs in double precision, with cuFFT's conventions: the forward transform e^{-2 pi i f x / n}, the inverse e^{+2 pi i}, neither
 * normalized, a real plane's spectrum [n0][n1/2 + 1] (the rest is its conjugate mirror). Slow
 * (n^4 per plane), exact enough to check what conv/05_fft.cu does around the transforms. */
#include <cmath>
#include <complex>
#include <map>

namespace {
struct Plan {
    int n0, n1, batch;
};
std::map<int, Plan> plans;

std::complex<double> turn(double fraction) { return std::polar(1.0, 2 * M_PI * fraction); }
} // namespace

extern "C" int cufftPlanMany(int *plan, int rank, int *n, int *, int, int, int *, int, int, int,
                             int batch)
{
    if (rank != 2) return 1;
    *plan = (int)plans.size() + 1;
    plans[*plan] = {n[0], n[1], batch};
    return 0;
}

extern "C" int cufftSetStream(int, void *) { return 0; }

extern "C" int cufftExecR2C(int plan, float *in, float *out)
{
    Plan p = plans.at(plan);
    int half = p.n1 / 2 + 1;
    for (int b = 0; b < p.batch; b++)
        for (int f0 = 0; f0 < p.n0; f0++)
            for (int f1 = 0; f1 < half; f1++) {
                std::complex<double> sum = 0;
                for (int a = 0; a < p.n0; a++)
                    for (int c = 0; c < p.n1; c++)
                        sum += (double)in[(b * p.n0 + a) * p.n1 + c] *
                               turn(-((double)f0 * a / p.n0 + (double)f1 * c / p.n1));
                float *value = out + 2 * ((b * p.n0 + f0) * half + f1);
                value[0] = (float)sum.real(), value[1] = (float)sum.imag();
            }
    return 0;
}

extern "C" int cufftExecC2R(int plan, float *in, float *out)
{
    Plan p = plans.at(plan);
    int half = p.n1 / 2 + 1;
    for (int b = 0; b < p.batch; b++)
        for (int a = 0; a < p.n0; a++)
            for (int c = 0; c < p.n1; c++) {
                double sum = 0;
                for (int f0 = 0; f0 < p.n0; f0++)
                    for (int f1 = 0; f1 < p.n1; f1++) {
                        bool mirrored = f1 >= half; /* X[f0, f1] = conj X[-f0, -f1] */
                        int g0 = mirrored ? (p.n0 - f0) % p.n0 : f0, g1 = mirrored ? p.n1 - f1 : f1;
                        const float *value = in + 2 * ((b * p.n0 + g0) * half + g1);
                        std::complex<double> x(value[0], mirrored ? -value[1] : value[1]);
                        sum += (x * turn((double)f0 * a / p.n0 + (double)f1 * c / p.n1)).real();
                    }
                out[(b * p.n0 + a) * p.n1 + c] = (float)sum;
            }
    return 0;
}

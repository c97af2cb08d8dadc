/* cufft_runtime.h -- the few cuFFT types and functions rung 5 uses, declared here and loaded at
 * run time (dlopen) instead of through cufft.h and -lcufft.
 *
 * Why: the machines that build this library need not have cuFFT's header (the CUDA toolkit of
 * CI's compile check has none), and the GPU machine has libcufft only inside pip's
 * nvidia-cufft package, where no linker looks. Loading it at run time keeps the rest of the
 * library loadable without it: only rung 5 fails, with a message naming it. The declarations
 * follow cufft.h of CUDA 11-13 (the types and values below have not changed since CUDA 7). */
#ifndef S2C_CUFFT_RUNTIME_H
#define S2C_CUFFT_RUNTIME_H

typedef int cufftHandle;
typedef int cufftResult;   /* 0 is CUFFT_SUCCESS */
typedef float2 cufftComplex;
enum cufftType { CUFFT_R2C = 0x2a, CUFFT_C2R = 0x2c };

/* The functions, as pointers filled by s2c_cuda_load_cufft. */
struct cufft_functions {
    cufftResult (*plan_many)(cufftHandle *plan, int rank, int *n, int *inembed, int istride,
                             int idist, int *onembed, int ostride, int odist, cufftType type,
                             int batch);                                   /* cufftPlanMany */
    cufftResult (*exec_r2c)(cufftHandle plan, float *in, cufftComplex *out); /* cufftExecR2C */
    cufftResult (*exec_c2r)(cufftHandle plan, cufftComplex *in, float *out); /* cufftExecC2R */
    cufftResult (*set_stream)(cufftHandle plan, cudaStream_t stream);        /* cufftSetStream */
};

#endif

/* errors.cu -- the message of the last CUDA failure (common.h), one per host thread. */
#include "common.h"

static thread_local char last_error[512];

void s2c_cuda_set_error(const char *what, cudaError_t error) {
    snprintf(last_error, sizeof last_error, "%s: %s (%s)", what, cudaGetErrorString(error),
             cudaGetErrorName(error));
}

extern "C" const char *s2c_cuda_error_message(void) { return last_error; }

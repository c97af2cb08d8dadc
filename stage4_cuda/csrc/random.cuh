/* random.cuh -- the shared random stream of contract/CONTRACT.md as device functions (given, as in
 * every tier): splitmix64 over a counter. Number i of stream `seed` depends on (seed, i) only, so
 * each thread computes its own numbers with no generator state, and a dropout mask or a weight
 * matrix made here equals the CPU tiers' (stage3_c/csrc/random_stream.c). Unsigned arithmetic
 * wraps modulo 2^64, as the definition asks. */
#ifndef S2C_CUDA_RANDOM_CUH
#define S2C_CUDA_RANDOM_CUH

#include "common.h"

#define GOLDEN 0x9E3779B97F4A7C15ULL
#define TWO_PI 6.283185307179586476925286766559

__device__ inline uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* The stream's key, computed once per thread and shared by its draws. */
__device__ inline uint64_t stream_key(uint64_t seed) { return mix(seed + GOLDEN); }

/* Number i of the stream, uniform in [0, 1): the top 24 bits, a multiple of 2^-24 (exact in
 * float32). */
__device__ inline double stream_uniform(uint64_t key, uint64_t i) {
    return (double)(mix(key + (i + 1) * GOLDEN) >> 40) * (1.0 / 16777216.0);
}

/* A standard normal number by Box-Muller from uniform numbers 2i and 2i + 1 (1 - u is in (0, 1],
 * so the log is finite). */
__device__ inline double stream_normal(uint64_t key, uint64_t i) {
    double radius = stream_uniform(key, 2 * i), angle = stream_uniform(key, 2 * i + 1);
    return sqrt(-2.0 * log(1.0 - radius)) * cos(TWO_PI * angle);
}

#endif

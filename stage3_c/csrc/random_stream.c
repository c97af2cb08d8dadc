/* random_stream.c -- the shared random stream of contract/CONTRACT.md (written in week 4, given
 * here): splitmix64 over a counter. Number i depends only on (seed, i), so every tier computes
 * the same numbers, in any order, from any thread. unsigned arithmetic wraps modulo 2^64, which
 * is exactly what the definition asks for. */
#include <math.h>

#include "internal.h"

#define GOLDEN 0x9E3779B97F4A7C15ULL
#define TWO_PI 6.283185307179586476925286766559

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

uint64_t s2c_random_bits(uint64_t seed, uint64_t i)
{
    uint64_t key = mix(seed + GOLDEN);
    return mix(key + (i + 1) * GOLDEN);
}

double s2c_uniform(uint64_t seed, uint64_t i)
{
    /* the top 24 bits: a multiple of 2^-24, so exactly representable in float32 */
    return (double)(s2c_random_bits(seed, i) >> 40) * 0x1p-24;
}

double s2c_normal(uint64_t seed, uint64_t i)
{
    /* Box-Muller; 1 - u is in (0, 1], so the log is finite */
    double u1 = s2c_uniform(seed, 2 * i), u2 = s2c_uniform(seed, 2 * i + 1);
    return sqrt(-2.0 * log(1.0 - u1)) * cos(TWO_PI * u2);
}

/* egg_math.h — the integer math of EGG and EGGROLL, written once.
 *
 * Included by the C host code (CPU reference backend) and by the CUDA and HIP
 * kernels, so every backend computes the same numbers bit for bit. Everything
 * here is integer-only and side-effect free. docs/ALGORITHM.md restates it.
 *
 * Conventions: int8 values live in -127..127; ">>" on a negative value is an
 * arithmetic shift (floor division by a power of two: GCC, Clang, NVCC and
 * HIP-Clang all guarantee it); "/" is C division (truncates toward zero). */
#ifndef EGG_MATH_H
#define EGG_MATH_H
#include <stdint.h>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define EGG_HD __host__ __device__ __forceinline__
#define EGG_CONST_TABLE static __device__ __constant__ const
#else
#define EGG_HD static inline
#define EGG_CONST_TABLE static const
#endif

#include "egg_tables.h"

/* ---------------------------------------------------------------- basics */

EGG_HD int egg_clip8(int32_t v) { return v < -127 ? -127 : (v > 127 ? 127 : v); }
EGG_HD int egg_clip8_64(int64_t v) { return v < -127 ? -127 : (v > 127 ? 127 : (int)v); }
EGG_HD int egg_sign32(int64_t v) { return (v > 0) - (v < 0); }

/* Smallest c with 2^c >= n (n >= 1). */
EGG_HD int egg_ceil_log2(uint32_t n) {
    int c = 0;
    while (((uint64_t)1 << c) < n) c++;
    return c;
}

/* The MM output shift: y = (acc) >> s approximates acc / (16*sqrt(in)).
 * s = 4 + ceil(ceil_log2(in) / 2); exact for in a power of 4
 * (in = 256 -> 8, 1024 -> 9, 4096 -> 10), rounds sqrt(2) up otherwise. */
EGG_HD int egg_mm_shift(uint32_t in) { return 4 + (egg_ceil_log2(in) + 1) / 2; }

/* ------------------------------------------------------------ noise hash */

/* splitmix64's finaliser: a bijective 64-bit mixer. */
EGG_HD uint64_t egg_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#define EGG_GOLDEN 0x9e3779b97f4a7c15ull
/* Noise "epoch" reserved for parameter initialisation. */
#define EGG_INIT_EPOCH 0xffffffffu

/* Key of one noise vector: a pure function of (seed, epoch, tensor, pair).
 * epoch = step / noise_reuse. */
EGG_HD uint64_t egg_noise_key(uint64_t seed, uint32_t epoch, uint32_t tensor, uint32_t pair) {
    uint64_t k = egg_mix64(seed ^ 0x6567675f6e6f6973ull);          /* "egg_nois" */
    k = egg_mix64(k ^ (((uint64_t)epoch << 32) | tensor));
    return egg_mix64(k + (uint64_t)pair * EGG_GOLDEN);
}

/* Noise value at index idx of the vector with this key: the sum of twelve
 * uniform 4-bit values (low 48 bits of a hash) minus their mean 90. Mean 0,
 * variance 12 * 255/12 = 255 (sd 15.97, i.e. ~N(0, 16^2)), range -90..90.
 * egg_noise_at takes the hash input z = key + (idx + 1) * EGG_GOLDEN: a run of
 * indices is a run of z a golden step apart (GPU kernels walk it with one
 * 64-bit add per value). */
EGG_HD int egg_noise_at(uint64_t z) {
    const uint64_t h = egg_mix64(z);
#if defined(__CUDA_ARCH__) && !defined(__HIPCC__)
    /* CUDA: the twelve nibbles' sum from four dp4a (the multiply pipe) instead of ~9 ALU instructions: with b a byte,
     * b + 15 (b & 15) = 16 (its two nibbles' sum), so 16 s = sum(bytes) + 15 sum(low nibbles). The high word's top
     * bytes have weight 0 (no mask), and the sum starts at -16 * 90, so 16 (s - 90) >> 4 is the value (no subtraction) */
    const uint32_t lo = (uint32_t)h, hi = (uint32_t)(h >> 32);
    uint32_t a = __dp4a(lo, 0x01010101u, 0u - 16u * 90u);
    a = __dp4a(hi, 0x00000101u, a);
    a = __dp4a(lo & 0x0f0f0f0fu, 0x0f0f0f0fu, a);
    a = __dp4a(hi & 0x0f0f0f0fu, 0x00000f0fu, a);
    return (int)a >> 4;
#else
    /* in 32-bit words (a GPU has no 64-bit integer unit): nibble pairs to bytes (<= 30), the two high
     * bytes' sums added into the low word's (<= 60), then its four bytes summed (<= 180) by a multiply */
    const uint32_t lo = (uint32_t)h, hi = (uint32_t)(h >> 32) & 0xffffu;
    const uint32_t s = (lo & 0x0f0f0f0fu) + ((lo >> 4) & 0x0f0f0f0fu) + (hi & 0x0f0fu) + ((hi >> 4) & 0x0f0fu);
    return (int)((s * 0x01010101u) >> 24) - 90;
#endif
}
EGG_HD int egg_noise(uint64_t key, uint32_t idx) { return egg_noise_at(key + (uint64_t)(idx + 1) * EGG_GOLDEN); }

/* ------------------------------------------------------------- EGG-LN */

/* Divisor of EGG-LN: d = max(1, sum|x_i| / n) (integer division). */
EGG_HD int32_t egg_ln_div(int32_t sum_abs, int32_t n) {
    int32_t d = sum_abs / n;
    return d < 1 ? 1 : d;
}
/* y_i = clip((x_i * w_i) / d), C division (toward zero). */
EGG_HD int egg_ln_apply(int x, int w, int32_t d) { return egg_clip8((x * w) / d); }

/* Exact truncating division of 0 <= a < 2^14 by 2 <= d <= 255 in 16-bit
 * arithmetic (the vectorised LN uses it): with j = ceil(log2 d) - 1 and
 * M = floor(2^(16+j) / d) + 1 (< 2^16), a / d == ((a * M) >> 16) >> j, because
 * the error a * (M - 2^(16+j)/d) / 2^(16+j) < 2^(-2-j) stays below 1/d.
 * tests/test_unit.c checks every a and d. */
typedef struct { uint16_t M; int j; } egg_div16;
EGG_HD egg_div16 egg_div16_make(int32_t d) {
    egg_div16 r;
    r.j = egg_ceil_log2((uint32_t)d) - 1;
    r.M = (uint16_t)((1u << (16 + r.j)) / (uint32_t)d + 1);
    return r;
}
EGG_HD uint32_t egg_div16_apply(uint32_t a, egg_div16 v) { return ((a * v.M) >> 16) >> v.j; }

/* ------------------------------------------------------------- minGRU */

/* g = ((f + 127) * h) >> 8 : the gated past, in -127..126. */
EGG_HD int egg_gru_gate(int f, int h) { return ((f + 127) * h) >> 8; }
/* h' = clip(h + ((f + 127) * (c - h)) >> 8) */
EGG_HD int egg_gru_mix(int f, int c, int h) { return egg_clip8(h + (((f + 127) * (c - h)) >> 8)); }

/* ------------------------------------------------- perturbed MM epilogue */

/* y = clip((acc + pert) >> s) with pert = p >> (4 + sigma_shift), where acc is
 * x.W^T (int32) and p = sign * sum_j (x.B_j) * A_oj (int64; sign folded into A). */
EGG_HD int egg_mm_out(int32_t acc, int64_t p, int pert_shift, int s) {
    int64_t v = (int64_t)acc + (p >> pert_shift);
    return egg_clip8_64(v >> s);
}

/* Perturbed vector element (bias or LN weight): clip(w + (sign*n1*n2) >> (4+sigma_shift)). */
EGG_HD int egg_vec_pert(int w, int n1, int n2, int sign, int pert_shift) {
    return egg_clip8(w + ((sign * n1 * n2) >> pert_shift));
}

/* ------------------------------------------------------------- update */

/* floor(sqrt(v)) for v >= 0, exactly. */
EGG_HD int64_t egg_isqrt64(int64_t v) {
    int64_t r = 0;
    while ((r + 1) * (r + 1) <= v) r++;
    return r;
}
/* A weight moves where |Z| * 16 >= tau * floor(sqrt(pairs)) * 256 (int64). */
EGG_HD int64_t egg_vote_threshold(int tau, int pairs) { return (int64_t)tau * egg_isqrt64(pairs) * 256; }

/* --------------------------------------------------------------- loss */

/* floor(16 * log2(s)) for s >= 1, exactly: integer part from the bit length,
 * four fractional bits by comparing the Q63-normalised mantissa with the
 * exact thresholds ceil(2^(63 + m/16)). */
EGG_HD int32_t egg_floor16_log2(uint64_t s) {
#if defined(__CUDA_ARCH__)
    const int k = 63 - __clzll((long long)s); /* index of the highest set bit */
#elif defined(__GNUC__) || defined(__clang__)
    const int k = 63 - __builtin_clzll(s);
#else
    int k = 63;
    while (!((s >> k) & 1)) k--;
#endif
    uint64_t mant = s << (63 - k);
    int m = 0;
    for (int j = 1; j < 16; j++) m += mant >= EGG_LOG2C[j];
    return 16 * k + m;
}

/* Log-likelihood of the target in 1/16 bits, given S = sum_v EXP2[logit_v + 128]:
 * ll = (logit_t + 128) - floor(16 * log2(S / 16)). Always <= 0 up to rounding. */
EGG_HD int32_t egg_loglik(int logit_target, uint64_t sum_exp2) {
    return (logit_target + 128) - (egg_floor16_log2(sum_exp2) - 64);
}

#endif

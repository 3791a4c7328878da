/* egg_ln_div.cuh — EGG-LN's division (x w) / d as an exact multiply-shift, and its
 * constant tables of the multipliers for every divisor.
 * Part of the CUDA backend: included once by kernels/cuda/egg_cuda.cu (one translation unit). */
#ifndef EGG_LN_DIV_CUH
#define EGG_LN_DIV_CUH

/* egg_ln_apply, (x * w) / d truncating and clipped, as the exact multiply-shift
 * of egg_div16 (as in the CPU's vectorised LN: every int8 value the model holds
 * is in -127..127, so |x w| < 2^14): |x w| * M < 2^30, so egg_div16's two shifts
 * are one, and d = 1 is M = 2^16 with the same shift */
struct lnq { uint32_t M; int sh; };
__device__ __forceinline__ lnq lnq_make(int32_t d) {
    if (d <= 1) return {65536u, 16};
    const egg_div16 v = egg_div16_make(d);
    return {v.M, 16 + v.j};
}
__device__ __forceinline__ int ln_apply(int x, int w, lnq q) {
    const int p = x * w;
    const int r = min((int)(((uint32_t)abs(p) * q.M) >> q.sh), 127);
    return p < 0 ? -r : r;
}
union w4u { int w; signed char b[4]; };
union bytes16 { int4 v; signed char b[16]; };
#if !defined(__HIPCC__)
#include "cuda/egg_ln.cuh" /* abs_sum4w, ln_word */
#endif
__device__ __forceinline__ int abs_sum4(w4u u) { /* |b0| + |b1| + |b2| + |b3| */
#if defined(__HIPCC__)
    return abs(u.b[0]) + abs(u.b[1]) + abs(u.b[2]) + abs(u.b[3]);
#else
    return abs_sum4w((unsigned)u.w);
#endif
}

#if !defined(__HIPCC__) && !defined(EGG_GEMM_AMD_PLAN)
/* lnq_make(d) for every divisor a row of int8 can give (d = 1..127: |x| <= 127), set once per device */
__constant__ lnq c_lnq[128];
#define LNQ(d) c_lnq[d]
__constant__ int c_lnm[128]; /* ln_mq(d) for those divisors (ln_word) */
#define LNM(d) c_lnm[d]
#else
#define LNQ(d) lnq_make(d)
#define LNM(d) ln_mq(d)
#endif

#endif /* EGG_LN_DIV_CUH */

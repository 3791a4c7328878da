/* egg: EGG-LN's byte arithmetic on CUDA (every arch the build targets), on four int8 of a word at a time: the row's
 * sum of absolute values and egg_ln_apply. Included by kernels/cuda/egg_ln_div.cuh and by tests/cuda_lanes.cu, which
 * checks both exhaustively against the CPU reference (src/egg_math.h). */
#ifndef EGG_LN_CUH
#define EGG_LN_CUH
/* |b0| + |b1| + |b2| + |b3| of the word's int8: the bytes times their signs (-1 where negative, else 1: each byte's
 * sign spread by a prmt, or 1) by one dp4a, 3 instructions (__vabsss4 and a dp4a of it by ones compiled to 5 on sm_90) */
__device__ __forceinline__ int abs_sum4w(unsigned x) {
    unsigned sg;
    asm("prmt.b32 %0, %1, 0, 0xba98;" : "=r"(sg) : "r"(x));
    return __dp4a((int)x, (int)(sg | 0x01010101u), 0);
}
/* d = c + a.lane0 b.byte(0 | 2) + a.lane1 b.byte(1 | 3) (lo | HI): int16 lanes of a times bytes of b (BU: unsigned) */
template <bool HI, bool BU = false>
__device__ __forceinline__ int dp2a(unsigned a, unsigned b, int c) {
    int d;
    if (HI && BU) asm("dp2a.hi.s32.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    else if (HI) asm("dp2a.hi.s32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    else if (BU) asm("dp2a.lo.s32.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    else asm("dp2a.lo.s32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}
/* egg_ln_apply (clip8((x w) / d), C division) of two bytes of a row's word x with the same bytes of its weights' word
 * w, given the row's mq = 2^24 / d + 1: (x w) / d = ((256 x w) mq >> 32) + (x w < 0), exact for every int8 x, w and
 * d = 1..127 (|256 x w| <= 2^22). 256 x w is one dp2a a byte: the lanes of 256 x (x's bytes as the lanes' high bytes,
 * one prmt for two) against w's two bytes as {w0, 0, 0, w1} (one prmt): ~6 instructions a byte, where two prmt and
 * an IMAD a byte took ~7. Unclipped here: |.| <= 128^2 */
template <int k> /* bytes 2k (q0), 2k + 1 (q1) */
__device__ __forceinline__ void ln_pair(unsigned x, unsigned w, int mq, int &q0, int &q1) {
    unsigned x256, w2;
    asm("prmt.b32 %0, %1, 0, %2;" : "=r"(x256) : "r"(x), "n"(k ? 0x3424 : 0x1404));
    asm("prmt.b32 %0, %1, 0, %2;" : "=r"(w2) : "r"(w), "n"(k ? 0x3442 : 0x1440));
    const int p0 = dp2a<false>(x256, w2, 0), p1 = dp2a<true>(x256, w2, 0);
    q0 = __mulhi(p0, mq) + (int)((unsigned)p0 >> 31);
    q1 = __mulhi(p1, mq) + (int)((unsigned)p1 >> 31);
}
/* the row's mq for a divisor d = 1..127 */
__host__ __device__ __forceinline__ int ln_mq(int d) { return (1 << 24) / d + 1; }
/* the four bytes of a word, clipped (sm_90: two at a time on int16 lanes) */
__device__ __forceinline__ unsigned ln_word(unsigned x, unsigned w, int mq) {
    int q0, q1, q2, q3;
    ln_pair<0>(x, w, mq, q0, q1);
    ln_pair<1>(x, w, mq, q2, q3);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    auto clip2 = [](unsigned l) {
        unsigned d;
        asm("max.s16x2 %0, %1, %2;" : "=r"(d) : "r"(l), "r"(0xff81ff81u));
        asm("min.s16x2 %0, %0, %1;" : "+r"(d) : "r"(0x007f007fu));
        return d;
    };
    return __byte_perm(clip2(__byte_perm((unsigned)q0, (unsigned)q1, 0x5410u)), clip2(__byte_perm((unsigned)q2, (unsigned)q3, 0x5410u)),
                       0x6420u);
#else
    auto c = [](int q) { return (unsigned)min(max(q, -127), 127); };
    return __byte_perm(__byte_perm(c(q0), c(q1), 0x0040u), __byte_perm(c(q2), c(q3), 0x0040u), 0x5410u);
#endif
}
#endif

/* egg: byte and int16-lane arithmetic for sm_90 kernels, the chunk recurrence's gate and mix on four members'
 * bytes at a time, and the residual's clipped add. Included by kernels/cuda/egg_sm90.cuh (the sm_90a section)
 * and by tests/cuda_lanes.cu, which checks rec_gate4, rec_mix4, their forms from eb_lanes (rec_gate4s, rec_mix4s)
 * and add_clip4_lanes exhaustively against the CPU reference (src/egg_math.h), and epi_quad_r at the bounds of its
 * domain against egg_mm_out. */
#ifndef EGG_LANES_CUH
#define EGG_LANES_CUH
#include "cuda/egg_ln.cuh"  /* dp2a */
#include "cuda/egg_epi.cuh" /* pack2_clip8 */
/* Byte and 16-bit-lane arithmetic of the chunk recurrence's passes, the GEMM epilogues at output shift 8 and
 * the recurrence's EGG-LN (sm_90: VIADD.16x2, VIADDMNMX.S16x2 and VIMNMX.S16x2 work on two int16 lanes per instruction; prmt
 * moves bytes, a selector nibble's bit 3 replicating the chosen byte's sign). A word of four int8 is two words
 * of int16 lanes (lo2: bytes 0, 1; hi2: bytes 2, 3). */
template <unsigned SEL> __device__ __forceinline__ unsigned prmt(unsigned a, unsigned b) {
    unsigned d;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "n"(SEL));
    return d;
}
__device__ __forceinline__ unsigned lo2(unsigned w) { return prmt<0x9180>(w, 0); }
__device__ __forceinline__ unsigned hi2(unsigned w) { return prmt<0xb3a2>(w, 0); }
/* the low bytes of the lanes of l (bytes 0, 1) and h (bytes 2, 3): lanes in -128..127 back to int8 */
__device__ __forceinline__ unsigned pack4(unsigned l, unsigned h) { return prmt<0x6420>(l, h); }
__device__ __forceinline__ unsigned add2(unsigned a, unsigned b) {
    unsigned d;
    asm("add.s16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
}
/* clip8(a + b) per lane */
__device__ __forceinline__ unsigned clip2_add(unsigned a, unsigned b) {
    unsigned d;
    asm("min.s16x2 %0, %1, %2;" : "=r"(d) : "r"(__viaddmax_s16x2(a, b, 0xff81ff81u)), "r"(0x007f007fu));
    return d;
}
/* int8 k of w sign-extended */
template <int k> __device__ __forceinline__ int sx8(unsigned w) { return (int)prmt<(8 | k) * 0x1110 | k>(w, 0); }
/* bytes 0, 1 (k = 0) or 2, 3 (k = 1) of w as {w_2k, 0, 0, w_2k+1}: the b operand of a lane pair's dp2a (egg_ln.cuh),
 * whose lo is then a's lane 0 times w_2k and hi its lane 1 times w_2k+1: each lane's own product, one instruction
 * each, with no byte sign-extended on its own */
template <int k> __device__ __forceinline__ unsigned dp2b(unsigned w) { return prmt<k ? 0x3442 : 0x1440>(w, 0); }
/* the gate's products from the int16 lanes l (bytes 0, 1), u (bytes 2, 3) of f + 127 (0..254) and the state h's
 * bytes: p = f + 127 as bytes, returns g = ((f + 127) h) >> 8 (egg_gru_gate). Each product (f + 127) h (|.| < 2^15)
 * is one dp2a of the lanes of f + 127 and h's bytes; g is its byte 1 */
__device__ __forceinline__ unsigned rec_gate_lanes(unsigned l, unsigned u, unsigned h, unsigned &p) {
    p = pack4(l, u);
    const unsigned h01 = dp2b<0>(h), h23 = dp2b<1>(h);
    const int q0 = dp2a<false>(l, h01, 0), q1 = dp2a<true>(l, h01, 0), q2 = dp2a<false>(u, h23, 0), q3 = dp2a<true>(u, h23, 0);
    return prmt<0x5410>(prmt<0x0051>((unsigned)q0, (unsigned)q1), prmt<0x0051>((unsigned)q2, (unsigned)q3));
}
/* the chunk recurrence's phase 0 on four members' bytes: y = Uf.h (int8, as int16 lanes yl: bytes 0, 1, yu: 2, 3),
 * e = Wf.x, b = bf, h = state: f = clip8(y + e + b); returns the gate g = ((f + 127) h) >> 8 (egg_gru_gate) and
 * p = f + 127 (0..254) */
__device__ __forceinline__ unsigned rec_gate4(unsigned yl, unsigned yu, unsigned e, unsigned b, unsigned h, unsigned &p) {
    const unsigned l = add2(clip2_add(add2(yl, lo2(e)), lo2(b)), 0x007f007fu);
    const unsigned u = add2(clip2_add(add2(yu, hi2(e)), hi2(b)), 0x007f007fu);
    return rec_gate_lanes(l, u, h, p);
}
/* e + b + K (K in each lane) of the gate or the mix on four members' bytes as two words of int16 lanes (l: bytes 0, 1;
 * u: 2, 3): they do not wait for the MMA, so rreg_kernel adds them while it runs (PIN: the adds as volatile asm, which
 * the compiler keeps before the MMA's wait, itself volatile asm) */
struct eb2 { unsigned l, u; };
template <unsigned K = 0, bool PIN = false> __device__ __forceinline__ eb2 eb_lanes(unsigned e, unsigned b) {
    const unsigned k = K * 0x00010001u;
    unsigned l, u;
    if (PIN) {
        asm volatile("add.s16x2 %0, %1, %2;" : "=r"(l) : "r"(lo2(e)), "r"(add2(lo2(b), k)));
        asm volatile("add.s16x2 %0, %1, %2;" : "=r"(u) : "r"(hi2(e)), "r"(add2(hi2(b), k)));
    } else {
        l = add2(add2(lo2(e), lo2(b)), k);
        u = add2(add2(hi2(e), hi2(b)), k);
    }
    return {l, u};
}
/* rec_gate4 from s = e + b + 127 (eb_lanes<127>): f + 127 is y + s clipped to 0..254, two instructions a lane pair
 * after the MMA where rec_gate4 has five */
__device__ __forceinline__ unsigned rec_gate4s(unsigned yl, unsigned yu, eb2 s, unsigned h, unsigned &p) {
    unsigned l, u;
    asm("min.s16x2 %0, %1, %2;" : "=r"(l) : "r"(__viaddmax_s16x2(yl, s.l, 0u)), "r"(0x00fe00feu));
    asm("min.s16x2 %0, %1, %2;" : "=r"(u) : "r"(__viaddmax_s16x2(yu, s.u, 0u)), "r"(0x00fe00feu));
    return rec_gate_lanes(l, u, h, p);
}
/* the mix from the int16 lanes cl, cu of c (clip8(y + e + b)), p = f + 127 (rec_gate4), h = state, x = the layer's
 * input: h' = clip8(h + (((f + 127)(c - h)) >> 8)) (egg_gru_mix), returned as two int16-lane words; r = clip8(h' + x)
 * as bytes. (c - h) p (|.| <= 254^2 < 2^23) is one dp2a of the lanes of c - h and p's bytes (unsigned), its >> 8
 * bytes 1, 2 as an int16 lane; h' = h + that lies between c and h, so it needs no clip */
__device__ __forceinline__ void rec_mix_lanes(unsigned cl, unsigned cu, unsigned p, unsigned h, unsigned x, unsigned &hl, unsigned &hu,
                                              unsigned &r) {
    const unsigned h2l = lo2(h), h2u = hi2(h);
    const unsigned dl = __vsub2(cl, h2l), du = __vsub2(cu, h2u); /* one VIADD.16x2 each on sm_90 */
    const unsigned p01 = dp2b<0>(p), p23 = dp2b<1>(p);
    const int t0 = dp2a<false, true>(dl, p01, 0), t1 = dp2a<true, true>(dl, p01, 0);
    const int t2 = dp2a<false, true>(du, p23, 0), t3 = dp2a<true, true>(du, p23, 0);
    hl = add2(prmt<0x6521>((unsigned)t0, (unsigned)t1), h2l);
    hu = add2(prmt<0x6521>((unsigned)t2, (unsigned)t3), h2u);
    r = pack4(clip2_add(hl, lo2(x)), clip2_add(hu, hi2(x)));
}
/* phase 1 on four members' bytes: y = Uh.g (as int16 lanes yl, yu), e = Wh.x, b = bh, p = f + 127, h = state,
 * x = the layer's input: c = clip8(y + e + b), then rec_mix_lanes */
__device__ __forceinline__ void rec_mix4(unsigned yl, unsigned yu, unsigned e, unsigned b, unsigned p, unsigned h, unsigned x,
                                         unsigned &hl, unsigned &hu, unsigned &r) {
    rec_mix_lanes(clip2_add(add2(yl, lo2(e)), lo2(b)), clip2_add(add2(yu, hi2(e)), hi2(b)), p, h, x, hl, hu, r);
}
/* rec_mix4 from s = e + b (eb_lanes<0>) */
__device__ __forceinline__ void rec_mix4s(unsigned yl, unsigned yu, eb2 s, unsigned p, unsigned h, unsigned x, unsigned &hl, unsigned &hu,
                                          unsigned &r) {
    rec_mix_lanes(clip2_add(yl, s.l), clip2_add(yu, s.u), p, h, x, hl, hu, r);
}
/* clip8(y + o) on four int8 lanes as two words of int16 lanes (add_clip4's __vaddss4 / __vmaxs4 have no sm_90
 * instruction and compile to ~20 integer instructions a word; this is 9) */
__device__ __forceinline__ unsigned add_clip4_lanes(unsigned y, unsigned o) {
    return pack4(clip2_add(lo2(y), lo2(o)), clip2_add(hi2(y), hi2(o)));
}
/* four adjacent outputs (v0 v1 u0 u1) of the rank-R epilogue (R = 2..4: the chunk recurrence and the persistent
 * GEMMs) as int8 bytes: clip8((v + (p >> ps)) >> s) with p = sum_j t_j A_j (Aw[j]: the four outputs' A bytes of rank j),
 * as egg_mm_out. p in 32 bits (W64 false) where |t_j A_j| <= 127 * 90 * K * 90 keeps |p| < 2^31: R K <= 2048 (K <= 512 at
 * rank 4, K <= 1024 at rank 2);
 * else in 64 bits, where p >> ps (ps >= 4) and its sum with v fit int32 for every K the model has (<= 4096) */
template <int R, bool W64>
__device__ __forceinline__ unsigned epi_quad_r(int v0, int v1, int u0, int u1, const unsigned (&Aw)[R], const int (&t)[R], int s, int ps) {
    int q0, q1, q2, q3;
    if (W64) {
        long long p0 = 0, p1 = 0, p2 = 0, p3 = 0;
#pragma unroll
        for (int j = 0; j < R; j++) {
            p0 += (long long)t[j] * sx8<0>(Aw[j]);
            p1 += (long long)t[j] * sx8<1>(Aw[j]);
            p2 += (long long)t[j] * sx8<2>(Aw[j]);
            p3 += (long long)t[j] * sx8<3>(Aw[j]);
        }
        q0 = (int)(p0 >> ps); q1 = (int)(p1 >> ps); q2 = (int)(p2 >> ps); q3 = (int)(p3 >> ps);
    } else {
        int p0 = 0, p1 = 0, p2 = 0, p3 = 0;
#pragma unroll
        for (int j = 0; j < R; j++) {
            p0 += t[j] * sx8<0>(Aw[j]);
            p1 += t[j] * sx8<1>(Aw[j]);
            p2 += t[j] * sx8<2>(Aw[j]);
            p3 += t[j] * sx8<3>(Aw[j]);
        }
        q0 = p0 >> ps; q1 = p1 >> ps; q2 = p2 >> ps; q3 = p3 >> ps;
    }
    return pack2_clip8((v0 + q0) >> s, (v1 + q1) >> s) | pack2_clip8((u0 + q2) >> s, (u1 + q3) >> s) << 16;
}
/* epi_quad_r8's t_j (R <= 4, |t_j| < 2^23) split as t_j = 256 th_j + tl_j, th_j = t_j >> 8 (an int16) and tl_j = t_j & 255,
 * two ranks a word as int16 lanes: .x th_0 th_1, .y th_2 th_3, .z tl_0 tl_1, .w tl_2 tl_3 (once a row) */
__device__ __forceinline__ int4 t_split(int4 t) {
    return make_int4((int)prmt<0x6521>((unsigned)t.x, (unsigned)t.y), (int)prmt<0x6521>((unsigned)t.z, (unsigned)t.w),
                     (int)(prmt<0x0400>((unsigned)t.x, (unsigned)t.y) & 0x00ff00ffu), (int)(prmt<0x0400>((unsigned)t.z, (unsigned)t.w) & 0x00ff00ffu));
}
/* epi_quad_r at s = 8 and ps = 8 (K <= 256; R = 2..4) from the accumulators v and ts = t_split(t): (v + (p >> 8)) >> 8 =
 * (256 v + p) >> 16 (the floors compose; |256 v + p| <= 256 * 127 * 127 * 256 + 4 * 127 * 90 * 256 * 90 < 2^31), and
 * 256 v + p = 256 (v + sum_j th_j A_j) + sum_j tl_j A_j. Each sum takes two ranks of an output in one dp2a (the ranks'
 * bytes of two outputs side by side, one prmt), where sign-extending each byte and multiplying took two instructions a
 * rank and output; all in 32-bit wrapping arithmetic, exact as the result fits int32. Bytes 2, 3 of each sum as int16
 * lanes, clipped there (as epi_lanes8<true>) */
template <int R> /* the four outputs as int16 lanes: l outputs 0, 1, u outputs 2, 3 (the recurrence's yl, yu) */
__device__ __forceinline__ void epi_quad_r8_lanes(int v0, int v1, int u0, int u1, const unsigned (&Aw)[R], int4 ts, unsigned &l, unsigned &u) {
    static_assert(R >= 2 && R <= 4, "ranks 2-4");
    /* outputs 0, 1 (lo, hi of c) and 2, 3 (of d) of ranks 0, 1 and of ranks 2, 3 (an odd R's last rank against 0) */
    const unsigned c01 = prmt<0x5140>(Aw[0], Aw[1]), d01 = prmt<0x7362>(Aw[0], Aw[1]);
    const unsigned a3 = R > 3 ? Aw[R > 3 ? 3 : 0] : 0u;
    const unsigned c23 = R > 2 ? prmt<0x5140>(Aw[R > 2 ? 2 : 0], a3) : 0u, d23 = R > 2 ? prmt<0x7362>(Aw[R > 2 ? 2 : 0], a3) : 0u;
    const unsigned th01 = (unsigned)ts.x, th23 = (unsigned)ts.y, tl01 = (unsigned)ts.z, tl23 = (unsigned)ts.w;
    v0 = dp2a<false>(th01, c01, v0); v1 = dp2a<true>(th01, c01, v1); u0 = dp2a<false>(th01, d01, u0); u1 = dp2a<true>(th01, d01, u1);
    if (R > 2) { v0 = dp2a<false>(th23, c23, v0); v1 = dp2a<true>(th23, c23, v1); u0 = dp2a<false>(th23, d23, u0); u1 = dp2a<true>(th23, d23, u1); }
    auto s8 = [](int x) { return (int)((unsigned)x << 8); };
    v0 = dp2a<false>(tl01, c01, s8(v0)); v1 = dp2a<true>(tl01, c01, s8(v1)); u0 = dp2a<false>(tl01, d01, s8(u0)); u1 = dp2a<true>(tl01, d01, s8(u1));
    if (R > 2) { v0 = dp2a<false>(tl23, c23, v0); v1 = dp2a<true>(tl23, c23, v1); u0 = dp2a<false>(tl23, d23, u0); u1 = dp2a<true>(tl23, d23, u1); }
    l = clip2_add(prmt<0x7632>((unsigned)v0, (unsigned)v1), 0);
    u = clip2_add(prmt<0x7632>((unsigned)u0, (unsigned)u1), 0);
}
/* epi_quad_r's t_j at K = 1024 split as t_j = 512 th_j + tl_j, th_j = t_j >> 9 and tl_j = t_j & 511, two ranks a word as
 * int16 lanes in t_split's order (once a row). |t_j| <= 127 * 127 * 1024 keeps th_j in -32258..32257: an int16 */
__device__ __forceinline__ int4 t_split9(int4 t) {
    auto hi = [](int a, int b) { return (int)prmt<0x5410>((unsigned)(a >> 9), (unsigned)(b >> 9)); };
    auto lo = [](int a, int b) { return (int)prmt<0x5410>((unsigned)(a & 511), (unsigned)(b & 511)); };
    return make_int4(hi(t.x, t.y), hi(t.z, t.w), lo(t.x, t.y), lo(t.z, t.w));
}
/* epi_quad_r at s = 9 and ps = 8 (K = 1024: the fused MLP's down at hidden 256, rank 2-4) from the accumulators v and
 * ts = t_split9(t), as int8 bytes: p = 512 H + L with H = sum_j th_j A_j and L = sum_j tl_j A_j, so p >> 8 = 2 H +
 * (L >> 8) (512 H is a multiple of 256) and the output clip8((v + 2 H + (L >> 8)) >> 9), all in 32 bits for every int8
 * operand (|H| <= 4 * 32258 * 127, |L| <= 4 * 511 * 127), where p itself needs 64 bits at rank 3-4. Each sum takes two
 * ranks of an output in one dp2a, as in epi_quad_r8_lanes */
template <int R>
__device__ __forceinline__ unsigned epi_quad_r9(int v0, int v1, int u0, int u1, const unsigned (&Aw)[R], int4 ts) {
    static_assert(R >= 2 && R <= 4, "ranks 2-4");
    const unsigned c01 = prmt<0x5140>(Aw[0], Aw[1]), d01 = prmt<0x7362>(Aw[0], Aw[1]);
    const unsigned a3 = R > 3 ? Aw[R > 3 ? 3 : 0] : 0u;
    const unsigned c23 = R > 2 ? prmt<0x5140>(Aw[R > 2 ? 2 : 0], a3) : 0u, d23 = R > 2 ? prmt<0x7362>(Aw[R > 2 ? 2 : 0], a3) : 0u;
    const unsigned th01 = (unsigned)ts.x, th23 = (unsigned)ts.y, tl01 = (unsigned)ts.z, tl23 = (unsigned)ts.w;
    int h[4] = {dp2a<false>(th01, c01, 0), dp2a<true>(th01, c01, 0), dp2a<false>(th01, d01, 0), dp2a<true>(th01, d01, 0)};
    int l[4] = {dp2a<false>(tl01, c01, 0), dp2a<true>(tl01, c01, 0), dp2a<false>(tl01, d01, 0), dp2a<true>(tl01, d01, 0)};
    if (R > 2) {
        h[0] = dp2a<false>(th23, c23, h[0]); h[1] = dp2a<true>(th23, c23, h[1]); h[2] = dp2a<false>(th23, d23, h[2]); h[3] = dp2a<true>(th23, d23, h[3]);
        l[0] = dp2a<false>(tl23, c23, l[0]); l[1] = dp2a<true>(tl23, c23, l[1]); l[2] = dp2a<false>(tl23, d23, l[2]); l[3] = dp2a<true>(tl23, d23, l[3]);
    }
    const int v[4] = {v0, v1, u0, u1};
    int y[4];
#pragma unroll
    for (int q = 0; q < 4; q++) y[q] = (v[q] + 2 * h[q] + (l[q] >> 8)) >> 9;
    return pack2_clip8(y[0], y[1]) | pack2_clip8(y[2], y[3]) << 16;
}
/* as int8 bytes */
template <int R>
__device__ __forceinline__ unsigned epi_quad_r8(int v0, int v1, int u0, int u1, const unsigned (&Aw)[R], int4 ts) {
    unsigned l, u;
    epi_quad_r8_lanes<R>(v0, v1, u0, u1, Aw, ts, l, u);
    return pack4(l, u);
}
#endif

/* egg: byte and int16-lane arithmetic for sm_90 kernels, the chunk recurrence's gate and mix on four members'
 * bytes at a time, and the residual's clipped add. Included by kernels/cuda/egg_cuda.cu (inside its sm_90a section)
 * and by tests/cuda_lanes.cu, which checks rec_gate4, rec_mix4 and add_clip4_lanes exhaustively against the CPU
 * reference (src/egg_math.h). */
#ifndef EGG_LANES_CUH
#define EGG_LANES_CUH
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
/* int8 k of w sign-extended; zero-extended */
template <int k> __device__ __forceinline__ int sx8(unsigned w) { return (int)prmt<(8 | k) * 0x1110 | k>(w, 0); }
template <int k> __device__ __forceinline__ int zx8(unsigned w) { return (int)prmt<0x4440 | k>(w, 0); }
/* the chunk recurrence's phase 0 on four members' bytes: y = Uf.h (int8, as int16 lanes yl: bytes 0, 1, yu: 2, 3),
 * e = Wf.x, b = bf, h = state: f = clip8(y + e + b); returns the gate g = ((f + 127) h) >> 8 (egg_gru_gate) and
 * p = f + 127 (0..254). g is byte 1 of the product (|(f + 127) h| < 2^15), taken from the lanes' words times h's
 * bytes: lane 0's product is the low half of l h0 (lane 1's part is a multiple of 2^16), lane 1's the high half of
 * l h1 + 2^15 (lane 0's part + 2^15 lies in 0 .. 2^16 - 1, so nothing carries into it), with no byte of p unpacked */
__device__ __forceinline__ unsigned rec_gate4(unsigned yl, unsigned yu, unsigned e, unsigned b, unsigned h, unsigned &p) {
    const unsigned l = add2(clip2_add(add2(yl, lo2(e)), lo2(b)), 0x007f007fu);
    const unsigned u = add2(clip2_add(add2(yu, hi2(e)), hi2(b)), 0x007f007fu);
    p = pack4(l, u);
    const unsigned q0 = l * (unsigned)sx8<0>(h), q1 = l * (unsigned)sx8<1>(h) + 0x8000u;
    const unsigned q2 = u * (unsigned)sx8<2>(h), q3 = u * (unsigned)sx8<3>(h) + 0x8000u;
    return prmt<0x5410>(prmt<0x0071>(q0, q1), prmt<0x0071>(q2, q3));
}
/* phase 1 on four members' bytes: y = Uh.g (as int16 lanes yl, yu), e = Wh.x, b = bh, p = f + 127 (rec_gate4),
 * h = state, x = the layer's input: c = clip8(y + e + b), h' = clip8(h + (((f + 127)(c - h)) >> 8)) (egg_gru_mix),
 * returned as two int16-lane words; r = clip8(h' + x) as bytes. With t = (c - h) p + 256 h = c p + h (256 - p) and
 * 0 <= p <= 254, t / 256 lies between c and h, so h' = t >> 8 needs no clip and is byte 1 of t mod 2^16: lane 0's t
 * from the word of c's lanes as it is (its low half), lane 1's in the high half of (c's lane 1 - h) 2^16 p + h 2^24 */
__device__ __forceinline__ void rec_mix4(unsigned yl, unsigned yu, unsigned e, unsigned b, unsigned p, unsigned h, unsigned x,
                                         unsigned &hl, unsigned &hu, unsigned &r) {
    const unsigned cl = clip2_add(add2(yl, lo2(e)), lo2(b)), cu = clip2_add(add2(yu, hi2(e)), hi2(b));
    const unsigned h0 = (unsigned)sx8<0>(h), h1 = (unsigned)sx8<1>(h), h2 = (unsigned)sx8<2>(h), h3 = (unsigned)sx8<3>(h);
    const unsigned t0 = (cl - h0) * (unsigned)zx8<0>(p) + (h0 << 8);
    const unsigned t1 = ((cl & 0xffff0000u) - (h1 << 16)) * (unsigned)zx8<1>(p) + (h1 << 24);
    const unsigned t2 = (cu - h2) * (unsigned)zx8<2>(p) + (h2 << 8);
    const unsigned t3 = ((cu & 0xffff0000u) - (h3 << 16)) * (unsigned)zx8<3>(p) + (h3 << 24);
    hl = prmt<0xf791>(t0, t1); /* byte 1 of t0 and byte 3 of t1, sign-extended to int16 lanes */
    hu = prmt<0xf791>(t2, t3);
    r = pack4(clip2_add(hl, lo2(x)), clip2_add(hu, hi2(x)));
}
/* clip8(y + o) on four int8 lanes as two words of int16 lanes (add_clip4's __vaddss4 / __vmaxs4 have no sm_90
 * instruction and compile to ~20 integer instructions a word; this is 9) */
__device__ __forceinline__ unsigned add_clip4_lanes(unsigned y, unsigned o) {
    return pack4(clip2_add(lo2(y), lo2(o)), clip2_add(hi2(y), hi2(o)));
}
#endif

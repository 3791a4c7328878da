/* egg: the rank-1 GEMM epilogue of two adjacent outputs, clip8((v + ((t A) >> ps)) >> s) (egg_mm_out of
 * src/egg_math.h), packed as two bytes: with t A in 32 bits (epi_pair; exact where |t A| < 2^31: K <= 2048, as
 * |x| <= 127 and |noise| <= 90) and in 64 bits (epi_pair_w; K > 2048). Included by kernels/cuda/egg_sm90.cuh and by
 * tests/cuda_lanes.cu, which checks both against egg_mm_out at the bounds of their domains. */
#ifndef EGG_EPI_CUH
#define EGG_EPI_CUH
/* bytes {clip8(u0), clip8(u1), 0, 0}: the lower bound by max, the upper by the
 * saturating pack (cvt.pack.sat; a byte-wise max after it costs 5 instructions on sm_90) */
__device__ __forceinline__ unsigned pack2_clip8(int u0, int u1) {
    unsigned d;
    asm("cvt.pack.sat.s8.s32.b32 %0, %1, %2, 0;" : "=r"(d) : "r"(max(u1, -127)), "r"(max(u0, -127)));
    return d;
}
/* two adjacent outputs of a rank-1 epilogue (R = 0: unperturbed): clip8((v + ((t A) >> ps)) >> s), packed as
 * two bytes; Aw holds their two A bytes */
template <int R>
__device__ __forceinline__ unsigned short epi_pair(int v0, int v1, unsigned short Aw, int t, int s, int ps) {
    if (R > 0) {
        v0 += (t * (int)(signed char)(Aw & 0xff)) >> ps;
        v1 += (t * (int)(signed char)(Aw >> 8)) >> ps;
    }
    return (unsigned short)pack2_clip8(v0 >> s, v1 >> s);
}
/* epi_pair<1> where t A may pass 2^31 (K > 2048: |t| <= 127 * 90 K, |A| <= 90): the product in 64 bits, shifted as
 * egg_mm_out does; (t A) >> ps (ps >= 4) and its sum with v fit int32 for every K the model has (<= 4096) */
__device__ __forceinline__ unsigned short epi_pair_w(int v0, int v1, unsigned short Aw, int t, int s, int ps) {
    v0 += (int)(((long long)t * (int)(signed char)(Aw & 0xff)) >> ps);
    v1 += (int)(((long long)t * (int)(signed char)(Aw >> 8)) >> ps);
    return (unsigned short)pack2_clip8(v0 >> s, v1 >> s);
}

#endif /* EGG_EPI_CUH */

/* egg_tile_map.h — lane index maps of the AMD tile code (kernels/hip/egg_tile_hip.h).
 *
 * The shared GEMM kernel keeps its operands in the fragment layout of NVIDIA's
 * mma.sync.m16n8k32.row.col.s32.s8.s8.s32 (PTX ISA, "Matrix Fragments for
 * mma.m16n8k32"): per logical warp of 32 lanes, lane = 4*g + t (g = groupID,
 * t = threadID_in_group), 32-bit words of 4 int8 along k ("kword" w = k / 4):
 *   A (16 x 32, row-major): a[r] = A[g + 8*(r&1)][kword t + 4*(r>>1)]   r = 0..3
 *   B (32 x 8, col-major):  b[r] = B[kword t + 4*r][col g]              r = 0..1
 *   C (16 x 8, int32):      c[r] = C[g + 8*(r>>1)][2*t + (r&1)]         r = 0..3
 *
 * AMD matrix instructions want other layouts (AMD ISA guides / matrix
 * instruction calculator; D[i][j] = sum_k A[i][k] * B[k][j]):
 *   v_mfma_i32_16x16x16i8 (wave64): A[i][k] lane i + 16*(k/4), byte k%4;
 *       B[k][j] lane j + 16*(k/4), byte k%4; D[i][j] lane j + 16*(i/4), reg i%4
 *   v_mfma_i32_16x16x32_i8 (wave64): as above with 8 bytes per lane:
 *       A[i][k] lane i + 16*(k/8), byte k%8 (word (k%8)/4); same for B; same D
 *   v_wmma_i32_16x16x16_iu8 (wave32): A[i][k] lanes i and i+16, byte k (word k/4);
 *       B[k][j] lanes j and j+16, byte k; D[i][j] lane j + 16*(i%2), reg i/2
 *
 * The tile code turns fragments into instruction operands and back with
 * ds_bpermute rounds: in round k every lane offers one of its registers
 * (*_offer: which one) and reads the offer of one lane (*_src); *_round says
 * which round's word becomes which operand word (-1: the word is zero). Each
 * schedule is a Latin square, so every lane reads one distinct word per round
 * and no round is wasted. Plain C, shared by the device code and by the CPU
 * emulation in tests/test_hip_tiles.c, which checks these maps against a
 * reference matmul under the documented layouts above.
 *
 * MFMA (wave64): the two logical warps h = 0, 1 of a wavefront compute their
 * own 16x8x32 tiles at once by concatenating along k: A' = [A0 | A1] (16x64),
 * B' = diag(B0, B1) (64x16), so D = A'B' = [A0 B0 | A1 B1]; half of B' is zero.
 * WMMA (wave32): one logical warp per wavefront; the product is taken
 * transposed, D' = B^T A^T (16x16, rows 8..15 zero), so that the 16x8 result
 * is dense in registers 0..3 of the 32 lanes. */
#ifndef EGG_TILE_MAP_H
#define EGG_TILE_MAP_H

#if defined(__HIPCC__) || defined(__CUDACC__)
#define EGG_TM_FN __host__ __device__ __forceinline__ int
#else
#define EGG_TM_FN static inline int
#endif

/* -------- v_mfma_i32_16x16x16i8: 4 instructions s = 0..3, k' in [16s, 16s+16) of A'/B'.
 * A operand of instruction s in lane L (i = L&15, q = L>>4): A_{s>>1}[i][kword 4*(s&1) + q]. */
EGG_TM_FN egg_tm_mf16_a_src(int L, int k) {
    const int i = L & 15, q = L >> 4, s = k ^ (2 * (i >> 3));
    return 32 * (s >> 1) + 4 * (i & 7) + q;
}
EGG_TM_FN egg_tm_mf16_a_offer(int L, int k) { return ((k >> 1) ^ (L >> 5)) + 2 * (k & 1); }
EGG_TM_FN egg_tm_mf16_a_round(int L, int s) { return s ^ (2 * ((L & 15) >> 3)); }
/* B operand of instruction s in lane L (j = L&15): B_{j>>3}[kword 4*(s&1) + q][j&7] if j>>3 == s>>1, else 0 */
EGG_TM_FN egg_tm_mf16_b_src(int L, int k) {
    const int j = L & 15, q = L >> 4;
    (void)k;
    return 32 * (j >> 3) + 4 * (j & 7) + q;
}
EGG_TM_FN egg_tm_mf16_b_offer(int L, int k) { (void)L; return k; }
EGG_TM_FN egg_tm_mf16_b_round(int L, int s) { return (s >> 1) == ((L & 15) >> 3) ? (s & 1) : -1; }

/* -------- v_mfma_i32_16x16x32_i8: 2 instructions s = 0, 1 (= the logical warp whose k
 * they cover); 64-bit operands, word ws = 0, 1. A: A_s[i][kword 2q + ws]. */
EGG_TM_FN egg_tm_mf32_a_src(int L, int k) {
    const int i = L & 15, q = L >> 4, m = 2 * (i >> 3) + (q >> 1), v = k ^ m;
    return 32 * (v >> 1) + 4 * (i & 7) + 2 * (q & 1) + (v & 1);
}
EGG_TM_FN egg_tm_mf32_a_offer(int L, int k) {
    const int m = k ^ (2 * (L >> 5) + (L & 1));
    return (m >> 1) + 2 * (m & 1);
}
EGG_TM_FN egg_tm_mf32_a_round(int L, int s, int ws) {
    const int i = L & 15, q = L >> 4;
    return (2 * s + ws) ^ (2 * (i >> 3) + (q >> 1));
}
/* B: B_s[kword 2q + ws][j&7] if j>>3 == s, else 0 (2 rounds) */
EGG_TM_FN egg_tm_mf32_b_src(int L, int k) {
    const int j = L & 15, q = L >> 4;
    return 32 * (j >> 3) + 4 * (j & 7) + 2 * (q & 1) + (k ^ (q >> 1));
}
EGG_TM_FN egg_tm_mf32_b_offer(int L, int k) { return k ^ (L & 1); }
EGG_TM_FN egg_tm_mf32_b_round(int L, int s, int ws) {
    const int j = L & 15, q = L >> 4;
    return s == (j >> 3) ? ws ^ (q >> 1) : -1;
}

/* -------- both MFMA shapes: D (16x16, lane j + 16*(i/4), reg i%4) back to c of logical
 * warp h = L>>5; 4 rounds, d register offered = _c_offer, c[r] = word of round _c_round. */
EGG_TM_FN egg_tm_mf_c_src(int L, int k) {
    const int h = L >> 5, g = (L >> 2) & 7, t = L & 3, r = (k + (g & 3)) & 3;
    return 8 * h + 2 * t + (r & 1) + 16 * ((g >> 2) + 2 * (r >> 1));
}
EGG_TM_FN egg_tm_mf_c_offer(int L, int k) { return ((L & 1) + 2 * (L >> 5) - k) & 3; }
EGG_TM_FN egg_tm_mf_c_round(int L, int r) { return (r - ((L >> 2) & 3)) & 3; }

/* -------- v_wmma_i32_16x16x16_iu8 (wave32, L = 0..31): 2 instructions s = 0, 1 (k half),
 * 128-bit operands, word w = 0..3. WMMA-A = B^T: lane n = L&15 < 8 holds B[kword 4s + w][n],
 * lanes n >= 8 zero; 8 rounds, lane offers b[k>>2]. */
EGG_TM_FN egg_tm_wm_a_src(int L, int k) { return 4 * (L & 7) + ((k & 3) ^ (L >> 4)); }
EGG_TM_FN egg_tm_wm_a_offer(int L, int k) { (void)L; return k >> 2; }
EGG_TM_FN egg_tm_wm_a_round(int L, int s, int w) { return (L & 15) < 8 ? 4 * s + (w ^ (L >> 4)) : -1; }
/* WMMA-B = A^T: lane m = L&15 holds A[m][kword 4s + w]; 8 rounds */
EGG_TM_FN egg_tm_wm_b_src(int L, int k) {
    const int m = L & 15;
    return 4 * (m & 7) + ((k & 3) ^ (2 * (m >> 3) + (L >> 4)));
}
EGG_TM_FN egg_tm_wm_b_offer(int L, int k) { return (((k ^ L) & 3) >> 1) + 2 * (k >> 2); }
EGG_TM_FN egg_tm_wm_b_round(int L, int s, int w) {
    const int m = L & 15;
    return 4 * s + (w ^ (2 * (m >> 3) + (L >> 4)));
}
/* D' = B^T A^T: D'[n][m] = C[m][n] in lane m + 16*(n&1), reg n>>1 (n < 8: regs 0..3) */
EGG_TM_FN egg_tm_wm_c_src(int L, int k) {
    const int g = (L >> 2) & 7, r = (k + (L & 3)) & 3;
    return g + 8 * (r >> 1) + 16 * (r & 1);
}
EGG_TM_FN egg_tm_wm_c_offer(int L, int k) { return (2 * ((L & 15) >> 3) + (L >> 4) - k) & 3; }
EGG_TM_FN egg_tm_wm_c_round(int L, int r) { return (r - (L & 3)) & 3; }

/* -------- fallback (any target, logical warp of 32 lanes): lane (g, t) gathers rows g and
 * g+8 of A and columns 2t, 2t+1 of B, then takes 32 dot4 products. Reads of round
 * (e, w) for A: lane egg_tm_fb_a_src(L, w), register e + 2*(w>>2) (the same in every
 * lane); for B column 2t + cb: lane egg_tm_fb_b_src(L, cb, w), register w>>2. */
EGG_TM_FN egg_tm_fb_a_src(int L, int w) { return 4 * ((L >> 2) & 7) + (w & 3); }
EGG_TM_FN egg_tm_fb_b_src(int L, int cb, int w) { return 4 * (2 * (L & 3) + cb) + (w & 3); }

#undef EGG_TM_FN
#endif

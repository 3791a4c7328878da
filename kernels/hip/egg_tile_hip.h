/* egg_tile_hip.h — the AMD side of the tile interface (included by kernels/egg_gpu.h
 * under hipcc). The shared kernels call, with CUDA's meaning:
 *   cp_async16(smem, gmem, pred), cp_commit(), cp_wait<N>()   16-byte global->LDS copies
 *   mma_s8(c, a, b)      c += A (16x32 s8) x B (32x8 s8), m16n8k32 fragments per 32 lanes
 *   __dp4a(a, b, c)      c + dot of four signed bytes
 *   __shfl_xor_sync(mask, v, o), __shfl_sync(mask, v, src), __syncwarp()   within a 32-lane logical warp
 *
 * What each target gets (chosen from the clang target macros of the device pass):
 *   target               mma_s8                                   __dp4a
 *   gfx90a               4x v_mfma_i32_16x16x16i8 per wave         v_dot4_i32_i8
 *   gfx940/941/942       2x v_mfma_i32_16x16x32_i8 per wave        v_dot4_i32_i8
 *   gfx1100/1101/1102    2x v_wmma_i32_16x16x16_iu8 per wave32     v_dot4_i32_iu8
 *   gfx1030              fallback: gather + 32 dot4 per lane       v_dot4_i32_i8
 *   anything else        fallback: gather + 32 dot4 per lane       plain C (4 multiplies)
 * MFMA/WMMA operands are exchanged with ds_bpermute rounds (kernels/hip/egg_tile_map.h,
 * checked on the CPU by tests/test_hip_tiles.c): 10 per MFMA wave (two tiles), 20 per
 * WMMA tile, 32 per tile for the fallback. Like mma.sync (.aligned), mma_s8 must be
 * reached by every lane of the wavefront at once: on wave64 both logical warps,
 * whose tiles one MFMA sequence computes (mm_kernel calls it unconditionally). The copies are synchronous (a plain 16-byte
 * load and LDS store; the kernel's __syncthreads order them), so STAGES > 1 buys no
 * overlap here. Integer results are exact, as on NVIDIA: the same bits on every path.
 * None of this has run on AMD hardware (none is available to the project): compile,
 * instruction selection and the CPU emulation of the layouts are what is verified. */
#ifndef EGG_TILE_HIP_H
#define EGG_TILE_HIP_H

#include <hip/hip_runtime.h>
#include <stdint.h>

#include "egg_tile_map.h"

/* ---------------------------------------------------------- target selection
 * (-DEGG_AMD_TILE=0 forces the fallback, e.g. to compare paths on one card) */
#ifndef EGG_AMD_TILE
#if defined(__gfx90a__)
#define EGG_AMD_TILE 1 /* MFMA 16x16x16 i8, wave64 */
#elif defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__)
#define EGG_AMD_TILE 2 /* MFMA 16x16x32 i8, wave64 */
#elif (defined(__gfx1100__) || defined(__gfx1101__) || defined(__gfx1102__)) && __AMDGCN_WAVEFRONT_SIZE == 32
#define EGG_AMD_TILE 3 /* WMMA 16x16x16 iu8, wave32 */
#else
#define EGG_AMD_TILE 0 /* fallback (also the host pass, which never runs these) */
#endif
#endif

#ifndef EGG_AMD_DOT4
#if defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__) || defined(__gfx1030__)
#define EGG_AMD_DOT4 1 /* v_dot4_i32_i8 */
#elif defined(__gfx1100__) || defined(__gfx1101__) || defined(__gfx1102__)
#define EGG_AMD_DOT4 2 /* v_dot4_i32_iu8 (sdot4 crashes clang 15 on gfx11) */
#else
#define EGG_AMD_DOT4 0 /* four multiplies */
#endif
#endif

/* --------------------------------------------------------- intrinsic shims
 * Macros over egg_-named functions, so that a ROCm whose headers gain these
 * names (ROCm 6.2+ has __shfl_xor_sync with 64-bit masks) keeps compiling. */
__device__ __forceinline__ int egg_dp4a(int a, int b, int c) {
#if EGG_AMD_DOT4 == 1
    return __builtin_amdgcn_sdot4(a, b, c, false);
#elif EGG_AMD_DOT4 == 2
    return __builtin_amdgcn_sudot4(true, a, true, b, c, false);
#else
    return c + (int8_t)a * (int8_t)b + (int8_t)(a >> 8) * (int8_t)(b >> 8) + (int8_t)(a >> 16) * (int8_t)(b >> 16) +
           (int8_t)(a >> 24) * (int8_t)(b >> 24);
#endif
}
__device__ __forceinline__ int egg_dp4a(unsigned a, unsigned b, int c) { return egg_dp4a((int)a, (int)b, c); }
#define __dp4a(a, b, c) egg_dp4a(a, b, c)

/* CUDA's warp is 32 lanes: width 32 keeps a shuffle inside its logical warp on wave64 */
template <class T> __device__ __forceinline__ T egg_shfl_xor_sync(unsigned mask, T v, int lane_mask) {
    (void)mask;
    return __shfl_xor(v, lane_mask, 32);
}
#define __shfl_xor_sync(mask, v, lane_mask) egg_shfl_xor_sync(mask, v, lane_mask)
template <class T> __device__ __forceinline__ T egg_shfl_sync(unsigned mask, T v, int src) {
    (void)mask;
    return __shfl(v, src, 32);
}
#define __shfl_sync(mask, v, src) egg_shfl_sync(mask, v, src)

/* A logical warp lies inside one wavefront, whose lanes run in lockstep and whose
 * memory operations are ordered: only the compiler must not move accesses across. */
__device__ __forceinline__ void egg_syncwarp() {
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
    __builtin_amdgcn_wave_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}
#define __syncwarp(...) egg_syncwarp()

/* ----------------------------------------------------- async copy emulation */
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, bool pred) {
    int4 v = make_int4(0, 0, 0, 0); /* cp.async with src-size 0 zero-fills */
    if (pred) v = *(const int4 *)gmem;
    *(int4 *)smem = v;
}
__device__ __forceinline__ void cp_commit() {}
template <int N> __device__ __forceinline__ void cp_wait() {}

/* ------------------------------------------------------------- mma_s8 */
typedef int egg_i32x4 __attribute__((ext_vector_type(4)));
typedef int egg_i32x8 __attribute__((ext_vector_type(8)));

/* word of lane src (wave-relative; wave32 uses src mod 32) */
__device__ __forceinline__ unsigned egg_bperm(int src, unsigned v) {
    return (unsigned)__builtin_amdgcn_ds_bpermute(src << 2, (int)v);
}
/* per-lane choice among registers: selects, never a dynamically indexed array
 * (a divergent index into VGPRs would become a waterfall loop or scratch) */
__device__ __forceinline__ unsigned egg_sel2(int i, unsigned x0, unsigned x1) { return i ? x1 : x0; }
__device__ __forceinline__ unsigned egg_sel4(int i, unsigned x0, unsigned x1, unsigned x2, unsigned x3) {
    return i & 2 ? (i & 1 ? x3 : x2) : (i & 1 ? x1 : x0);
}

#if EGG_AMD_TILE == 1 || EGG_AMD_TILE == 2
/* D (16x16 int32, wave64) -> c of both logical warps, 4 rounds */
__device__ __forceinline__ void egg_mfma_store(int (&c)[4], egg_i32x4 d, int L) {
    unsigned x[4];
#pragma unroll
    for (int k = 0; k < 4; k++)
        x[k] = egg_bperm(egg_tm_mf_c_src(L, k), egg_sel4(egg_tm_mf_c_offer(L, k), d[0], d[1], d[2], d[3]));
#pragma unroll
    for (int r = 0; r < 4; r++) c[r] += (int)egg_sel4(egg_tm_mf_c_round(L, r), x[0], x[1], x[2], x[3]);
}
#endif

__device__ __forceinline__ void mma_s8(int (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
#if EGG_AMD_TILE == 1
    /* both logical warps of the wave at once: A' = [A0 | A1], B' = diag(B0, B1) */
    const int L = (int)__lane_id();
    unsigned xa[4], xb[2];
#pragma unroll
    for (int k = 0; k < 4; k++)
        xa[k] = egg_bperm(egg_tm_mf16_a_src(L, k), egg_sel4(egg_tm_mf16_a_offer(L, k), a[0], a[1], a[2], a[3]));
#pragma unroll
    for (int k = 0; k < 2; k++) xb[k] = egg_bperm(egg_tm_mf16_b_src(L, k), egg_sel2(egg_tm_mf16_b_offer(L, k), b[0], b[1]));
    egg_i32x4 d = {0, 0, 0, 0};
#pragma unroll
    for (int s = 0; s < 4; s++) {
        const int rb = egg_tm_mf16_b_round(L, s);
        const unsigned av = egg_sel4(egg_tm_mf16_a_round(L, s), xa[0], xa[1], xa[2], xa[3]);
        const unsigned bv = rb < 0 ? 0u : egg_sel2(rb, xb[0], xb[1]);
        d = __builtin_amdgcn_mfma_i32_16x16x16i8((int)av, (int)bv, d, 0, 0, 0);
    }
    egg_mfma_store(c, d, L);
#elif EGG_AMD_TILE == 2
    const int L = (int)__lane_id();
    unsigned xa[4], xb[2];
#pragma unroll
    for (int k = 0; k < 4; k++)
        xa[k] = egg_bperm(egg_tm_mf32_a_src(L, k), egg_sel4(egg_tm_mf32_a_offer(L, k), a[0], a[1], a[2], a[3]));
#pragma unroll
    for (int k = 0; k < 2; k++) xb[k] = egg_bperm(egg_tm_mf32_b_src(L, k), egg_sel2(egg_tm_mf32_b_offer(L, k), b[0], b[1]));
    egg_i32x4 d = {0, 0, 0, 0};
#pragma unroll
    for (int s = 0; s < 2; s++) {
        unsigned aw[2], bw[2];
#pragma unroll
        for (int w = 0; w < 2; w++) {
            const int rb = egg_tm_mf32_b_round(L, s, w);
            aw[w] = egg_sel4(egg_tm_mf32_a_round(L, s, w), xa[0], xa[1], xa[2], xa[3]);
            bw[w] = rb < 0 ? 0u : egg_sel2(rb, xb[0], xb[1]);
        }
        const long av = (long)((uint64_t)aw[0] | (uint64_t)aw[1] << 32);
        const long bv = (long)((uint64_t)bw[0] | (uint64_t)bw[1] << 32);
        d = __builtin_amdgcn_mfma_i32_16x16x32_i8(av, bv, d, 0, 0, 0);
    }
    egg_mfma_store(c, d, L);
#elif EGG_AMD_TILE == 3
    /* one logical warp per wave32, transposed: D' = B^T A^T, rows 8..15 of B^T zero */
    const int L = (int)__lane_id();
    unsigned xa[8], xb[8];
#pragma unroll
    for (int k = 0; k < 8; k++) {
        xa[k] = egg_bperm(egg_tm_wm_a_src(L, k), egg_sel2(egg_tm_wm_a_offer(L, k), b[0], b[1]));
        xb[k] = egg_bperm(egg_tm_wm_b_src(L, k), egg_sel4(egg_tm_wm_b_offer(L, k), a[0], a[1], a[2], a[3]));
    }
    egg_i32x8 d = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
    for (int s = 0; s < 2; s++) {
        egg_i32x4 av, bv;
#pragma unroll
        for (int w = 0; w < 4; w++) {
            const int ra = egg_tm_wm_a_round(L, s, w), rb = egg_tm_wm_b_round(L, s, w) - 4 * s;
            av[w] = ra < 0 ? 0 : (int)egg_sel4(ra - 4 * s, xa[4 * s], xa[4 * s + 1], xa[4 * s + 2], xa[4 * s + 3]);
            bv[w] = (int)egg_sel4(rb, xb[4 * s], xb[4 * s + 1], xb[4 * s + 2], xb[4 * s + 3]);
        }
        d = __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32(true, av, true, bv, d, false);
    }
    unsigned x[4];
#pragma unroll
    for (int k = 0; k < 4; k++)
        x[k] = egg_bperm(egg_tm_wm_c_src(L, k), egg_sel4(egg_tm_wm_c_offer(L, k), d[0], d[1], d[2], d[3]));
#pragma unroll
    for (int r = 0; r < 4; r++) c[r] += (int)egg_sel4(egg_tm_wm_c_round(L, r), x[0], x[1], x[2], x[3]);
#else
    /* fallback: lane (g, t) gathers rows g, g+8 of A and columns 2t, 2t+1 of B */
    const int L = (int)(__lane_id() & 31);
    unsigned ar[2][8], bc[2][8];
#pragma unroll
    for (int w = 0; w < 8; w++) {
#pragma unroll
        for (int e = 0; e < 2; e++) ar[e][w] = (unsigned)__shfl((int)a[e + 2 * (w >> 2)], egg_tm_fb_a_src(L, w), 32);
#pragma unroll
        for (int cb = 0; cb < 2; cb++) bc[cb][w] = (unsigned)__shfl((int)b[w >> 2], egg_tm_fb_b_src(L, cb, w), 32);
    }
#pragma unroll
    for (int r = 0; r < 4; r++)
#pragma unroll
        for (int w = 0; w < 8; w++) c[r] = egg_dp4a(ar[r >> 1][w], bc[r & 1][w], c[r]);
#endif
}

#endif

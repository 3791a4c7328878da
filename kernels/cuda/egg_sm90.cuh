/* egg_sm90.cuh — the pieces the sm_90a kernels share: the int8 staging tile, the
 * packed rank-1 epilogues (epi_pair, epi_lanes8, epi_quad), mbarriers, TMA loads, L2
 * prefetches and policies, and the wgmma accumulators' way out (wg_frag_out,
 * wg_frag_direct). Needs egg_mm.cuh.
 * Part of the CUDA backend: included once by kernels/cuda/egg_cuda.cu (one translation unit). */
#ifndef EGG_SM90_CUH
#define EGG_SM90_CUH

#define OLD (BN + 16) /* staging-tile row: 144 bytes, conflict-free char2 writes */
/* the ranks of A (or B) rows a kernel's noise buffer holds at rank R: R at rank 2-4, one row at rank <= 1 */
__host__ __device__ constexpr int rank_rows(int R) { return R >= 2 ? R : 1; }
#include "cuda/egg_epi.cuh" /* pack2_clip8, epi_pair, epi_pair_w */
/* clip8(y + o) on four int8 lanes: saturate to -128..127, then raise -128 to -127 */
__device__ __forceinline__ unsigned add_clip4(unsigned y, unsigned o) { return __vmaxs4(__vaddss4(y, o), 0x81818181u); }

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MMP_WGMMA 1
#include "cuda/egg_wgmma.cuh" /* wg_off, wg_desc, wg_mma_s8 (r), wg_fence, wg_commit, wg_wait */
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
/* bytes (a multiple of 16, 16-byte aligned) of global memory into L2, no registers or shared memory held */
__device__ __forceinline__ void l2_prefetch_bulk(const void *p, unsigned bytes) {
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(p), "r"(bytes) : "memory");
}
/* the same with an L2 eviction policy (createpolicy) on the lines it brings */
__device__ __forceinline__ void l2_prefetch_bulk_hint(const void *p, unsigned bytes, uint64_t pol) {
    asm volatile("cp.async.bulk.prefetch.L2.global.L2::cache_hint [%0], %1, %2;\n" ::"l"(p), "r"(bytes), "l"(pol) : "memory");
}
#include "cuda/egg_lanes.cuh" /* prmt, int16-lane adds and clips, rec_gate4, rec_mix4 */
/* epi_pair<1> at s = 8 with K <= 256 and ps >= 8, as two int16 lanes: u = v + ((t A) >> ps) has |u| < 2^23, so
 * u >> 8 is bytes 1, 2 of u, and the clip runs on int16 lanes. ONE (ps = 8): u >> 8 = (256 v + t A) >> 16 (the floors
 * compose; |256 v + t A| < 2^31 at K <= 256), bytes 2, 3 */
template <bool ONE, bool V256 = false> /* V256 (ONE): v0, v1 are 256 v already (EP 3) */
__device__ __forceinline__ unsigned epi_lanes8(int v0, int v1, int a0, int a1, int t, int ps) { /* a0, a1: the A values */
    constexpr int S = V256 ? 1 : 256;
    const unsigned l = ONE ? prmt<0x7632>((unsigned)(v0 * S + t * a0), (unsigned)(v1 * S + t * a1))
                           : prmt<0x6521>((unsigned)(v0 + ((t * a0) >> ps)), (unsigned)(v1 + ((t * a1) >> ps)));
    return clip2_add(l, 0);
}
/* epi_lanes8 as two bytes */
template <bool ONE>
__device__ __forceinline__ unsigned short epi_pair8(int v0, int v1, unsigned Aw, int t, int ps) {
    return (unsigned short)prmt<0x0020>(epi_lanes8<ONE>(v0, v1, sx8<0>(Aw), sx8<1>(Aw), t, ps), 0);
}
/* four adjacent outputs of the rank-1 epilogue (v0 v1 u0 u1; Aw: their four A bytes) as two words of int16 lanes
 * (l: v0 v1, h: u0 u1); EP: 3 epi_lanes8<true> of accumulators copied out as 256 v (mmx_kernel: the copy's shift
 * is the epilogue's), 2, 1 epi_lanes8<true>, <false>, 0 epi_pair<R>, 4 epi_pair_w (rank 1, K > 2048: mmd_kernel) */
template <int R, int EP>
__device__ __forceinline__ void epi_quad(int v0, int v1, int u0, int u1, unsigned Aw, int t, int s, int ps, unsigned &l, unsigned &h) {
    if (EP == 4) { /* rank 1 with t A in 64 bits (K > 2048) */
        const unsigned y = (unsigned)epi_pair_w(v0, v1, (unsigned short)Aw, t, s, ps) |
                           (unsigned)epi_pair_w(u0, u1, (unsigned short)(Aw >> 16), t, s, ps) << 16;
        l = lo2(y);
        h = hi2(y);
    } else if (EP) {
        l = epi_lanes8<EP >= 2, EP == 3>(v0, v1, sx8<0>(Aw), sx8<1>(Aw), t, ps);
        h = epi_lanes8<EP >= 2, EP == 3>(u0, u1, sx8<2>(Aw), sx8<3>(Aw), t, ps);
    } else {
        const unsigned y = (unsigned)epi_pair<R>(v0, v1, (unsigned short)Aw, t, s, ps) |
                           (unsigned)epi_pair<R>(u0, u1, (unsigned short)(Aw >> 16), t, s, ps) << 16;
        l = lo2(y);
        h = hi2(y);
    }
}
/* the same four outputs as int8 bytes */
template <int R, int EP>
__device__ __forceinline__ unsigned epi_quad_bytes(int v0, int v1, int u0, int u1, unsigned Aw, int t, int s, int ps) {
    if (EP == 0)
        return (unsigned)epi_pair<R>(v0, v1, (unsigned short)Aw, t, s, ps) | (unsigned)epi_pair<R>(u0, u1, (unsigned short)(Aw >> 16), t, s, ps) << 16;
    unsigned l, h;
    epi_quad<R, EP>(v0, v1, u0, u1, Aw, t, s, ps, l, h);
    return pack4(l, h);
}
/* TMA: a 2-D box of a tensor map into shared memory, completing transaction bytes on an mbarrier */
__device__ __forceinline__ void mbar_init(uint64_t *bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"((unsigned)__cvta_generic_to_shared(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t *bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"((unsigned)__cvta_generic_to_shared(bar)), "r"(bytes)
                 : "memory");
}
/* whether the phase of that parity has completed, without waiting (a probe issued early, its latency under other work) */
__device__ __forceinline__ bool mbar_test(uint64_t *bar, unsigned parity) {
    unsigned done;
    asm volatile("{\n.reg .pred p;\nmbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"((unsigned)__cvta_generic_to_shared(bar)), "r"(parity) : "memory");
    return done != 0;
}
/* CL: with cluster-scope acquire, so that bytes other CTAs of the cluster sent with complete_tx (st.async) are visible */
template <bool CL = false>
__device__ __forceinline__ void mbar_wait(uint64_t *bar, unsigned parity) {
    const unsigned b = (unsigned)__cvta_generic_to_shared(bar);
    unsigned done = 0;
    while (!done) {
        if (CL)
            asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                         : "=r"(done) : "r"(b), "r"(parity) : "memory");
        else
            asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                         : "=r"(done) : "r"(b), "r"(parity) : "memory");
    }
}
__device__ __forceinline__ void tma_load_2d(void *dst, const CUtensorMap *map, int c0, int c1, uint64_t *bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                 ::"r"((unsigned)__cvta_generic_to_shared(dst)), "l"((uint64_t)map), "r"(c0), "r"(c1),
                 "r"((unsigned)__cvta_generic_to_shared(bar))
                 : "memory");
}
/* tma_load_2d with an L2 eviction priority (l2_policy): a chunk's activations stream through once, while a GEMM
 * launch reads its weights and its matrix's noise rows again for every timestep of the chunk */
enum { L2_FIRST = 0, L2_NORMAL = 1, L2_LAST = 2 };
__device__ __forceinline__ uint64_t l2_policy(int pri) {
    uint64_t p;
    if (pri == L2_LAST) asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(p));
    else if (pri == L2_FIRST) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
    else asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;\n" : "=l"(p));
    return p;
}
/* 16 bytes from (ld.global.nc) or to global memory with an L2 eviction policy (l2_policy); L1 not allocated for stores */
__device__ __forceinline__ int4 ldg_hint(const void *p, uint64_t pol) {
    int4 v;
    asm("ld.global.nc.L2::cache_hint.v4.s32 {%0, %1, %2, %3}, [%4], %5;" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(pol));
    return v;
}
__device__ __forceinline__ void stg_hint(void *p, int4 v, uint64_t pol) {
    asm volatile("st.global.L1::no_allocate.L2::cache_hint.v4.s32 [%0], {%1, %2, %3, %4}, %5;" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "l"(pol)
                 : "memory");
}
__device__ __forceinline__ void tma_load_2d(void *dst, const CUtensorMap *map, int c0, int c1, uint64_t *bar, uint64_t pol) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5;\n"
                 ::"r"((unsigned)__cvta_generic_to_shared(dst)), "l"((uint64_t)map), "r"(c0), "r"(c1),
                 "r"((unsigned)__cvta_generic_to_shared(bar)), "l"(pol)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t *bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"((unsigned)__cvta_generic_to_shared(bar)) : "memory");
}
/* the release of a buffer that a TMA refills, by a thread that read it with generic loads (ld.shared): the proxy fence
 * orders those reads before the async proxy's writes that the arrive lets the producer issue. Without it a refill
 * could land before a thread's last reads of the buffer: mmx_kernel's A rows at rank 3-4 (their ring is three tiles
 * deep there, and with W resident the producer issues each refill as the last consumer arrives) gave EGG-256x6 at
 * rank 4 another checksum in 4 of 6 runs of 16 steps under EGG_PROFILE, wrong rows 8-15 of a warp's 16 (read
 * last); none in 6 with it (docs/BENCHMARKS.md) */
__device__ __forceinline__ void mbar_release_read(uint64_t *bar) {
    fence_proxy_async();
    mbar_arrive(bar);
}
/* barrier `id` among `n` threads (a warpgroup: 128) */
__device__ __forceinline__ void named_sync(int id, int n) { asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(n) : "memory"); }
/* rank 1: sign * (x . B) of the warpgroup's 64 rows into ts: row 16 w + gid + 8 h of the warpgroup (w = warp % 4)
 * finds its pair's column 8 w + gid/2 + 4 h in dt[4 w + 2 h + (gid/2) % 2] of the lane with tig = gid/4 + 2 h */
__device__ __forceinline__ void wg_ts(const int (&dt)[16], int *ts, int warp, int gid, int tig) {
    const int w = warp & 3, h = tig >> 1;
    if ((tig & 1) == (gid >> 2)) {
        const int mi = (warp >> 2) * 64 + 16 * w + gid + 8 * h;
        const bool hi = h != 0, odd = (gid >> 1) & 1;
        int c0, c1, c2, c3; /* dt[4 w .. 4 w + 3]: w is the same for the warp's lanes */
        switch (w) {
        case 0: c0 = dt[0]; c1 = dt[1]; c2 = dt[2]; c3 = dt[3]; break;
        case 1: c0 = dt[4]; c1 = dt[5]; c2 = dt[6]; c3 = dt[7]; break;
        case 2: c0 = dt[8]; c1 = dt[9]; c2 = dt[10]; c3 = dt[11]; break;
        default: c0 = dt[12]; c1 = dt[13]; c2 = dt[14]; c3 = dt[15]; break;
        }
        const int t = hi ? (odd ? c3 : c2) : (odd ? c1 : c0);
        ts[mi] = (mi & 1) ? -t : t;
    }
}
/* the pairs' A rows [BM/2][BN] of the persistent GEMMs on sm_90a: 16-byte chunk c of pair row p at chunk
 * c ^ (p % 8) (TMA's 128-byte swizzle), so the 4 pair rows a warp's fragment rows read fall in different banks */
__device__ __forceinline__ int as_off(int p, int col) { return p * BN + ((((col >> 4) ^ p) & 7) << 4) + (col & 15); }
/* a warp's wgmma accumulators (rows 16 warp + lane/4 (+8) of the tile, columns 8 j + 2 (lane % 4) (+1)) to
 * int8 y = clip((v + ((t A) >> ps)) >> s) in the staging tile Os; Ab: the tile's pairs' A rows (as_off) */
template <int R, int EP = 0> /* EP: 1 epi_pair8<false>, 2 epi_pair8<true> */
__device__ __forceinline__ void wg_frag_out(const int (&d)[64], int8_t *Os, const int8_t *Ab, const int *ts, int warp, int gid,
                                            int tig, int s, int ps) {
    static_assert(EP < 3, "EP 3 (accumulators as 256 v) is epi_quad's");
#pragma unroll
    for (int hr = 0; hr < 2; hr++) {
        const int ml = warp * 16 + gid + hr * 8;
        const int t = R > 0 ? ts[ml] : 0;
        /* the row's A values first: the compiler keeps shared loads behind earlier shared stores */
        unsigned short Av[16];
#pragma unroll
        for (int jn = 0; jn < 16; jn++) Av[jn] = R > 0 ? *(const unsigned short *)(Ab + as_off(ml >> 1, jn * 8 + tig * 2)) : 0;
#pragma unroll
        for (int jn = 0; jn < 16; jn++)
            *(unsigned short *)(Os + ml * OLD + jn * 8 + tig * 2) =
                EP ? epi_pair8<EP == 2>(d[jn * 4 + hr * 2], d[jn * 4 + hr * 2 + 1], Av[jn], t, ps)
                   : epi_pair<R>(d[jn * 4 + hr * 2], d[jn * 4 + hr * 2 + 1], Av[jn], t, s, ps);
    }
}
/* mmw_kernel's PERM epilogue: with W's rows permuted in each 128-row block (wperm_row), a thread's accumulators
 * of row ml are the output columns 64 q + 16 tig .. + 15 (q = 0, 1), so they go to global memory from registers,
 * with no staging tile. The lanes of rows gid, gid ^ 1 swap one 16-byte run (shfl_xor 4) so that each store
 * writes 4 whole 128-byte rows (8 lanes a row, as the staged epilogue's stores): store k of an even row's lane is
 * row gid + k, columns 16 tig .. + 15, of an odd row's lane row gid - 1 + k, columns 64 + 16 tig .. + 15 (RESID:
 * the residual loaded as ot[2 hr + k] that way). The A rows are read and released first: the producer waits on
 * that release before every load of the tile two on (released after the stores, up's GEMM ran 20% slower) */
__device__ __forceinline__ int4 shfl_xor4(int4 v, int m) {
    v.x = __shfl_xor_sync(0xffffffffu, v.x, m); v.y = __shfl_xor_sync(0xffffffffu, v.y, m);
    v.z = __shfl_xor_sync(0xffffffffu, v.z, m); v.w = __shfl_xor_sync(0xffffffffu, v.w, m);
    return v;
}
/* the row (from the lane pair's even row) and column of a lane's store k */
__device__ __forceinline__ int perm_store_row(int gid, int k) { return (gid & ~1) + k; }
__device__ __forceinline__ int perm_store_col(int gid, int tig) { return (gid & 1) * 64 + tig * 16; }
/* MODE_RESID: the residual of wg_frag_direct's stores of columns n0 .. n0 + 127, in its store order (ot[q]: store q % 2
 * of row half q / 2), loaded ahead (under the tile's MMAs) */
__device__ __forceinline__ void frag_direct_resid(const MMArgs &a, int m0, int n0, int warp, int gid, int tig, int4 (&ot)[4]) {
#pragma unroll
    for (int q = 0; q < 4; q++) {
        const int m = m0 + warp * 16 + (q >> 1) * 8 + perm_store_row(gid, q & 1);
        ot[q] = m < a.M ? __ldg((const int4 *)(a.other + (size_t)m * a.ldy + n0 + perm_store_col(gid, tig))) : make_int4(0, 0, 0, 0);
    }
}
/* wg_frag_direct's first half: the tile's outputs clip((v + ((t A) >> ps)) >> s) as int8, in its store order (st[hr][k]:
 * store k of row half hr); the A rows and t read first and released (aempty): the producer reuses Ab two tiles on */
template <int R, int EP>
__device__ __forceinline__ void frag_direct_out(const MMArgs &a, const int (&d)[64], const int8_t *Ab, const int *ts, int warp, int gid,
                                                int tig, uint64_t *aempty, int4 (&st)[2][2]) {
    const bool odd = gid & 1;
    int4 Av[2][2];
    int t[2];
#pragma unroll
    for (int hr = 0; hr < 2; hr++) {
        const int ml = warp * 16 + gid + hr * 8;
        t[hr] = R > 0 ? ts[ml] : 0;
#pragma unroll
        for (int q = 0; q < 2; q++) Av[hr][q] = R > 0 ? *(const int4 *)(Ab + as_off(ml >> 1, q * 64 + tig * 16)) : make_int4(0, 0, 0, 0);
    }
    if (R > 0) mbar_release_read(aempty);
#pragma unroll
    for (int hr = 0; hr < 2; hr++) {
        int4 y[2];
#pragma unroll
        for (int q = 0; q < 2; q++)
#pragma unroll
            for (int w = 0; w < 4; w++) { /* columns 4 w .. 4 w + 3 of the run: accumulator groups q 8 + 2 w, + 1 */
                const int j = (q * 8 + 2 * w) * 4 + hr * 2;
                (&y[q].x)[w] = (int)epi_quad_bytes<R, EP>(d[j], d[j + 1], d[j + 4], d[j + 5], (unsigned)(&Av[hr][q].x)[w], t[hr], a.s, a.pshift);
            }
        const int4 r = shfl_xor4(odd ? y[0] : y[1], 4);
        st[hr][0] = odd ? r : y[0];
        st[hr][1] = odd ? y[1] : r;
    }
}
/* frag_direct_out at rank R = 2..4 (the generic epilogue, epi_quad_r; W64: p in 64 bits, K > 512; E8: epi_quad_r8 at
 * s = ps = 8; E9: epi_quad_r9 at s = 9, ps = 8, K = 1024): tr[hr] the row's
 * sign * x . B_j (j < R: T's row, xb_kernel), Ab the tile's pairs' A rows of each rank ([R][BM/2][BN], as_off), released
 * (aempty) once read */
template <int R, bool W64, bool E8, bool E9 = false>
__device__ __forceinline__ void frag_direct_out_r(const MMArgs &a, const int (&d)[64], const int8_t *Ab, const int4 (&tr)[2], int warp, int gid,
                                                  int tig, uint64_t *aempty, int4 (&st)[2][2]) {
    const bool odd = gid & 1;
    int4 y[2][2];
#pragma unroll
    for (int hr = 0; hr < 2; hr++) {
        const int ml = warp * 16 + gid + hr * 8;
        int t[R];
#pragma unroll
        for (int j = 0; j < R; j++) t[j] = (&tr[hr].x)[j];
        const int4 ts = E8 ? t_split(tr[hr]) : E9 ? t_split9(tr[hr]) : int4{};
#pragma unroll
        for (int q = 0; q < 2; q++) {
            int4 Av[R];
#pragma unroll
            for (int j = 0; j < R; j++) Av[j] = *(const int4 *)(Ab + j * (BM / 2) * BN + as_off(ml >> 1, q * 64 + tig * 16));
#pragma unroll
            for (int w = 0; w < 4; w++) { /* columns 4 w .. 4 w + 3 of the run: accumulator groups q 8 + 2 w, + 1 */
                const int jj = (q * 8 + 2 * w) * 4 + hr * 2;
                unsigned aw[R];
#pragma unroll
                for (int j = 0; j < R; j++) aw[j] = (unsigned)(&Av[j].x)[w];
                (&y[hr][q].x)[w] = (int)(E8   ? epi_quad_r8<R>(d[jj], d[jj + 1], d[jj + 4], d[jj + 5], aw, ts)
                                         : E9 ? epi_quad_r9<R>(d[jj], d[jj + 1], d[jj + 4], d[jj + 5], aw, ts)
                                              : epi_quad_r<R, W64>(d[jj], d[jj + 1], d[jj + 4], d[jj + 5], aw, t, a.s, a.pshift));
            }
        }
    }
    mbar_release_read(aempty);
#pragma unroll
    for (int hr = 0; hr < 2; hr++) {
        const int4 r = shfl_xor4(odd ? y[hr][0] : y[hr][1], 4);
        st[hr][0] = odd ? r : y[hr][0];
        st[hr][1] = odd ? y[hr][1] : r;
    }
}
/* rank 2-4: T's rows (sign * x . B_j, [M][4] int32, xb_kernel) of a thread's two fragment rows of the row block at m0 */
__device__ __forceinline__ void load_tr(const MMArgs &a, int m0, int warp, int gid, int4 (&tr)[2]) {
#pragma unroll
    for (int hr = 0; hr < 2; hr++) {
        const int m = m0 + warp * 16 + gid + hr * 8;
        tr[hr] = m < a.M ? __ldg((const int4 *)(a.T + 4 * (size_t)m)) : make_int4(0, 0, 0, 0);
    }
}
/* its second half: the stores, together (MODE_RESID: the residual ot added first). LA: on int16 lanes
 * (add_clip4_lanes: ~9 instructions a word against ~20; the fused MLP's last epilogue; elsewhere it made mmd_kernel
 * spill) */
template <int MODE, bool LA = false>
__device__ __forceinline__ void frag_direct_store(const MMArgs &a, const int4 (&st)[2][2], int m0, int n0, int warp, int gid, int tig,
                                                  const int4 (&ot)[4], int8_t *Y) {
#pragma unroll
    for (int hr = 0; hr < 2; hr++)
#pragma unroll
        for (int k = 0; k < 2; k++) {
            const int m = m0 + warp * 16 + hr * 8 + perm_store_row(gid, k);
            int4 v = st[hr][k];
            if (MODE == MODE_RESID) {
                auto ac4 = [](int y, int o) { return (int)(LA ? add_clip4_lanes((unsigned)y, (unsigned)o) : add_clip4((unsigned)y, (unsigned)o)); };
                v.x = ac4(v.x, ot[hr * 2 + k].x); v.y = ac4(v.y, ot[hr * 2 + k].y);
                v.z = ac4(v.z, ot[hr * 2 + k].z); v.w = ac4(v.w, ot[hr * 2 + k].w);
            }
            if (m < a.M) *(int4 *)(Y + (size_t)m * a.ldy + n0 + perm_store_col(gid, tig)) = v;
        }
}
template <int MODE, int R, int EP, bool LA = false>
__device__ __forceinline__ void wg_frag_direct(const MMArgs &a, const int (&d)[64], const int8_t *Ab, const int *ts, int m0, int n0,
                                               int warp, int gid, int tig, const int4 (&ot)[4], uint64_t *aempty, int8_t *Y) {
    int4 st[2][2];
    frag_direct_out<R, EP>(a, d, Ab, ts, warp, gid, tig, aempty, st);
    frag_direct_store<MODE, LA>(a, st, m0, n0, warp, gid, tig, ot, Y);
}
template <int MODE, int R, bool W64, bool E8 = false>
__device__ __forceinline__ void wg_frag_direct_r(const MMArgs &a, const int (&d)[64], const int8_t *Ab, const int4 (&tr)[2], int m0, int n0,
                                                 int warp, int gid, int tig, const int4 (&ot)[4], uint64_t *aempty, int8_t *Y) {
    int4 st[2][2];
    frag_direct_out_r<R, W64, E8>(a, d, Ab, tr, warp, gid, tig, aempty, st);
    frag_direct_store<MODE>(a, st, m0, n0, warp, gid, tig, ot, Y);
}
#endif

/* t + x . b over 16 bytes */
__device__ __forceinline__ int dot16_acc(int4 x, int4 b, int t) {
    t = __dp4a(x.x, b.x, t);
    t = __dp4a(x.y, b.y, t); t = __dp4a(x.z, b.z, t);
    return __dp4a(x.w, b.w, t);
}
/* x . b over 16 bytes */
__device__ __forceinline__ int dot16(int4 x, int4 b) { return dot16_acc(x, b, 0); }
/* t + x . b over 32 bytes (x0 x1, b0 b1) */
__device__ __forceinline__ int dp4a_16x2(int4 x0, int4 x1, int4 b0, int4 b1, int t) {
    t = __dp4a(x0.x, b0.x, t); t = __dp4a(x0.y, b0.y, t); t = __dp4a(x0.z, b0.z, t); t = __dp4a(x0.w, b0.w, t);
    t = __dp4a(x1.x, b1.x, t); t = __dp4a(x1.y, b1.y, t); t = __dp4a(x1.z, b1.z, t); t = __dp4a(x1.w, b1.w, t);
    return t;
}

#endif /* EGG_SM90_CUH */

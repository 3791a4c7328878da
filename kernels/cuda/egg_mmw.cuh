/* egg_mmw.cuh — the warp-specialised TMA GEMMs of sm_90a: mmw_kernel (a producer
 * warp, two consumer warpgroups; the forward's MMs and the update's vote GEMM),
 * mmx_kernel (the PLAIN MMs with K = 128, 256, 384 or 512, whole row blocks a CTA) and
 * mmd_kernel (down: 128 x 256 tiles, N a multiple of 256).
 * Part of the CUDA backend: included once by kernels/cuda/egg_cuda.cu (one translation unit). */
#ifndef EGG_MMW_CUH
#define EGG_MMW_CUH

/* The K-loop and epilogue of mmp_kernel as a warp-specialised schedule (sm_90a, X/W (and the pairs' B and
 * A rows) by TMA; PLAIN and RESID): a producer warp keeps WS_STAGES stages of a tile's k-steps loading, each
 * guarded by a "full" and an "empty" mbarrier, so nothing in the consumers waits for a load to be issued; the
 * two consumer warpgroups take the tile's rows 0-63 and 64-127 and, where a tile's k-steps fit in half the
 * stages (K <= 256), take turns: warpgroup 1 issues its MMAs after warpgroup 0's, so one warpgroup's epilogue
 * (integer work, ~9 instructions per output) runs under the other's MMAs instead of every warp of the SM doing
 * MMAs, then epilogues, in step. Same integer operations as mmp_kernel (shared helpers). */
#define WS_STAGES 8
#define WS_THREADS (2 * 128 + 32)
__host__ __device__ constexpr int mmw_stage_bytes() { return (BM + BN + BM / 2) * BK; } /* 20 KB, 1024-aligned */
/* a stage: X [BM][BK], then the first 32 pairs' B rows [32][BK], W [BN][BK], the other 32 pairs' B rows: each
 * warpgroup's B operand, W and its pairs' B rows, is contiguous ([B0 W] for rows 0-63, [W B1] for 64-127), so one
 * m64n160k32 per k32 computes x.W and x.B reading the X tile once */
#define WS_OFF_B0 (BM * BK)
#define WS_OFF_W (BM * BK + 32 * BK)
#define WS_OFF_B1 (BM * BK + 32 * BK + BN * BK)
__host__ __device__ constexpr int mmw_smem_bytes() {
    return WS_STAGES * mmw_stage_bytes() + 2 * (BM / 2) * BN + BM * OLD + 2 * BM * 4 + (2 * WS_STAGES + 4) * 8;
}
#ifdef MMP_WGMMA
/* tile g of a launch: output block (m0, n0) and k-steps kt0 .. kt0 + ktn - 1 (MODE_UPDATE splits K into
 * pieces of `per` k-steps, the pieces' tiles after all tiles of the piece before) */
/* walked incrementally: the CTA's tiles are blockIdx.x + it * gridDim.x, so (kz, mi, ni) advance by the
 * decomposition of gridDim.x with carries (the divisions once per CTA) */
struct MmwTiles {
    int kz, mi, ni, dkz, dmi, dni, g;
    __device__ __forceinline__ MmwTiles(const MMArgs &a) {
        const int mn = a.mtn * a.ntn, G = (int)gridDim.x;
        g = (int)blockIdx.x;
        kz = g / mn; mi = (g % mn) / a.ntn; ni = g % a.ntn;
        dkz = G / mn; dmi = (G % mn) / a.ntn; dni = G % a.ntn;
    }
    __device__ __forceinline__ void get(const MMArgs &a, int per, int KT, int &m0, int &n0, int &kt0, int &ktn) const {
        if (a.items) { /* the grouped update's work list */
            const int4 w = a.items[g];
            m0 = w.x; n0 = w.y; kt0 = w.w;
        } else {
            m0 = mi * BM;
            n0 = ni * BN;
            kt0 = kz * per;
        }
        ktn = min(per, KT - kt0);
    }
    __device__ __forceinline__ void next(const MMArgs &a) {
        g += (int)gridDim.x;
        if (a.items) return;
        ni += dni;
        if (ni >= a.ntn) ni -= a.ntn, mi++;
        mi += dmi;
        if (mi >= a.mtn) mi -= a.mtn, kz++;
        kz += dkz;
    }
};
template <int MODE, int R, int w, int EP, int PERM>
__device__ __forceinline__ void mmw_consume(const MMArgs &a, int8_t *St, const int8_t *As, int8_t *Os, int *ts, uint64_t *full,
                                            uint64_t *empty, uint64_t *aempty, uint64_t *turn, int mine, int per, int KT, bool turns,
                                            int tid) {
    const int warp = tid >> 5, lane = tid & 31, wt = tid & 127, gid = lane >> 2, tig = lane & 3;
    /* rank 1: warpgroup 0's 160 columns are its pairs' 32 then the 128 outputs, warpgroup 1's the outputs then
     * its pairs'; rank 0: the 128 outputs */
    int dd[80];
    int(&d)[64] = *reinterpret_cast<int(*)[64]>(dd + (R > 0 && w == 0 ? 16 : 0));
    int(&dt)[16] = *reinterpret_cast<int(*)[16]>(dd + (w == 0 ? 0 : 64));
    /* stage st of the k-step, its phase; the stage-0 descriptors' low words (a stage is mmw_stage_bytes() further,
     * its second k32 32 bytes: the low word is the address / 16, below 2^14) */
    unsigned st = 0, ph = 0, pst = 0;
    const uint64_t dx0 = wg_desc((unsigned)__cvta_generic_to_shared(St) + w * 64 * BK);
    const uint64_t dw0 = wg_desc((unsigned)__cvta_generic_to_shared(St) + (R > 0 ? (w == 0 ? WS_OFF_B0 : WS_OFF_W) : WS_OFF_W));
    MmwTiles tl(a);
    for (int it = 0; it < mine; it++, tl.next(a)) {
        int m0, n0, kt0, ktn;
        tl.get(a, per, KT, m0, n0, kt0, ktn);
        int4 ot[4]; /* the residual, loading under the tile's MMAs */
        if (!PERM) mmp_res_load<MODE>(a, m0 + w * 64, n0, wt, 128, ot);
        else if (MODE == MODE_RESID) frag_direct_resid(a, m0, n0, warp, gid, tig, ot);
        /* warpgroup 0 issues tile it's MMAs after warpgroup 1 issued tile it - 1's; warpgroup 1 after warpgroup 0 */
        if (turns && (w == 1 || it > 0)) mbar_wait(turn + w, (unsigned)(w == 0 ? it - 1 : it) & 1);
        for (int kt = 0; kt < ktn; kt++) {
            mbar_wait(full + st, ph);
            const unsigned so = st * (mmw_stage_bytes() >> 4);
            wg_fence();
            if (R > 0) { /* x . [B0 W] or x . [W B1] */
                wg_mma_k64(dd, dx0 + so, dw0 + so, kt > 0);
            } else {
                wg_mma_k64(d, dx0 + so, dw0 + so, kt > 0);
            }
            wg_commit();
            wg_wait<1>(); /* the previous k-step's MMAs are done: its stage is free as far as this warpgroup goes */
            if (kt > 0) mbar_arrive(empty + pst);
            pst = st;
            if (++st == WS_STAGES) st = 0, ph ^= 1;
        }
        if (turns) mbar_arrive(turn + (1 - w));
        wg_wait<0>();
        mbar_arrive(empty + pst);
        if (MODE == MODE_UPDATE) { /* this K piece's partial votes into Z (int32; zeros skipped) */
            int mb = 0, ob = 0, Mt = a.M, Nt = a.N;
            int32_t *Z = a.Z;
            if (a.items) { /* the tile's matrix: its first rows in X and W, its shape and votes */
                const int t = a.items[tl.g].z;
                const int4 tt = a.gtab[t];
                mb = tt.x; ob = tt.y; Mt = tt.z; Nt = tt.w;
                Z = a.Z + a.gzoff[t];
            }
#pragma unroll
            for (int hr = 0; hr < 2; hr++) {
                const int m = m0 + warp * 16 + gid + hr * 8 - mb;
#pragma unroll
                for (int jn = 0; jn < 16; jn++)
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        const int o = n0 + jn * 8 + tig * 2 + e - ob, v = d[jn * 4 + hr * 2 + e];
                        if (v && m < Mt && o < Nt) atomicAdd(&Z[(size_t)m * Nt + o], v);
                    }
            }
            continue;
        }
        if (PERM) { /* ts by tile parity: a warp still reading tile it - 1's is behind this tile's barrier */
            int *tsp = ts + (it & 1) * BM;
            if (R > 0) wg_ts(dt, tsp, warp, gid, tig);
            named_sync(1 + w, 128); /* ts complete */
            wg_frag_direct<MODE, R, EP>(a, d, As + (it & 1) * (BM / 2) * BN, tsp, m0, n0, warp, gid, tig, ot, aempty + (it & 1), a.Y);
            continue;
        }
        if (R > 0) wg_ts(dt, ts, warp, gid, tig);
        named_sync(1 + w, 128); /* ts complete; this warpgroup's previous out pass has read its rows of Os */
        wg_frag_out<R, EP>(d, Os, As + (it & 1) * (BM / 2) * BN, ts, warp, gid, tig, a.s, a.pshift);
        named_sync(1 + w, 128);
        if (R > 0) mbar_release_read(aempty + (it & 1)); /* its A rows are read */
        mmp_out_rows<MODE>(a, Os + w * 64 * OLD, m0 + w * 64, n0, wt, 128, ot);
    }
}
#endif
/* the TMA GEMM kernels' parameters: the arguments, then the tensor maps of X, W, the pairs' B rows and A rows */
#define TMA_GEMM_PARAMS                                                                                               \
    MMArgs a, const __grid_constant__ CUtensorMap tmx, const __grid_constant__ CUtensorMap tmw,                       \
        const __grid_constant__ CUtensorMap tmb, const __grid_constant__ CUtensorMap tmn
template <int MODE, int R, int EP = 0, int PERM = 0> /* EP: the epilogue (wg_frag_out; 1, 2: rank 1, K <= 256, s = 8, ps > 8, = 8);
                                                       PERM: W's rows permuted (wperm_row), wg_frag_direct */
__global__ void __launch_bounds__(WS_THREADS, 1) mmw_kernel(TMA_GEMM_PARAMS) {
#ifdef MMP_WGMMA
    extern __shared__ __align__(1024) unsigned char smem[];
    int8_t *St = (int8_t *)smem;                          /* stage s at s * mmw_stage_bytes(): X [BM][BK], W [BN][BK], B [BM/2][BK] */
    int8_t *As = St + WS_STAGES * mmw_stage_bytes();      /* [2][BM/2][BN]: the pairs' A rows, by tile parity */
    int8_t *Os = As + 2 * (BM / 2) * BN;                  /* [BM][OLD]: int8 results */
    int *ts = (int *)(Os + BM * OLD);                     /* [2][BM]: sign * (x . B) (PERM: by tile parity) */
    uint64_t *full = (uint64_t *)(ts + 2 * BM), *empty = full + WS_STAGES, *aempty = empty + WS_STAGES, *turn = aempty + 2;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    if (tid == 0) {
        for (int st = 0; st < WS_STAGES; st++) {
            mbar_init(full + st, 1);
            mbar_init(empty + st, 256); /* every consumer thread, after its warpgroup's MMAs on the stage are done */
        }
        mbar_init(aempty, 256);
        mbar_init(aempty + 1, 256);
        mbar_init(turn, 128);
        mbar_init(turn + 1, 128);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    const int KT = (a.K + BK - 1) / BK, per = a.ksplit > 0 ? a.ksplit / BK : KT; /* k-steps per tile */
    const int ntiles = a.items ? a.nitems : a.mtn * a.ntn * ((KT + per - 1) / per), G = (int)gridDim.x;
    const int mine = (int)blockIdx.x < ntiles ? (ntiles - 1 - (int)blockIdx.x) / G + 1 : 0;
    const bool turns = 2 * per <= WS_STAGES;
    if (warp == 8) { /* producer: one thread walks the jobs (tile, k-step) */
        if (lane == 0) {
            int j = 0;
            MmwTiles tl(a);
            /* L2 priorities (l2_policy): X streams through once where a row block has one N tile (the update:
             * unchanged) */
            const uint64_t keep = l2_policy(MODE == MODE_UPDATE ? L2_NORMAL : L2_LAST),
                           xpol = l2_policy(MODE == MODE_UPDATE || a.ntn > 1 ? L2_NORMAL : L2_FIRST);
            for (int it = 0; it < mine; it++, tl.next(a)) {
                int m0, n0, kt0, ktn;
                tl.get(a, per, KT, m0, n0, kt0, ktn);
                const int p0 = R > 0 ? (m0 >> 1) % a.wrap : 0; /* the row block's pairs p0 .. p0 + 63 (launch_mm) */
                for (int q = 0; q < ktn; q++, j++) {
                    const int kt = kt0 + q; /* R > 0: one piece, kt0 = 0 */
                    const int st = j % WS_STAGES;
                    if (j >= WS_STAGES) mbar_wait(empty + st, (unsigned)(j / WS_STAGES - 1) & 1);
                    if (R > 0 && kt == 0 && it >= 2) mbar_wait(aempty + (it & 1), (unsigned)((it >> 1) - 1) & 1);
                    int8_t *sb = St + st * mmw_stage_bytes();
                    mbar_expect_tx(full + st, (BM + BN) * BK + (R > 0 ? (BM / 2) * BK + (kt == 0 ? (BM / 2) * BN : 0) : 0));
                    tma_load_2d(sb, &tmx, kt * BK, m0, full + st, xpol);
                    tma_load_2d(sb + WS_OFF_W, &tmw, kt * BK, n0, full + st, keep);
                    if (R > 0) { /* B boxes of 32 pairs (launch_mm) */
                        const int kb = (int)(a.aoff + a_span(1, a.N)) + kt * BK;
                        tma_load_2d(sb + WS_OFF_B0, &tmb, kb, p0, full + st, keep);
                        tma_load_2d(sb + WS_OFF_B1, &tmb, kb, p0 + 32, full + st, keep);
                        if (kt == 0) tma_load_2d(As + (it & 1) * (BM / 2) * BN, &tmn, (int)a.aoff + n0, p0, full + st, keep);
                    }
                }
            }
        }
        return;
    }
    /* consumers: warpgroup w = warp / 4 owns rows 64 w .. 64 w + 63 of every tile (w as a template
     * argument, so the descriptors are uniform values) */
    if (warp < 4) mmw_consume<MODE, R, 0, EP, PERM>(a, St, As, Os, ts, full, empty, aempty, turn, mine, per, KT, turns, tid);
    else mmw_consume<MODE, R, 1, EP, PERM>(a, St, As, Os, ts, full, empty, aempty, turn, mine, per, KT, turns, tid);
#else
    (void)a; (void)tmx; (void)tmw; (void)tmb; (void)tmn; /* not launched: the host checks wgmma_probe first */
#endif
}

/* The PLAIN GEMMs with K = 128, 256 or 512 (Wf, Wh, up, head: X is an EGG-LN's output) with W's permuted copy, whole
 * row blocks per CTA, each tile's epilogue under the next tile's MMAs. In mmw_kernel a tile's epilogue (64 outputs
 * a thread at one warp per scheduler: ~2500 cycles) outlasts the other warpgroup's MMAs (~640), and each of a row
 * block's N tiles loads the block's X and B rows again (up: 88 KB a tile, near L2's bandwidth). Here
 *  - a CTA takes whole row blocks: their X rows [K/64][BM][BK] and B rows [K/64][64][BK] load once into a resident
 *    buffer (two, by row-block parity: the next row block's load runs under this one's tiles); sign * (x . B) comes
 *    from an m64n32k32 per k32 on the row block's first tile; only W and the tile's A rows go through the stages;
 *  - a warpgroup issues tile it + 1's MMAs before tile it's epilogue, which works on a copy of the accumulators
 *    (reading them after wgmma.wait_group 1, while the next tile's MMAs run, made ptxas serialise every wgmma);
 *  - the tiles' A rows take a ring of mx_as buffers: with two, the producer waited on the epilogue two tiles back
 *    before any later load, and the consumers then waited on their stages.
 * Same MMAs (rows and columns) and epilogue (wg_frag_direct) as mmw_kernel. */
/* tiles' A-row buffers: the producer loads tile it's after tile it - mx_as's epilogue read its own; at rank R >= 2 a
 * buffer holds R ranks' rows ([R][BM/2][BN]), three of them at R >= 3 */
__host__ __device__ constexpr int mx_as(int R) { return R >= 3 ? 3 : 4; }
/* DUAL (two GEMMs of one X, Wf and Wh): both matrices' B rows resident, so 8 W stages instead of 10; 8 at rank 4 too
 * (its A rows) */
/* the row block's X and B rows take 8 k-steps of buffer: two buffers (by row-block parity: the next row block loads
 * under this one's tiles) at K <= 256, one at K = 384 and 512 (KT 6, 8: the next row block loads after this one's last MMAs).
 * At rank R >= 2 no B rows: x . B_j comes from T (xb_kernel) */
__host__ __device__ constexpr int mx_xbufs(int kt) { return kt > 4 ? 1 : 2; }
__host__ __device__ constexpr int mx_stages(int dual, int R = 1) { return dual || R >= 4 ? 8 : 10; }
__host__ __device__ constexpr int mmx_smem_bytes(int dual, int R = 1) {
    return mx_stages(dual, R) * BN * BK + 2 * 4 * BM * BK + (R >= 2 ? 0 : (1 + dual) * 2 * 4 * (BM / 2) * BK) + mx_as(R) * rank_rows(R) * (BM / 2) * BN +
           (1 + dual) * 2 * BM * 4 + (2 * mx_stages(dual, R) + 4 + 2 * mx_as(R)) * 8;
}
#ifdef MMP_WGMMA
template <int R, int w, int EP, int KT, int DUAL>
struct MmxConsumer {
    static constexpr int S = mx_stages(DUAL, R), NT = 1 + DUAL; /* stages; matrices */
    static constexpr int AS = mx_as(R), AB = rank_rows(R) * (BM / 2) * BN; /* A-row buffers, bytes each */
    static constexpr int XB = mx_xbufs(KT), XL = 8 / XB;      /* X / B row buffers (by row block), k-steps each */
    const MMArgs &a;
    const int8_t *As;
    int *ts;
    uint64_t *full, *empty, *xfull, *xempty, *aempty;
    int warp, gid, tig;
    uint64_t dx0, dw0, db0;
    int half;                         /* N tiles of one matrix (DUAL: tiles half.. are the second's) */
    bool resw;                        /* W resident: tile ni's k-step kt always in stage ni KT + kt, loaded once */
    uint64_t *afull;                  /* resw: the tiles' A-row buffers loaded (else they complete with the tile's first stage) */
    unsigned st = 0, ph = 0, rst = 0; /* the next stage to issue from, its phase; the next stage to release */
    /* tile (row block q, N tile ni): its k-steps' MMAs, and on a matrix's first tile x . B, as one group */
    __device__ __forceinline__ void issue(int q, int ni, int (&d)[64], int (&dt)[16]) {
        const int tn = DUAL && ni >= half, nl = ni - tn * half;
        const int u = q % XB;
        const unsigned xo = (unsigned)(u * XL) * (BM * BK >> 4), bo = (unsigned)((u * NT + tn) * XL) * ((BM / 2) * BK >> 4);
        if (ni == 0) mbar_wait(xfull + u, (unsigned)(q / XB) & 1);
#pragma unroll
        for (int kt = 0; kt < KT; kt++) {
            const unsigned sk = resw ? (unsigned)(ni * KT + kt) : st;
            /* resw: phase 0, complete once the CTA's first row block waited for it (a wait on it after that still cost its
             * try-wait's latency: ~4% of the stall samples, ncu) */
            if (!resw || q == 0) mbar_wait(full + sk, resw ? 0u : ph);
            const unsigned so = sk * (BN * BK >> 4);
            wg_fence();
            if (R == 1 && nl == 0) { /* x . B of the row block's 64 rows against the warpgroup's 32 pairs */
                wg_mma_k64(dt, dx0 + xo + kt * (BM * BK >> 4), db0 + bo + kt * ((BM / 2) * BK >> 4), kt > 0);
            }
            wg_mma_k64(d, dx0 + xo + kt * (BM * BK >> 4), dw0 + so, kt > 0);
            if (!resw && ++st == S) st = 0, ph ^= 1;
        }
        wg_commit();
    }
    /* the tile's MMAs done: its stages released, its accumulators copied out (opaque moves: the compiler keeps
     * them after the wait, and the copies are no accumulators of the next tile's MMAs; EP 2 at rank 1: as 256 v,
     * the epilogue's first operation, so the copy costs no instruction of its own: EP 3; rank 2-4's epi_quad_r8 takes v) */
    int4 tr[2]; /* rank 2-4: the row block's T rows (loaded under its first tile's MMAs) */
    __device__ __forceinline__ void retire(int q, int ni, const int (&d)[64], const int (&dt)[16], int (&e)[64]) {
        if (R >= 2 && ni == 0) load_tr(a, ((int)blockIdx.x + q * (int)gridDim.x) * BM, warp, gid, tr);
        wg_wait<0>();
        if (!resw)
#pragma unroll
            for (int kt = 0; kt < KT; kt++) {
                mbar_arrive(empty + rst);
                if (++rst == S) rst = 0;
            }
        if (ni == a.ntn - 1) mbar_arrive(xempty + q % XB); /* the row block's X and B rows are read */
#pragma unroll
        for (int i = 0; i < 64; i++) {
            if (EP == 2 && R <= 1) asm volatile("shl.b32 %0, %1, 8;" : "=r"(e[i]) : "r"(d[i]));
            else asm volatile("mov.b32 %0, %1;" : "=r"(e[i]) : "r"(d[i]));
        }
        const int tn = DUAL && ni >= half;
        if (R == 1 && ni == tn * half) { /* a warp's ts rows are its own fragment rows */
            wg_ts(dt, ts + ((q & 1) * NT + tn) * BM, warp, gid, tig);
            __syncwarp();
        }
    }
    __device__ __forceinline__ void epilogue(int it, int q, int ni, const int (&e)[64]) {
        const int4 ot[4] = {}; /* PLAIN: no residual */
        const int tn = DUAL && ni >= half;
        if (R > 0 && resw) mbar_wait(afull + it % AS, (unsigned)(it / AS) & 1);
        const int m0 = ((int)blockIdx.x + q * (int)gridDim.x) * BM, n0 = (ni - tn * half) * BN;
        if constexpr (R >= 2)
            wg_frag_direct_r<MODE_PLAIN, R, false, EP == 2>(a, e, As + (it % AS) * AB, tr, m0, n0, warp, gid, tig, ot, aempty + it % AS, a.Y);
        else
            wg_frag_direct<MODE_PLAIN, R, EP == 2 ? 3 : EP>(a, e, As + (it % AS) * AB, ts + ((q & 1) * NT + tn) * BM, m0, n0, warp, gid, tig, ot,
                                                            aempty + it % AS, tn ? a.Y2 : a.Y);
    }
};
/* a warpgroup's tiles: tile it + 1's MMAs run under tile it's epilogue, which works on a copy of its accumulators */
template <int R, int w, int EP, int KT, int DUAL>
__device__ __forceinline__ void mmx_consume(const MMArgs &a, const int8_t *Ws, const int8_t *Xr, const int8_t *Br, const int8_t *As, int *ts,
                                            uint64_t *full, uint64_t *empty, uint64_t *xfull, uint64_t *xempty, uint64_t *aempty,
                                            uint64_t *afull, bool resw, int nrb, int tid) {
    const int lane = tid & 31;
    MmxConsumer<R, w, EP, KT, DUAL> c{a, As, ts, full, empty, xfull, xempty, aempty, tid >> 5, lane >> 2, lane & 3,
                                      wg_desc((unsigned)__cvta_generic_to_shared(Xr) + w * 64 * BK), wg_desc((unsigned)__cvta_generic_to_shared(Ws)),
                                      wg_desc((unsigned)__cvta_generic_to_shared(Br) + w * 32 * BK), DUAL ? a.ntn / 2 : a.ntn, resw, afull};
    int d[64], dt[16], e[64];
    const int T = nrb * a.ntn;
    int q = 0, ni = 0;
    c.issue(q, ni, d, dt);
    for (int it = 0; it < T; it++) {
        c.retire(q, ni, d, dt, e);
        const int pq = q, pn = ni;
        if (++ni == a.ntn) ni = 0, q++;
        if (it + 1 < T) c.issue(q, ni, d, dt);
        c.epilogue(it, pq, pn, e);
    }
    wg_wait<0>(); /* none in flight (retire waited for each): tells ptxas so on the way out */
}
#endif
#define MX_THREADS (3 * 128) /* two consumer warpgroups, a producer warpgroup (setmaxnreg: its registers go to the consumers) */
template <int R, int EP, int KT, int DUAL = 0> /* DUAL: tmw2 (a.Wp2's map) the second matrix, tiles a.ntn / 2.. its */
__global__ void __launch_bounds__(MX_THREADS, 1) mmx_kernel(TMA_GEMM_PARAMS, const __grid_constant__ CUtensorMap tmw2) {
#ifdef MMP_WGMMA
    constexpr int S = mx_stages(DUAL, R), NT = 1 + DUAL;
    constexpr int XB = mx_xbufs(KT), XL = 8 / XB; /* X / B buffers, k-steps each */
    constexpr int AS = mx_as(R), AR = rank_rows(R);  /* A-row buffers, ranks each */
    static_assert(KT <= XL && !(DUAL && XB < 2) && !(DUAL && R >= 2), "mmx_kernel: K <= 512, DUAL only at K <= 256 and rank <= 1");
    extern __shared__ __align__(1024) unsigned char smem[];
    int8_t *Ws = (int8_t *)smem;                  /* stage s: W [BN][BK] */
    int8_t *Xr = Ws + S * BN * BK;                /* [XB][XL][BM][BK]: the row block's X rows, buffer q % XB */
    int8_t *Br = Xr + 2 * 4 * BM * BK;            /* [XB][NT][XL][BM/2][BK]: its pairs' B rows (of each matrix; rank 1) */
    int8_t *As = Br + (R >= 2 ? 0 : NT * 2 * 4 * (BM / 2) * BK); /* [AS][AR][BM/2][BN]: the tile's pairs' A rows, tile it's in buffer it % AS */
    int *ts = (int *)(As + AS * AR * (BM / 2) * BN);  /* [2][NT][BM]: sign * (x . B), by row-block parity (rank 1) */
    uint64_t *full = (uint64_t *)(ts + NT * 2 * BM), *empty = full + S, *xfull = empty + S, *xempty = xfull + 2, *aempty = xempty + 2;
    uint64_t *afull = aempty + AS;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    /* W resident where every tile's stages fit (Wf, Wh at hidden 256, a head of <= 256 rows): they load with the CTA's
     * first row block and stay, and the tiles' A rows complete afull. Not with DUAL (Wf and Wh at 128), which ran 6%
     * slower so */
    const bool resw = !DUAL && a.resw && a.ntn * KT <= S;
    if (tid == 0) {
        for (int st = 0; st < S; st++) {
            mbar_init(full + st, 1);
            mbar_init(empty + st, 256); /* every consumer thread, after its warpgroup's MMAs on the stage are done */
        }
        for (int u = 0; u < 2; u++) {
            mbar_init(xfull + u, 1);
            mbar_init(xempty + u, 256);
        }
        for (int u = 0; u < AS; u++) {
            mbar_init(aempty + u, 256);
            mbar_init(afull + u, 1);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    const int G = (int)gridDim.x; /* KT = K / BK (launch_mm) */
    const int nrb = (int)blockIdx.x < a.mtn ? (a.mtn - 1 - (int)blockIdx.x) / G + 1 : 0; /* this CTA's row blocks */
    if (warp >= 8) { /* producer: one thread walks the row blocks and their tiles' k-steps */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
        if (warp == 8 && lane == 0) {
            int j = 0, it = 0;
            const int half = a.ntn / NT;
            const uint64_t once = l2_policy(L2_FIRST), keep = l2_policy(L2_LAST);
            /* tile it's pairs' A rows (of each rank: A_j at column aoff + j N) into its buffer */
            auto load_a = [&](int it, int tn, int n0, int p0, uint64_t *bar) {
                for (int j = 0; j < AR; j++)
                    tma_load_2d(As + (it % AS) * AR * (BM / 2) * BN + j * (BM / 2) * BN, &tmn, (int)(tn ? a.aoff2 : a.aoff) + j * a.N + n0, p0, bar, keep);
            };
            for (int q = 0; q < nrb; q++) {
                const int m0 = ((int)blockIdx.x + q * G) * BM, u = q % XB;
                const int p0 = R > 0 ? (m0 >> 1) % a.wrap : 0; /* the row block's pairs p0 .. p0 + 63 (launch_mm) */
                if (q >= XB) mbar_wait(xempty + u, (unsigned)(q / XB - 1) & 1);
                mbar_expect_tx(xfull + u, KT * BM * BK + (R == 1 ? NT * KT * (BM / 2) * BK : 0));
                for (int kt = 0; kt < KT; kt++) {
                    tma_load_2d(Xr + (u * XL + kt) * BM * BK, &tmx, kt * BK, m0, xfull + u, once);
                    if (R == 1) /* B boxes of 32 pairs */
                        for (int tn = 0; tn < NT; tn++) {
                            const int kb = (int)((tn ? a.aoff2 : a.aoff) + a_span(1, a.N)) + kt * BK;
                            int8_t *bb = Br + ((u * NT + tn) * XL + kt) * (BM / 2) * BK;
                            tma_load_2d(bb, &tmb, kb, p0, xfull + u, keep);
                            tma_load_2d(bb + 32 * BK, &tmb, kb, p0 + 32, xfull + u, keep);
                        }
                }
                for (int ni = 0; ni < a.ntn; ni++, it++) {
                    const int tn = DUAL && ni >= half, n0 = (ni - tn * half) * BN;
                    for (int kt = 0; kt < KT && resw; kt++) {
                        if (q == 0) {
                            const int st = ni * KT + kt;
                            mbar_expect_tx(full + st, BN * BK);
                            tma_load_2d(Ws + st * BN * BK, tn ? &tmw2 : &tmw, kt * BK, n0, full + st, keep);
                        }
                        if (R > 0 && kt == 0) {
                            if (it >= AS) mbar_wait(aempty + it % AS, (unsigned)(it / AS - 1) & 1);
                            mbar_expect_tx(afull + it % AS, AR * (BM / 2) * BN);
                            load_a(it, tn, n0, p0, afull + it % AS);
                        }
                    }
                    for (int kt = 0; kt < KT && !resw; kt++, j++) {
                        const int st = j % S;
                        if (j >= S) mbar_wait(empty + st, (unsigned)(j / S - 1) & 1);
                        if (R > 0 && kt == 0 && it >= AS) mbar_wait(aempty + it % AS, (unsigned)(it / AS - 1) & 1);
                        mbar_expect_tx(full + st, BN * BK + (R > 0 && kt == 0 ? AR * (BM / 2) * BN : 0));
                        tma_load_2d(Ws + st * BN * BK, tn ? &tmw2 : &tmw, kt * BK, n0, full + st, keep);
                        if (R > 0 && kt == 0) load_a(it, tn, n0, p0, full + st);
                    }
                }
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    if (nrb == 0) return;
    if (warp < 4) mmx_consume<R, 0, EP, KT, DUAL>(a, Ws, Xr, Br, As, ts, full, empty, xfull, xempty, aempty, afull, resw, nrb, tid);
    else mmx_consume<R, 1, EP, KT, DUAL>(a, Ws, Xr, Br, As, ts, full, empty, xfull, xempty, aempty, afull, resw, nrb, tid);
#else
    (void)a; (void)tmx; (void)tmw; (void)tmb; (void)tmn; (void)tmw2; /* not launched: the host checks wgmma_probe first */
#endif
}

/* The RESID GEMM with N a multiple of 256 (down: K = 4H), and the PLAIN ones with K > 512 (Wf, Wh, up, head at hidden
 * 768 and 1024, where mmx_kernel's resident row block does not fit), with W's permuted copy: a CTA's tile is 128 rows x 256
 * columns (at N = 256 a whole row block; at N = 512, 1024 a row block's tiles are adjacent, so the second reads its X
 * and B rows from L2), so the row block's X and B rows (K = 1024: 192 KB) load once per 256 columns, not per 128. mmw
 * kernel's down runs at L2's bandwidth (328 KB a 128 x 128 tile); here a row block takes 464 KB instead of 656.
 * A warpgroup's 64 rows: two m64n128k32 (the W halves) and one m64n32k32 (its pairs' B rows) per k32, 144
 * accumulators (setmaxnreg gives the consumers the producer warpgroup's registers). Same MMAs and epilogue
 * (wg_frag_direct, once per half) as mmw_kernel. With N an odd multiple of 128 (down at hidden 128 at rank 2-4, at
 * hidden 384 at every rank): NH = 1 half, tiles of 128 x 128; from N = 640 (mmd_odd2) NH = 2, the row block's last
 * tile's second half past N: its W rows come as zeros (TMA's out-of-bounds fill), its epilogue is skipped. */
#define MD_STAGES 6
/* X, W (NH 128-row halves), B: 28 KB (20 KB with one half); at rank R >= 2 no B (T from xb_kernel): 24 KB (16 KB) */
__host__ __device__ constexpr int mmd_stage_bytes(int R = 1, int NH = 2) { return (BM + NH * BN + (R >= 2 ? 0 : BM / 2)) * BK; }
/* the A rows of both halves: by tile parity at rank <= 1; at rank R >= 2 one buffer of R ranks' rows ([NH][R][BM/2][BN]),
 * loaded with k-step MD_STAGES of its tile (afull), when the epilogue before has released it */
__host__ __device__ constexpr int mmd_abytes(int R = 1, int NH = 2) { return R >= 2 ? NH * R * (BM / 2) * BN : 2 * 2 * (BM / 2) * BN; }
__host__ __device__ constexpr int mmd_smem_bytes(int R = 1, int NH = 2) {
    return MD_STAGES * mmd_stage_bytes(R, NH) + mmd_abytes(R, NH) + 2 * BM * 4 + (2 * MD_STAGES + 3) * 8;
}
#ifdef MMP_WGMMA
template <int R, int w, int W, int MODE, int NH>
__device__ __forceinline__ void mmd_consume(const MMArgs &a, const int8_t *St, const int8_t *As, int *ts, uint64_t *full, uint64_t *empty,
                                            uint64_t *aempty, uint64_t *afull, int mine, int KT, int tid) {
    constexpr int SB = mmd_stage_bytes(R, NH);
    const int warp = tid >> 5, lane = tid & 31, gid = lane >> 2, tig = lane & 3;
    int d0[64], d1[64], dt[16];
    int4 tr[2]; /* rank 2-4: the tile's T rows */
    unsigned st = 0, ph = 0, pst = 0;
    const unsigned sb = (unsigned)__cvta_generic_to_shared(St);
    const uint64_t dx0 = wg_desc(sb + w * 64 * BK), dw0 = wg_desc(sb + BM * BK), dw1 = wg_desc(sb + (BM + BN) * BK),
                   db0 = wg_desc(sb + (BM + NH * BN + w * 32) * BK);
    const int P = NH == 2 ? (a.ntn + 1) >> 1 : a.ntn; /* tiles of NH 128 columns a row block (odd N: the last tile's second half
                                                       * past N, its W rows zeros by TMA, its epilogue skipped) */
    for (int it = 0; it < mine; it++) {
        const int g = (int)blockIdx.x + it * (int)gridDim.x, m0 = (g / P) * BM, n0 = (g - (g / P) * P) * NH * BN;
        int4 ot[2][4] = {}; /* RESID: the residual of both halves, loading under the tile's MMAs (wg_frag_direct's store order) */
        if (MODE == MODE_RESID)
#pragma unroll
            for (int h = 0; h < NH; h++)
                if (h == 0 || n0 + BN < a.N) frag_direct_resid(a, m0, n0 + h * BN, warp, gid, tig, ot[h]);
        if (R >= 2) load_tr(a, m0, warp, gid, tr);
        for (int kt = 0; kt < KT; kt++) {
            mbar_wait(full + st, ph);
            const unsigned so = st * (SB >> 4);
            wg_fence();
            if (R == 1) wg_mma_k64(dt, dx0 + so, db0 + so, kt > 0);
            wg_mma_k64(d0, dx0 + so, dw0 + so, kt > 0);
            if (NH == 2) wg_mma_k64(d1, dx0 + so, dw1 + so, kt > 0);
            wg_commit();
            wg_wait<1>(); /* the previous k-step's MMAs are done: its stage is free as far as this warpgroup goes */
            if (kt > 0) mbar_arrive(empty + pst);
            pst = st;
            if (++st == MD_STAGES) st = 0, ph ^= 1;
        }
        wg_wait<0>();
        mbar_arrive(empty + pst);
        if constexpr (R >= 2) { /* W: p in 64 bits (K > 512) */
            mbar_wait(afull, (unsigned)it & 1);
            wg_frag_direct_r<MODE, R, W != 0>(a, d0, As, tr, m0, n0, warp, gid, tig, ot[0], aempty, a.Y);
            if (NH == 2) {
                if (n0 + BN < a.N) wg_frag_direct_r<MODE, R, W != 0>(a, d1, As + R * (BM / 2) * BN, tr, m0, n0 + BN, warp, gid, tig, ot[1], aempty, a.Y);
                else mbar_arrive(aempty); /* the half past N: its A rows released unread */
            }
            continue;
        }
        int *tsp = ts + (it & 1) * BM;
        if (R > 0) { /* a warp's ts rows are its own fragment rows */
            wg_ts(dt, tsp, warp, gid, tig);
            __syncwarp();
        }
        const int8_t *Ab = As + (it & 1) * 2 * (BM / 2) * BN;
        wg_frag_direct<MODE, R, W ? 4 : 0>(a, d0, Ab, tsp, m0, n0, warp, gid, tig, ot[0], aempty + (it & 1), a.Y);
        if (NH == 2) {
            if (n0 + BN < a.N) wg_frag_direct<MODE, R, W ? 4 : 0>(a, d1, Ab + (BM / 2) * BN, tsp, m0, n0 + BN, warp, gid, tig, ot[1], aempty + (it & 1), a.Y);
            else if (R > 0) mbar_arrive(aempty + (it & 1)); /* the half past N: its A rows released unread */
        }
    }
}
#endif
/* W: rank 1 with K > 2048, t A in 64 bits (epi_pair_w); rank 2-4 with K > 512, p in 64 bits (epi_quad_r); MODE: RESID or PLAIN;
 * NH: 128-column halves a tile */
template <int R, int W = 0, int MODE = MODE_RESID, int NH = 2>
__global__ void __launch_bounds__(MX_THREADS, 1) mmd_kernel(TMA_GEMM_PARAMS) {
#ifdef MMP_WGMMA
    constexpr int SB = mmd_stage_bytes(R, NH);
    extern __shared__ __align__(1024) unsigned char smem[];
    int8_t *St = (int8_t *)smem;                        /* stage s: X [BM][BK], W [NH BN][BK], B [BM/2][BK] (rank 1) */
    int8_t *As = St + MD_STAGES * SB;                   /* the pairs' A rows of both halves (mmd_abytes) */
    int *ts = (int *)(As + mmd_abytes(R, NH));          /* [2][BM]: sign * (x . B), by tile parity (rank 1) */
    uint64_t *full = (uint64_t *)(ts + 2 * BM), *empty = full + MD_STAGES, *aempty = empty + MD_STAGES, *afull = aempty + 2;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    if (tid == 0) {
        for (int st = 0; st < MD_STAGES; st++) {
            mbar_init(full + st, 1);
            mbar_init(empty + st, 256); /* every consumer thread, after its warpgroup's MMAs on the stage are done */
        }
        mbar_init(aempty, 256 * NH); /* every consumer thread, once per half */
        mbar_init(aempty + 1, 256 * NH);
        mbar_init(afull, 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    const int KT = (a.K + BK - 1) / BK, G = (int)gridDim.x, P = NH == 2 ? (a.ntn + 1) >> 1 : a.ntn, ntiles = a.mtn * P;
    const int kta = KT > MD_STAGES ? MD_STAGES : KT - 1; /* rank 2-4: the k-step whose load brings the tile's A rows */
    const int mine = (int)blockIdx.x < ntiles ? (ntiles - 1 - (int)blockIdx.x) / G + 1 : 0; /* this CTA's tiles */
    if (warp >= 8) { /* producer: one thread walks the tiles' k-steps */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
        if (warp == 8 && lane == 0) {
            int j = 0;
            const uint64_t once = l2_policy(L2_FIRST), keep = l2_policy(L2_LAST);
            for (int it = 0; it < mine; it++) {
                const int g = (int)blockIdx.x + it * G, m0 = (g / P) * BM, n0 = (g - (g / P) * P) * NH * BN;
                const int p0 = R > 0 ? (m0 >> 1) % a.wrap : 0; /* the row block's pairs p0 .. p0 + 63 (launch_mm) */
                for (int kt = 0; kt < KT; kt++, j++) {
                    const int st = j % MD_STAGES;
                    if (j >= MD_STAGES) mbar_wait(empty + st, (unsigned)(j / MD_STAGES - 1) & 1);
                    if (R == 1 && kt == 0 && it >= 2) mbar_wait(aempty + (it & 1), (unsigned)((it >> 1) - 1) & 1);
                    int8_t *sb = St + st * SB;
                    mbar_expect_tx(full + st, (BM + NH * BN) * BK + (R == 1 ? (BM / 2) * BK + (kt == 0 ? NH * (BM / 2) * BN : 0) : 0));
                    tma_load_2d(sb, &tmx, kt * BK, m0, full + st, once);
                    tma_load_2d(sb + BM * BK, &tmw, kt * BK, n0, full + st, keep);
                    if (NH == 2) tma_load_2d(sb + (BM + BN) * BK, &tmw, kt * BK, n0 + BN, full + st, keep);
                    if (R >= 2 && kt == kta) { /* the A rows of both halves, once the tile before's epilogue released them: its
                                                * consumers are past it by now (the stages of this tile's first k-steps are free) */
                        if (it >= 1) mbar_wait(aempty, (unsigned)(it - 1) & 1);
                        mbar_expect_tx(afull, NH * R * (BM / 2) * BN);
                        for (int h = 0; h < NH; h++)
                            for (int jr = 0; jr < R; jr++)
                                tma_load_2d(As + (h * R + jr) * (BM / 2) * BN, &tmn, (int)a.aoff + jr * a.N + n0 + h * BN, p0, afull, keep);
                    }
                    if (R == 1) { /* B boxes of 32 pairs */
                        const int kb = (int)(a.aoff + a_span(1, a.N)) + kt * BK;
                        tma_load_2d(sb + (BM + NH * BN) * BK, &tmb, kb, p0, full + st, keep);
                        tma_load_2d(sb + (BM + NH * BN + 32) * BK, &tmb, kb, p0 + 32, full + st, keep);
                        if (kt == 0) {
                            int8_t *ab = As + (it & 1) * 2 * (BM / 2) * BN;
                            tma_load_2d(ab, &tmn, (int)a.aoff + n0, p0, full + st, keep);
                            if (NH == 2) tma_load_2d(ab + (BM / 2) * BN, &tmn, (int)a.aoff + n0 + BN, p0, full + st, keep);
                        }
                    }
                }
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    if (warp < 4) mmd_consume<R, 0, W, MODE, NH>(a, St, As, ts, full, empty, aempty, afull, mine, KT, tid);
    else mmd_consume<R, 1, W, MODE, NH>(a, St, As, ts, full, empty, aempty, afull, mine, KT, tid);
#else
    (void)a; (void)tmx; (void)tmw; (void)tmb; (void)tmn; /* not launched: the host checks wgmma_probe first */
#endif
}

/* rank 2-4 for mmx_kernel and mmd_kernel: T[m][j] = sign * (x_m . B_j), j < R, for the rows m < M of X ([M][K], ldx): rows
 * [time][n members], so row t n + 2 p + h is member h of pair p < wrap = n / 2 at timestep t (B_j at noise + p pstride +
 * boff + j K; sign - for h = 1), as egg_mm_out's t (int32: |t| <= 127 * 90 * K); NM = 2: also T2 = T + 4 M from a second
 * matrix's B (boff2), X read once. A group of G lanes (a power of two, 4..32) takes one pair at timesteps ts, ts + tsl,
 * ...: its B rows stay in registers (CH 16-byte chunks a lane and rank, K = 16 CH G) while its two rows of each timestep
 * stream through, so B is read once a group rather than once a timestep (CH 0: K any multiple of 16, B re-read each
 * timestep). T's rows are 16 bytes; lanes 0 .. 2 NM - 1 write them */
template <int R, int NM, int CH>
__global__ void __launch_bounds__(256) xb_kernel(int M, int K, const int8_t *X, int ldx, const int8_t *noise, size_t pstride, size_t boff,
                                                 size_t boff2, int wrap, int G, int tsl, int32_t *T) {
    const int sub = (int)(threadIdx.x % (unsigned)G), gi = (int)((blockIdx.x * blockDim.x + threadIdx.x) / (unsigned)G);
    const int n = 2 * wrap, tc = M / n, p = gi % wrap, ts = gi / wrap, kc = K / 16;
    if (ts >= tsl) return; /* whole groups, and a warp's groups share ts (wrap is a multiple of 8) */
    const int8_t *nb = noise + (size_t)p * pstride;
    int4 Bc[NM][R][CH > 0 ? CH : 1];
#pragma unroll
    for (int mt = 0; mt < NM; mt++)
#pragma unroll
        for (int j = 0; j < R; j++)
#pragma unroll
            for (int i = 0; i < CH; i++) Bc[mt][j][i] = __ldg((const int4 *)(nb + (mt ? boff2 : boff) + (size_t)j * K + 16 * (sub + i * G)));
    for (int t = ts; t < tc; t += tsl) {
        const int8_t *x0 = X + ((size_t)t * n + 2 * p) * ldx, *x1 = x0 + ldx;
        int acc[NM][R][2] = {};
        auto dot = [&](const int4 (&b)[NM][R], int4 a0, int4 a1) {
#pragma unroll
            for (int mt = 0; mt < NM; mt++)
#pragma unroll
                for (int j = 0; j < R; j++) {
                    acc[mt][j][0] = dot16_acc(a0, b[mt][j], acc[mt][j][0]);
                    acc[mt][j][1] = dot16_acc(a1, b[mt][j], acc[mt][j][1]);
                }
        };
        if (CH > 0) {
#pragma unroll
            for (int i = 0; i < CH; i++) {
                int4 b[NM][R];
#pragma unroll
                for (int mt = 0; mt < NM; mt++)
#pragma unroll
                    for (int j = 0; j < R; j++) b[mt][j] = Bc[mt][j][CH > 0 ? i : 0];
                dot(b, __ldg((const int4 *)(x0 + 16 * (sub + i * G))), __ldg((const int4 *)(x1 + 16 * (sub + i * G))));
            }
        } else {
            for (int c = sub; c < kc; c += G) {
                int4 b[NM][R];
#pragma unroll
                for (int mt = 0; mt < NM; mt++)
#pragma unroll
                    for (int j = 0; j < R; j++) b[mt][j] = __ldg((const int4 *)(nb + (mt ? boff2 : boff) + (size_t)j * K + 16 * c));
                dot(b, __ldg((const int4 *)(x0 + 16 * c)), __ldg((const int4 *)(x1 + 16 * c)));
            }
        }
#pragma unroll
        for (int mt = 0; mt < NM; mt++)
#pragma unroll
            for (int j = 0; j < R; j++)
#pragma unroll
                for (int h = 0; h < 2; h++)
                    for (int o = G / 2; o > 0; o >>= 1) acc[mt][j][h] += __shfl_xor_sync(0xffffffffu, acc[mt][j][h], o);
        if (sub < 2 * NM) { /* lane sub: row 2 p + h of matrix mt */
            const int mt = sub >> 1, h = sub & 1;
            int4 o = make_int4(0, 0, 0, 0);
#pragma unroll
            for (int j = 0; j < R; j++) {
                const int v = mt ? (h ? acc[NM - 1][j][1] : acc[NM - 1][j][0]) : (h ? acc[0][j][1] : acc[0][j][0]);
                (&o.x)[j] = h ? -v : v;
            }
            *(int4 *)(T + (size_t)mt * 4 * M + 4 * ((size_t)t * n + 2 * p + h)) = o;
        }
    }
}
#endif /* EGG_MMW_CUH */

/* egg_forward.cuh — the host side of the forward: which kernel runs each MM (launch_mm: mmx, mmw, mmd,
 * mmp or mm_kernel, by shape, rank and GPU), the fused MLP, EGG-LN, and forward(): a chunk of timesteps
 * through the embedding, every layer, the head and the loss, as launches on the backend's stream.
 * Part of the CUDA backend: included once by kernels/cuda/egg_cuda.cu (one translation unit), after CudaImpl. */
#ifndef EGG_FORWARD_CUH
#define EGG_FORWARD_CUH

#ifdef EGG_MMP
/* f(std::integral_constant<int, R>) for the rank R = 2, 3 or 4: the rank 2-4 kernels' template argument from c->r */
template <class F> static void rank_go(int R, F &&f) {
    if (R == 2) f(std::integral_constant<int, 2>{});
    else if (R == 3) f(std::integral_constant<int, 3>{});
    else f(std::integral_constant<int, 4>{});
}
/* rank R = 2-4: T = the rows' sign * x . B_j of nm matrices (their B at noise + p pstride + bo, bo2) in one xb_kernel launch:
 * G lanes a pair, CH chunks a lane with B in registers where K = 16 CH G fits; rows [time][members], M a multiple of them */
static int xb_run(CudaImpl *c, int R, int nm, int M, int K, const int8_t *X, int ldx, const int8_t *noise, size_t pstride, size_t bo, size_t bo2,
                  int wrap, int32_t *T, egg_err *err) {
    const int kc = K / 16;
    int ch = 0, G = 32;
    if (kc == 8) ch = 1, G = 8;
    else if (kc == 16 || kc == 32 || kc == 64) ch = 2, G = kc / 2;
    else if (kc == 24 || kc == 48 || kc == 96) ch = 3, G = kc / 3; /* K = 384, 768, 1536 */
    else if (kc == 128 && nm == 1) ch = 4, G = 32;
    /* timestep slices: about 32 warps an SM */
    const int tcs = M / (2 * wrap);
    int tsl = (int)(((long long)c->nsm * 1024) / ((long long)wrap * G));
    tsl = tsl < 1 ? 1 : tsl > tcs ? tcs : tsl;
    const int nb = (int)(((long long)wrap * tsl * G + 255) / 256);
#define XB_GO(RR, NM, CH) xb_kernel<RR, NM, CH><<<nb, 256, 0, c->st>>>(M, K, X, ldx, noise, pstride, bo, bo2, wrap, G, tsl, T)
#define XB_CH(RR, NM) (ch == 1 ? XB_GO(RR, NM, 1) : ch == 2 ? XB_GO(RR, NM, 2) : ch == 3 ? XB_GO(RR, NM, 3) : ch == 4 ? XB_GO(RR, NM, 4) : XB_GO(RR, NM, 0))
#define XB_NM(RR) (nm == 2 ? XB_CH(RR, 2) : XB_CH(RR, 1))
    rank_go(R, [&](auto rr) { XB_NM(decltype(rr)::value); });
#undef XB_NM
#undef XB_CH
#undef XB_GO
    CKL();
    prof_mark(c, P_XB);
    return 0;
}
/* mmd_kernel's 128 x 256 tiles where N is an odd multiple of 128 from 640 (hidden 640, 896: Wf, Wh, down), the row block's
 * last tile's second half past N (its W rows zeros, its epilogue skipped): a sixth or less of the MMAs wasted, against
 * reloading the row block's X and B rows for every 128 columns (EGG_CUDA_MMDODD=0: 128 x 128 tiles; at 384, a quarter
 * wasted, measured even, they stay) */
static bool mmd_odd2(const CudaImpl *c, int N) { return c->mmdodd && N % (2 * BN) == BN && N >= 5 * BN; }
/* mmd_kernel's 128-column halves a tile for N (a multiple of 128): 2 where N is a multiple of 256 or mmd_odd2, else 1 */
static int mmd_nh(const CudaImpl *c, int N) { return N % (2 * BN) == 0 || mmd_odd2(c, N) ? 2 : 1; }
/* the PLAIN GEMMs that mmx_kernel takes in whole row blocks, every rank: K = 128, 256, and 384, 512 (one X buffer a
 * CTA; EGG_CUDA_MMX512=0: not those) */
static bool mmx_takes(const CudaImpl *c, int K) { return c->mmx && (K == 128 || K == 256 || ((K == 384 || K == 512) && c->mmx512)); }
/* rank 2-4 in the persistent GEMMs (sm_90a, W's permuted copy; EGG_CUDA_RGEMM=0: mm_kernel): PLAIN with K = 128 to
 * 512 in mmx_kernel (mmx_takes), RESID with N a multiple of 128 and PLAIN with K > 512 in mmd_kernel, after xb_kernel's
 * T (each row's sign * x . B_j into a.T; where a has a second matrix, for both: *tboth = 1, and the second's launch
 * finds its rows at a.T + 4 M, a.tready). *done = 0 where none applies (mm_kernel runs it) */
static int launch_mmr(CudaImpl *c, int mode, MMArgs a, int *done, int *tboth, egg_err *err) {
    *done = 0;
    const int R = a.r;
    if (!c->rgemm || R < 2 || R > 4 || !a.T || c->mmw_ctas <= 0 || !c->tmap_encode || !a.Wp || (mode != MODE_PLAIN && mode != MODE_RESID))
        return 0;
    const uintptr_t al = (uintptr_t)a.Y | (uintptr_t)a.other | (uintptr_t)a.X | (uintptr_t)a.Wp | (uintptr_t)a.ldx | (uintptr_t)a.ldw |
                         (uintptr_t)a.ldy | (uintptr_t)a.pstride | (uintptr_t)a.T | (uintptr_t)a.aoff | (uintptr_t)(a.Y2 ? a.aoff2 : 0);
    if ((al & 15) || a.N % BN || a.K % BK || a.wrap <= 0 || a.wrap % (BM / 2) || a.M % (2 * a.wrap) || a.pstride >= ((size_t)1 << 31)) return 0;
    const bool mx = mode == MODE_PLAIN && mmx_takes(c, a.K);
    /* mmd_kernel: 128 x 256 tiles, or where N is an odd multiple of 128 (down at hidden 128 and 384) 128 x 128 (nh 1) */
    const int nh = mmd_nh(c, a.N);
    const bool md = !mx && c->mmd && (nh == 2 || c->mmd > 1) &&
                    ((mode == MODE_RESID && (a.N == 2 * BN || c->mmd > 1)) || (mode == MODE_PLAIN && a.K > 512 && c->mmd > 1));
    if (!mx && !md) return 0;
    CUtensorMap tmx, tmw, tmn;
    memset(&tmx, 0, sizeof tmx);
    memset(&tmw, 0, sizeof tmw);
    memset(&tmn, 0, sizeof tmn);
    if (!tmap_2d(c->tmap_encode, &tmx, a.X, a.K, a.M, a.ldx, BM) || !tmap_2d(c->tmap_encode, &tmw, a.Wp, a.K, a.N, a.ldw, BN) ||
        !tmap_2d(c->tmap_encode, &tmn, a.noise, a.pstride, (size_t)a.wrap, a.pstride, BM / 2, BN))
        return 0;
    if (!a.tready) {
        const int nm = a.Y2 ? 2 : 1;
        const int rc = xb_run(c, R, nm, a.M, a.K, a.X, a.ldx, a.noise, a.pstride, a.aoff + a_span(R, a.N), a.aoff2 + a_span(R, a.N), a.wrap, a.T, err);
        if (rc) return rc;
        *tboth = nm == 2;
    }
    a.mtn = (a.M + BM - 1) / BM;
    a.ntn = a.N / BN;
    a.tma = 1;
    if (mx) {
        const int nx = a.mtn < c->mmw_ctas ? a.mtn : c->mmw_ctas;
        a.resw = c->resw;
        const bool e8 = a.s == 8 && a.pshift == 8; /* K <= 256 at the default sigma-shift: epi_quad_r8 */
#define MXR_GO(RR, EP, KT) mmx_kernel<RR, EP, KT, 0><<<nx, MX_THREADS, mmx_smem_bytes(0, RR), c->st>>>(a, tmx, tmw, tmn, tmn, tmw)
#define MXR_K(RR)                                                                                                   \
    (a.K == 512   ? MXR_GO(RR, 0, 8)                                                                                \
     : a.K == 384 ? MXR_GO(RR, 0, 6)                                                                                \
     : a.K == 256 ? (e8 ? MXR_GO(RR, 2, 4) : MXR_GO(RR, 0, 4))                                                      \
                  : (e8 ? MXR_GO(RR, 2, 2) : MXR_GO(RR, 0, 2)))
        rank_go(R, [&](auto rr) { MXR_K(decltype(rr)::value); });
#undef MXR_K
#undef MXR_GO
    } else { /* p in 64 bits where K > 512 */
        const int td = a.mtn * ((a.ntn + nh - 1) / nh), nd = td < c->mmw_ctas ? td : c->mmw_ctas;
#define MDR_GO(RR, W, M, NH) mmd_kernel<RR, W, M, NH><<<nd, MX_THREADS, mmd_smem_bytes(RR, NH), c->st>>>(a, tmx, tmw, tmn, tmn)
#define MDR_N(RR, W, M) (nh == 2 ? MDR_GO(RR, W, M, 2) : MDR_GO(RR, W, M, 1))
#define MDR_M(RR, W) (mode == MODE_RESID ? MDR_N(RR, W, MODE_RESID) : MDR_N(RR, W, MODE_PLAIN))
#define MDR_R(RR) (a.K > 512 ? MDR_M(RR, 1) : MDR_M(RR, 0))
        rank_go(R, [&](auto rr) { MDR_R(decltype(rr)::value); });
#undef MDR_R
#undef MDR_M
#undef MDR_N
#undef MDR_GO
    }
    CKL();
    *done = 1;
    return 0;
}
#endif
/* one launch of GEMM a; where a has a second matrix (a.Y2) and the mmx_kernel path runs both in that launch,
 * *both = 1 (else the second is left to launch_mm); *tboth = 1 where launch_mmr's T covers the second too */
static int launch_mm1(CudaImpl *c, int mode, MMArgs a, int *both, int *tboth, egg_err *err) {
    dim3 grid((a.M + BM - 1) / BM, (a.N + BN - 1) / BN, 1);
#ifdef EGG_MMP
    if (mode != MODE_UPDATE && a.r >= 2) {
        int done = 0;
        const int rc = launch_mmr(c, mode, a, &done, tboth, err);
        if (rc || done) return rc;
    }
    /* the update's GEMM (K = the pairs, ld = K, a multiple of 64) in the warp-specialised kernel: K split
     * into pieces so the tiles cover the GPU's CTAs twice, partial sums added into Z */
    if (mode == MODE_UPDATE && c->mmw_ctas > 0 && ((uintptr_t)a.X | (uintptr_t)a.W | (uintptr_t)a.ldx | (uintptr_t)a.ldw) % 16 == 0) {
        CUtensorMap tmx, tmw;
        memset(&tmx, 0, sizeof tmx);
        memset(&tmw, 0, sizeof tmw);
        if (tmap_2d(c->tmap_encode, &tmx, a.X, a.K, a.M, a.ldx, BM) && tmap_2d(c->tmap_encode, &tmw, a.W, a.K, a.N, a.ldw, BN)) {
            a.mtn = (int)grid.x;
            a.ntn = (int)grid.y;
            /* pieces of at least 16 k-steps (each piece's tile ends in 16 K atomics per thread), about one tile per CTA */
            const int mn = a.mtn * a.ntn, KT = (a.K + BK - 1) / BK, want = (c->mmw_ctas + mn - 1) / mn;
            const int per = max((KT + want - 1) / want, 16), tiles = mn * ((KT + per - 1) / per);
            a.ksplit = per * BK;
            a.tma = 1;
            mmw_kernel<MODE_UPDATE, 0><<<tiles < c->mmw_ctas ? tiles : c->mmw_ctas, WS_THREADS, mmw_smem_bytes(), c->st>>>(a, tmx, tmw, tmx, tmx);
            CKL();
            return 0;
        }
    }
    /* the persistent kernel: rank <= 1 with p in int32, N in 16-byte chunks, >= 2 k-steps
     * (its A rows are double-buffered by tile parity, which needs a tile's first load
     * issued after the tile before the previous one is done) */
    const uintptr_t al = (uintptr_t)a.Y | (uintptr_t)a.other | (uintptr_t)a.bias | (uintptr_t)a.h | (uintptr_t)a.gout |
                         (uintptr_t)a.f | (uintptr_t)a.xres | (uintptr_t)a.hs | (uintptr_t)a.voff | (uintptr_t)a.pstride;
    /* p64: t A may pass int32 (rank 1, K > 2048: down at hidden 1024); only mmd_kernel's 64-bit epilogue takes it here */
    const bool p64 = a.r > 0 && a.K > 2048;
    if (c->mmp_ctas > 0 && mode != MODE_UPDATE && mode != MODE_BIAS && a.r <= 1 &&
        (!p64 || (mode == MODE_RESID && c->mmd > 1 && a.N % BN == 0 && a.Wp)) && a.K > BK && a.N % 16 == 0 &&
        a.ldy % 16 == 0 && (al & 15) == 0) {
        a.mtn = (int)grid.x;
        a.ntn = (int)grid.y;
        const int tiles = a.mtn * a.ntn, nb = tiles < c->mmp_ctas ? tiles : c->mmp_ctas, sm = mmp_smem_bytes();
        CUtensorMap tmx, tmw, tmb, tmn;
        memset(&tmx, 0, sizeof tmx);
        memset(&tmw, 0, sizeof tmw);
        memset(&tmb, 0, sizeof tmb);
        memset(&tmn, 0, sizeof tmn);
        a.tma = c->tmap_encode && (((uintptr_t)a.X | (uintptr_t)a.W | (uintptr_t)a.ldx | (uintptr_t)a.ldw) & 15) == 0 &&
                tmap_2d(c->tmap_encode, &tmx, a.X, a.K, a.M, a.ldx, BM) && tmap_2d(c->tmap_encode, &tmw, a.W, a.K, a.N, a.ldw, BN);
        /* rank 1 by TMA: a row block's 64 pairs must be 64 consecutive rows of the noise blob [wrap][pstride]
         * (rows are [time][members], so 128 | members); else every tile loads by cp.async */
        const bool ws = c->mmw_ctas > 0 && (mode == MODE_PLAIN || mode == MODE_RESID);
        if (a.tma && a.r) /* B boxes: 32 pairs (one warpgroup's) in mmw_kernel, 64 in mmp_kernel */
            a.tma = a.wrap > 0 && a.wrap % (BM / 2) == 0 && a.pstride < ((size_t)1 << 31) &&
                    tmap_2d(c->tmap_encode, &tmb, a.noise, a.pstride, (size_t)a.wrap, a.pstride, ws ? BM / 4 : BM / 2) &&
                    tmap_2d(c->tmap_encode, &tmn, a.noise, a.pstride, (size_t)a.wrap, a.pstride, BM / 2, BN);
        CUtensorMap tmp; /* W's permuted copy: the direct epilogue */
        memset(&tmp, 0, sizeof tmp);
        const bool wpm = a.tma && ws && a.Wp && a.N % BN == 0 && tmap_2d(c->tmap_encode, &tmp, a.Wp, a.K, a.N, a.ldw, BN);
        if (a.tma && ws && (!p64 || wpm)) {
            const int nw = tiles < c->mmw_ctas ? tiles : c->mmw_ctas, smw = mmw_smem_bytes();
#define MMW_GO(M)                                                                                                   \
    (a.r ? mmw_kernel<M, 1><<<nw, WS_THREADS, smw, c->st>>>(a, tmx, tmw, tmb, tmn)                                   \
         : mmw_kernel<M, 0><<<nw, WS_THREADS, smw, c->st>>>(a, tmx, tmw, tmb, tmn))
            if (wpm) {
                const int nx = a.mtn < c->mmw_ctas ? a.mtn : c->mmw_ctas;
                if (mode == MODE_PLAIN && mmx_takes(c, a.K)) { /* whole row blocks, X and B rows loaded once */
                    CUtensorMap tmp2; /* the second matrix's permuted copy (DUAL: both GEMMs in this launch) */
                    memset(&tmp2, 0, sizeof tmp2);
                    /* K = 128 only: at K = 256 one launch measured no faster than two (740 vs 729 us a pair) */
                    const int dual = c->dual && a.K == 128 && a.Y2 && a.Wp2 && (((uintptr_t)a.Y2 | (uintptr_t)a.Wp2) & 15) == 0 &&
                                     tmap_2d(c->tmap_encode, &tmp2, a.Wp2, a.K, a.N, a.ldw, BN);
                    const int smx = mmx_smem_bytes(dual);
                    if (dual) a.ntn *= 2;
                    else tmp2 = tmp;
                    a.resw = c->resw;
#define MMX_GO(KT, D)                                                                                               \
    (a.r && a.s == 8 && a.pshift == 8  ? mmx_kernel<1, 2, KT, D><<<nx, MX_THREADS, smx, c->st>>>(a, tmx, tmp, tmb, tmn, tmp2)  \
     : a.r && a.s == 8 && a.pshift > 8 ? mmx_kernel<1, 1, KT, D><<<nx, MX_THREADS, smx, c->st>>>(a, tmx, tmp, tmb, tmn, tmp2)  \
     : a.r                             ? mmx_kernel<1, 0, KT, D><<<nx, MX_THREADS, smx, c->st>>>(a, tmx, tmp, tmb, tmn, tmp2)  \
                                       : mmx_kernel<0, 0, KT, D><<<nx, MX_THREADS, smx, c->st>>>(a, tmx, tmp, tmb, tmn, tmp2))
                    if (dual) MMX_GO(2, 1);
                    else if (a.K == 512) { /* s = 9: the generic epilogue (EP 0) */
                        if (a.r) mmx_kernel<1, 0, 8, 0><<<nx, MX_THREADS, smx, c->st>>>(a, tmx, tmp, tmb, tmn, tmp2);
                        else mmx_kernel<0, 0, 8, 0><<<nx, MX_THREADS, smx, c->st>>>(a, tmx, tmp, tmb, tmn, tmp2);
                    } else if (a.K == 384) { /* s = 9 too; 6 of the buffer's 8 k-steps */
                        if (a.r) mmx_kernel<1, 0, 6, 0><<<nx, MX_THREADS, smx, c->st>>>(a, tmx, tmp, tmb, tmn, tmp2);
                        else mmx_kernel<0, 0, 6, 0><<<nx, MX_THREADS, smx, c->st>>>(a, tmx, tmp, tmb, tmn, tmp2);
                    } else if (a.K == 256) MMX_GO(4, 0);
                    else MMX_GO(2, 0);
#undef MMX_GO
                    *both = dual;
                } else if (mode == MODE_PLAIN && a.K > 512 && mmd_nh(c, a.N) == 2 && c->mmd > 1) {
                    /* K > 512 (hidden 640-1024): 128 x 256 tiles, a row block's X and B rows once per 256 columns */
                    const int smd = mmd_smem_bytes(), td = a.mtn * ((a.ntn + 1) >> 1), nd = td < c->mmw_ctas ? td : c->mmw_ctas;
                    if (a.r) mmd_kernel<1, 0, MODE_PLAIN><<<nd, MX_THREADS, smd, c->st>>>(a, tmx, tmp, tmb, tmn);
                    else mmd_kernel<0, 0, MODE_PLAIN><<<nd, MX_THREADS, smd, c->st>>>(a, tmx, tmp, tmb, tmn);
                } else if (mode == MODE_PLAIN && a.K > 512 && c->mmd > 1 && c->mmd1p) {
                    /* K > 512 with N an odd multiple of 128 (Wf·x, Wh·x at hidden 640 and 896 with EGG_CUDA_MMDODD=0): 128 x 128
                     * tiles, a row block's tiles on adjacent CTAs (EGG_CUDA_MMD1P=0: mmw_kernel) */
                    const int smd = mmd_smem_bytes(1, 1), td = a.mtn * a.ntn, nd = td < c->mmw_ctas ? td : c->mmw_ctas;
                    if (a.r) mmd_kernel<1, 0, MODE_PLAIN, 1><<<nd, MX_THREADS, smd, c->st>>>(a, tmx, tmp, tmb, tmn);
                    else mmd_kernel<0, 0, MODE_PLAIN, 1><<<nd, MX_THREADS, smd, c->st>>>(a, tmx, tmp, tmb, tmn);
                } else if (mode == MODE_PLAIN && a.r && a.K <= 256 && a.s == 8 && a.pshift == 8)
                    mmw_kernel<MODE_PLAIN, 1, 2, 1><<<nw, WS_THREADS, smw, c->st>>>(a, tmx, tmp, tmb, tmn);
                else if (mode == MODE_PLAIN && a.r && a.K <= 256 && a.s == 8 && a.pshift > 8)
                    mmw_kernel<MODE_PLAIN, 1, 1, 1><<<nw, WS_THREADS, smw, c->st>>>(a, tmx, tmp, tmb, tmn);
                else if (mode == MODE_PLAIN && a.r) mmw_kernel<MODE_PLAIN, 1, 0, 1><<<nw, WS_THREADS, smw, c->st>>>(a, tmx, tmp, tmb, tmn);
                else if (mode == MODE_PLAIN) mmw_kernel<MODE_PLAIN, 0, 0, 1><<<nw, WS_THREADS, smw, c->st>>>(a, tmx, tmp, tmb, tmn);
                else if (mode == MODE_RESID && mmd_nh(c, a.N) == 2 && (a.N == 2 * BN || c->mmd > 1) && c->mmd) {
                    /* 128 x 256 tiles: a row block's X and B rows once per 256 columns */
                    const int smd = mmd_smem_bytes(), td = a.mtn * ((a.ntn + 1) >> 1), nx = td < c->mmw_ctas ? td : c->mmw_ctas;
                    if (p64) mmd_kernel<1, 1><<<nx, MX_THREADS, smd, c->st>>>(a, tmx, tmp, tmb, tmn);
                    else if (a.r) mmd_kernel<1><<<nx, MX_THREADS, smd, c->st>>>(a, tmx, tmp, tmb, tmn);
                    else mmd_kernel<0><<<nx, MX_THREADS, smd, c->st>>>(a, tmx, tmp, tmb, tmn);
                } else if (mode == MODE_RESID && c->mmd > 1) {
                    /* N an odd multiple of 128 (down at hidden 384; 640 and 896 with EGG_CUDA_MMDODD=0): 128 x 128 tiles, a row
                     * block's tiles adjacent */
                    const int smd = mmd_smem_bytes(1, 1), td = a.mtn * a.ntn, nx = td < c->mmw_ctas ? td : c->mmw_ctas;
                    if (p64) mmd_kernel<1, 1, MODE_RESID, 1><<<nx, MX_THREADS, smd, c->st>>>(a, tmx, tmp, tmb, tmn);
                    else if (a.r) mmd_kernel<1, 0, MODE_RESID, 1><<<nx, MX_THREADS, smd, c->st>>>(a, tmx, tmp, tmb, tmn);
                    else mmd_kernel<0, 0, MODE_RESID, 1><<<nx, MX_THREADS, smd, c->st>>>(a, tmx, tmp, tmb, tmn);
                } else if (a.r) mmw_kernel<MODE_RESID, 1, 0, 1><<<nw, WS_THREADS, smw, c->st>>>(a, tmx, tmp, tmb, tmn);
                else mmw_kernel<MODE_RESID, 0, 0, 1><<<nw, WS_THREADS, smw, c->st>>>(a, tmx, tmp, tmb, tmn);
            } else if (mode == MODE_PLAIN && a.r && a.K <= 256 && a.s == 8 && a.pshift == 8)
                mmw_kernel<MODE_PLAIN, 1, 2><<<nw, WS_THREADS, smw, c->st>>>(a, tmx, tmw, tmb, tmn);
            else if (mode == MODE_PLAIN && a.r && a.K <= 256 && a.s == 8 && a.pshift > 8)
                mmw_kernel<MODE_PLAIN, 1, 1><<<nw, WS_THREADS, smw, c->st>>>(a, tmx, tmw, tmb, tmn);
            else if (mode == MODE_PLAIN) MMW_GO(MODE_PLAIN);
            else MMW_GO(MODE_RESID);
#undef MMW_GO
            CKL();
            return 0;
        }
#define MMP_GO(M)                                                                                                   \
    (a.r ? mmp_kernel<M, 1><<<nb, NTHREADS, sm, c->st>>>(a, tmx, tmw, tmb, tmn)                                      \
         : mmp_kernel<M, 0><<<nb, NTHREADS, sm, c->st>>>(a, tmx, tmw, tmb, tmn))
        if (!p64) { /* p64 without the TMA maps: mm_kernel below */
            switch (mode) {
            case MODE_PLAIN: MMP_GO(MODE_PLAIN); break;
            case MODE_RESID: MMP_GO(MODE_RESID); break;
            case MODE_BIAS_GATE: MMP_GO(MODE_BIAS_GATE); break;
            default: MMP_GO(MODE_BIAS_MIX); break;
            }
#undef MMP_GO
            CKL();
            return 0;
        }
    }
#endif
    if (mode != MODE_UPDATE) {
        a.ntn = (int)grid.y;
        a.mtn = (int)grid.x;
        a.nfast = a.K >= 2 * a.N; /* measured: faster for down (K = 4H), slower for up; no change at K = N */
        grid = dim3(grid.x * grid.y, 1, 1);
    } else {
        /* split K (the pair dimension) until the grid covers the GPU twice */
        int tiles = (int)(grid.x * grid.y), kt = a.K / BK, want = (2 * c->nsm + tiles - 1) / tiles;
        int per = (kt + want - 1) / want;
        a.ksplit = per * BK;
        grid.z = (unsigned)((kt + per - 1) / per);
    }
    const int smem = (int)mm_smem_bytes(mode == MODE_UPDATE ? 0 : a.r);
    switch (mode) {
    case MODE_PLAIN: mm_kernel<MODE_PLAIN><<<grid, NTHREADS, smem, c->st>>>(a); break;
    case MODE_BIAS: mm_kernel<MODE_BIAS><<<grid, NTHREADS, smem, c->st>>>(a); break;
    case MODE_BIAS_GATE: mm_kernel<MODE_BIAS_GATE><<<grid, NTHREADS, smem, c->st>>>(a); break;
    case MODE_RESID: mm_kernel<MODE_RESID><<<grid, NTHREADS, smem, c->st>>>(a); break;
    case MODE_BIAS_MIX: mm_kernel<MODE_BIAS_MIX><<<grid, NTHREADS, smem, c->st>>>(a); break;
    default: mm_kernel<MODE_UPDATE><<<grid, NTHREADS, smem, c->st>>>(a); break;
    }
    CKL();
    return 0;
}

/* GEMM a, and a's second matrix where it has one (a.Y2: in the same launch, or a second one) */
static int launch_mm(CudaImpl *c, int mode, MMArgs a, egg_err *err) {
    int both = 0, tboth = 0, rc = launch_mm1(c, mode, a, &both, &tboth, err);
    if (rc || !a.Y2 || both) return rc;
    MMArgs b = a;
    b.W = a.W2; b.Wp = a.Wp2; b.aoff = a.aoff2; b.Y = a.Y2;
    b.W2 = b.Wp2 = NULL; b.Y2 = NULL;
    if (a.T) b.T = a.T + 4 * (size_t)a.M; /* its rows of T, there already where tboth (or a.tready: lnxb_kernel's) */
    b.tready = tboth || a.tready;
    return launch_mm1(c, mode, b, &both, &tboth, err);
}

static const int8_t *tp(const CudaImpl *c, int id) { return c->params + c->m->t[id].off; }
/* tensor id's wpermu_row copy (a layer's W_up where the fused MLP runs), or NULL */
static int8_t *wpu_of(const CudaImpl *c, int id) {
    return c->wpu && c->wp_ok[id] && id >= EGG_T_LAYER(0, 0) && (id - EGG_T_LAYER(0, 0)) % EGG_L_N == EGG_L_UP ? c->wpu + c->m->t[id].off : NULL;
}
#ifdef EGG_MMP
/* the fused MLP's row blocks over rows [time][members] timesteps first (blk_m0) at rank 2-4, where whole blocks tile each
 * timestep's members (EGG_CUDA_TORD=0: in row order, as at rank 1, where timesteps first measured 2.7% slower: its
 * pairs' noise rows, a quarter of rank 4's, stay in L2 either way) */
static void set_tord(const CudaImpl *c, MMArgs *a) {
    a->tord = c->tord && a->r > 1 && a->wrap > 0 && (2 * a->wrap) % BM == 0 && a->M % (2 * a->wrap) == 0 ? a->M / (2 * a->wrap) : 0;
}
/* layer l's MLP (up, then down with the residual R into X) in one mlp_kernel launch where it applies (sm_90a with
 * TMA, H = 128 or 256, both matrices' permuted copies and W_up's wpermu_row copy, rank <= 4 (at 2-4 x . B_up in TF,
 * from EGG-LN2's lnxb_kernel or else xb_kernel) with a row block's pairs consecutive in the noise blob): *done = 1; else
 * *done = 0 and the caller runs the two GEMMs. At H = 128 rank 3-4 the fused MLP ran 29% slower than two GEMMs with the
 * U tiles and turns that v143 removed; on the register path it runs 21-25% faster a step (v144) */
static bool mlp_fused_takes(const CudaImpl *c, const Ctx *x, int l, int r) {
    const int H = c->H, iu = EGG_T_LAYER(l, 0) + EGG_L_UP, idn = EGG_T_LAYER(l, 0) + EGG_L_DOWN, wrap = x->n / 2;
    if (!c->fmlp || (H != 256 && H != 128) || !c->tmap_encode || c->mmw_ctas <= 0 || !c->wperm || !c->wp_ok[iu] || !c->wp_ok[idn] ||
        (r > 1 && (r > 4 || !c->rgemm || !c->fmlpr)) ||
        !wpu_of(c, iu) ||
        egg_mm_shift((uint32_t)H) != 8)
        return false;
    return !(r && (wrap % (BM / 2) != 0 || c->pstride >= ((size_t)1 << 31) || c->pstride % 16 != 0 || c->noff[iu] % 16 != 0 ||
                   c->noff[idn] % 16 != 0));
}
/* where mlp_fused_takes(c, x, l, noisy ? c->r : 0) (the caller's, once a layer). tup: at rank 2-4 up's T rows, written
 * already (by EGG-LN2 in lnxb_kernel), else NULL: xb_kernel's pass here */
static int mlp_fused(CudaImpl *c, Ctx *x, int rows, int l, int noisy, const int32_t *tup, int *done, egg_err *err) {
    *done = 0;
    const int H = c->H, iu = EGG_T_LAYER(l, 0) + EGG_L_UP, idn = EGG_T_LAYER(l, 0) + EGG_L_DOWN, r = noisy ? c->r : 0, wrap = x->n / 2;
    MMArgs a; /* down's GEMM: Y = X (the residual stream), other = R */
    memset(&a, 0, sizeof a);
    a.M = rows; a.N = H; a.K = 4 * H; a.s = egg_mm_shift((uint32_t)(4 * H)); a.pshift = c->pshift; a.r = r;
    a.noise = r ? ctx_noise(c, x) : NULL; a.pstride = c->pstride; a.aoff = c->noff[idn]; a.wrap = wrap;
    a.other = x->R; a.Y = x->X; a.ldy = H; a.mtn = (rows + BM - 1) / BM; a.ntn = 1; a.tma = 1;
    set_tord(c, &a);
    CUtensorMap tmx, tmwu, tmnu, tmwd, tmnd;
    memset(&tmx, 0, sizeof tmx); memset(&tmwu, 0, sizeof tmwu); memset(&tmnu, 0, sizeof tmnu);
    memset(&tmwd, 0, sizeof tmwd); memset(&tmnd, 0, sizeof tmnd);
    bool ok = tmap_2d(c->tmap_encode, &tmx, x->XN, (size_t)H, (size_t)rows, (size_t)H, BM) &&
              tmap_2d(c->tmap_encode, &tmwu, wpu_of(c, iu), (size_t)H, (size_t)(4 * H), (size_t)H, 64) &&
              tmap_2d(c->tmap_encode, &tmwd, c->wperm + c->m->t[idn].off, (size_t)(4 * H), (size_t)H, (size_t)(4 * H), BN);
    if (ok && r)
        ok = tmap_2d(c->tmap_encode, &tmnu, a.noise, c->pstride, (size_t)wrap, c->pstride, 64) &&
             tmap_2d(c->tmap_encode, &tmnd, a.noise, c->pstride, (size_t)wrap, c->pstride, BM / 2, BN);
    if (!ok) return 0;
    const int nx = a.mtn < c->mmw_ctas ? a.mtn : c->mmw_ctas, sm = mlp_smem_bytes(H, r > 1 ? r : 1);
    const size_t au = c->noff[iu];
#define MLP_GO(HH, R, EP) mlp_kernel<HH, R, EP><<<nx, MX_THREADS, sm, c->st>>>(a, au, tmx, tmwu, tmnu, tmwd, tmnd)
    const int ep = r && c->pshift == 8 ? 2 : r && c->pshift > 8 ? 1 : 0;
    if (r >= 2) { /* x . B_up_j of every row into TF (free once the recurrence has read it; there already: tup), then the kernel */
        if (rows % (2 * wrap)) return 0;
        a.T = tup ? (int32_t *)tup : (int32_t *)x->TF;
        if (!tup) {
            const int rc = xb_run(c, r, 1, rows, H, x->XN, H, a.noise, c->pstride, au + a_span(r, 4 * H), 0, wrap, a.T, err);
            if (rc) return rc;
        }
#define MLP_R(HH, RR) (ep == 2 ? MLP_GO(HH, RR, 2) : MLP_GO(HH, RR, 0))
        if (H == 128) rank_go(r, [&](auto rr) { MLP_R(128, decltype(rr)::value); });
        else rank_go(r, [&](auto rr) { MLP_R(256, decltype(rr)::value); });
#undef MLP_R
    } else if (H == 256) {
        if (!r) MLP_GO(256, 0, 0);
        else if (ep == 2) MLP_GO(256, 1, 2);
        else if (ep == 1) MLP_GO(256, 1, 1);
        else MLP_GO(256, 1, 0);
    } else {
        if (!r) MLP_GO(128, 0, 0);
        else if (ep == 2) MLP_GO(128, 1, 2);
        else if (ep == 1) MLP_GO(128, 1, 1);
        else MLP_GO(128, 1, 0);
    }
#undef MLP_GO
    CKL();
    *done = 1;
    return 0;
}
#endif

/* One MM of the forward over `rows` rows [time][member] of x's members:
 * Y = epilogue(X . W_id^T). `mx` carries the BIAS_MIX operands. */
static int mm(CudaImpl *c, Ctx *x, int rows, int id, int noisy, const int8_t *X, int8_t *Y, int mode, const int8_t *other,
              int bias_id, const int8_t *h, int8_t *gout, const MMArgs *mx, egg_err *err) {
    const egg_tensor *t = &c->m->t[id];
    MMArgs a;
    memset(&a, 0, sizeof a);
    if (mx) {
        a.f = mx->f; a.xres = mx->xres; a.hs = mx->hs; a.rz = mx->rz; a.W2 = mx->W2; a.Wp2 = mx->Wp2; a.aoff2 = mx->aoff2; a.Y2 = mx->Y2; a.T = mx->T;
        a.tready = mx->tready;
    }
    a.X = X; a.ldx = t->cols; a.W = tp(c, id); a.ldw = t->cols;
    a.Wp = c->wperm && c->wp_ok[id] ? c->wperm + t->off : NULL;
    a.M = rows; a.N = t->rows; a.K = t->cols; a.wrap = x->n / 2;
    a.s = egg_mm_shift((uint32_t)t->cols); a.pshift = c->pshift; a.r = noisy ? c->r : 0;
    a.noise = noisy ? ctx_noise(c, x) : NULL; a.pstride = c->pstride; a.aoff = c->noff[id];
    a.other = other;
    if (bias_id >= 0) { a.bias = tp(c, bias_id); a.voff = c->noff[bias_id]; }
    a.h = h; a.gout = gout; a.Y = Y; a.ldy = t->rows;
    return launch_mm(c, mode, a, err);
}

/* EGG-LN of `rows` rows [time][n members] with LN weight tensor `id`: a warp per
 * two rows, the wide-access kernels where H is a multiple of 128 (--hidden allows up to 1024) */
#ifdef EGG_MMP
static void lnxb_run(CudaImpl *c, int rows, int n, const int8_t *X, const int8_t *wp, const int8_t *nz, int i1, int i2, int8_t *Y, int32_t *T);
/* the kernels that walk each pair's timesteps (lnxb_kernel, embed_walk_kernel) take whole warps of pairs: n members a
 * positive multiple of 128 */
static bool walk_members(int n) { return n > 0 && n % 128 == 0; }
/* their launch at n members and tc timesteps: tsl timestep slices, so that about 32 warps an SM walk the pairs; returns
 * the blocks of 256 threads */
static int walk_blocks(const CudaImpl *c, int n, int tc, int *tsl) {
    const int wrap = n / 2, rpw = 512 / c->H; /* rows a warp */
    const int want = (int)(((long long)c->nsm * 32 * rpw + 2 * wrap - 1) / (2 * wrap));
    *tsl = want < 1 ? 1 : want > tc ? tc : want;
    return (int)(((long long)2 * wrap / rpw * *tsl * 32 + 255) / 256);
}
/* an EGG-LN with the members' perturbed weights (wp) at hidden 128, 256 and 512 walks each pair's timesteps in lnxb_kernel
 * (NM = 0), its weights loaded once a member where ln16_kernel loads them for every row (EGG_CUDA_LNWALK=0: ln16_kernel) */
static bool ln_walks(const CudaImpl *c, int n, const int8_t *wp) {
    return c->lnwalk && wp && c->ln_vec && (c->H == 128 || c->H == 256 || c->H == 512) && walk_members(n);
}
#endif
static int ln(CudaImpl *c, int rows, int n, const int8_t *X, int id, int v, const int8_t *nz, const int8_t *lnp, int8_t *Y, egg_err *err) {
    const int wpb = 8, nb = ((rows + 1) / 2 + wpb - 1) / wpb, H = c->H;
    const size_t vo = c->noff[id];
    const int8_t *w = tp(c, id);
    const int8_t *wp = nz && lnp ? lnp + (size_t)v * n * H : NULL; /* the members' perturbed weights (lnpert_kernel) */
    const int np = (rows + 1) / 2;
#ifdef EGG_MMP
    if (ln_walks(c, n, wp)) { /* the members' weights in registers over their timesteps */
        lnxb_run(c, rows, n, X, wp, nz, -1, -1, Y, NULL);
        CKL();
        return 0;
    }
#endif
#define LNV(K4, P) ln_vec_kernel<K4, P><<<(np + wpb * P - 1) / (wpb * P), 32 * wpb, 0, c->st>>>(rows, n, X, w, nz, c->pstride, vo, c->pshift, wp, Y)
#define LN16(LPR) ln16_kernel<LPR><<<(rows + wpb * (32 / LPR) - 1) / (wpb * (32 / LPR)), 32 * wpb, 0, c->st>>>(rows, n, X, w, nz, c->pstride, vo, c->pshift, wp, Y)
    switch (c->ln_vec ? H : 0) { /* 16 bytes a lane; at 384 12, at 640 20, at 768 24, at 896 28, at 1024 32 */
    case 128: LN16(8); break;
    case 256: LN16(16); break;
    case 384: LNV(3, 2); break;
    case 512: LN16(32); break;
    case 640: LNV(5, 1); break;
    case 768: LNV(6, 1); break;
    case 896: LNV(7, 1); break;
    case 1024: LNV(8, 1); break;
    default: ln_kernel<<<nb, 32 * wpb, 0, c->st>>>(rows, n, H, X, w, nz, c->pstride, vo, c->pshift, wp, Y); break;
    }
#undef LNV
#undef LN16
    CKL();
    return 0;
}

/* the recurrence of a layer and chunk: one kernel for the chunk (H = 128 / 256, rank <= 1; rank 2-4 in rreg_kernel), else
 * per timestep, where on sm_90a its GEMMs can run as PLAIN GEMMs with the bias, gate and mix in passes of their own
 * (EGG_CUDA_RSPLIT: by default at H >= 768, where they take mmd_kernel's tiles, every rank: at rank 2-4 the gate and mix
 * epilogues ran in mm_kernel, 24% slower at hidden 768 and 1024 at rank 4; at 640 the split ran 1-2% slower; 2: every H) */
static bool rec_chunked(const CudaImpl *c, bool noisy) {
#ifdef EGG_MMP
    return c->rchunk && (c->H == 256 || c->H == 128) && (!noisy || c->r <= 1 || (c->rreg && c->r <= 4));
#else
    (void)c; (void)noisy;
    return false;
#endif
}
/* the chunk recurrence over a cluster (rclus_kernel): H = 384 and 512, rank 0-4; H = 640 (clusters of 5, h and g in one
 * buffer) at rank 2-4, where the per-timestep GEMMs run the generic epilogue (at rank 1 and without noise the per-timestep
 * GEMMs that gate and mix measured faster; EGG_CUDA_RCLUS640=2: every rank, the tests) */
static bool rec_clustered(const CudaImpl *c, bool noisy) {
#ifdef EGG_MMP
    const bool r640 = c->rclus640 >= 2 || (noisy && c->r >= 2);
    return c->rclus && (c->H == 512 || c->H == 384 || (c->H == 640 && c->rclus_ncl[2] > 0 && r640));
#else
    (void)c; (void)noisy;
    return false;
#endif
}
#ifdef EGG_MMP
/* the chunk recurrences' arguments for layer l of a chunk of tc timesteps: the members' perturbed bf, bh (and, where
 * ln2, LN2 weights) from the step's copies when nz has them (lnp), else the kernels perturb from the noise */
static RecChunk rec_args(const CudaImpl *c, const Ctx *x, int l, const int8_t *nz, int8_t *lnp, int8_t *Hl, int tc, bool ln2) {
    const int id0 = EGG_T_LAYER(l, 0), n = x->n, H = c->H, L = c->L;
    RecChunk rc;
    memset(&rc, 0, sizeof rc);
    rc.Uf = tp(c, id0 + EGG_L_UF); rc.Uh = tp(c, id0 + EGG_L_UH); rc.bf = tp(c, id0 + EGG_L_BF); rc.bh = tp(c, id0 + EGG_L_BH);
    rc.noise = nz; rc.pstride = c->pstride;
    rc.off_uf = c->noff[id0 + EGG_L_UF]; rc.off_uh = c->noff[id0 + EGG_L_UH];
    rc.off_bf = c->noff[id0 + EGG_L_BF]; rc.off_bh = c->noff[id0 + EGG_L_BH];
    rc.TF = x->TF; rc.TH = x->TH; rc.X = x->X; rc.rz = x->rz; rc.rz0 = x->rz0; rc.l2pf = c->l2pf;
    rc.Hs = Hl; rc.R = x->R; rc.n = n; rc.tc = tc; rc.s = egg_mm_shift((uint32_t)H); rc.pshift = c->pshift;
    rc.ln = tp(c, id0 + EGG_L_LN2); rc.off_ln = c->noff[id0 + EGG_L_LN2]; rc.XN = x->XN;
    if (nz && lnp) {
        rc.bpf = lnp + (size_t)(2 * L + 1 + 2 * l) * n * H;
        rc.bph = rc.bpf + (size_t)n * H;
        if (ln2) rc.bpl = lnp + (size_t)(2 * l + 1) * n * H;
    }
    return rc;
}
/* rclus_kernel's launch at hidden H and rank R: ncl clusters of H / 128 CTAs on stream st */
struct RclusLaunch {
    cudaLaunchConfig_t lc;
    cudaLaunchAttribute at;
};
template <int H> static size_t rclus_smem_r(int R) {
    return (size_t)(R <= 1 ? rclus_smem_bytes<H, 1>() : R == 2 ? rclus_smem_bytes<H, 2>() : R == 3 ? rclus_smem_bytes<H, 3>() : rclus_smem_bytes<H, 4>());
}
static int rclus_i(int H) { return H == 640 ? 2 : H == 512 ? 1 : 0; } /* rclus_ncl's index */
static void rclus_launch(RclusLaunch *r, int H, int R, int ncl, cudaStream_t st) {
    memset(r, 0, sizeof *r);
    const int cn = H / 128;
    r->at.id = cudaLaunchAttributeClusterDimension;
    r->at.val.clusterDim.x = (unsigned)cn; r->at.val.clusterDim.y = 1; r->at.val.clusterDim.z = 1;
    r->lc.gridDim = dim3((unsigned)(cn * ncl)); r->lc.blockDim = dim3(RCL_THREADS); r->lc.stream = st;
    r->lc.dynamicSmemBytes = H == 640 ? rclus_smem_r<640>(R) : H == 512 ? rclus_smem_r<512>(R) : rclus_smem_r<384>(R);
    r->lc.attrs = &r->at; r->lc.numAttrs = 1;
}
#endif
#ifdef EGG_MMP
/* an EGG-LN in lnxb_kernel with the T rows of the GEMMs of tensors i1 (and i2, or -1) that read its output (rank 2-4 at
 * hidden 128, 256 and 512, n members, where mmx_kernel runs those GEMMs from T, and the members' perturbed LN weights are at
 * hand): else the LN, and xb_kernel's pass before the GEMMs (EGG_CUDA_LNXB=0) */
static bool lnxb_takes(const CudaImpl *c, int n, const int8_t *nz, const int8_t *lnp, int i1, int i2) {
    return c->lnxb && nz && lnp && (c->H == 256 || c->H == 128 || c->H == 512) && c->r >= 2 && c->r <= 4 && c->rgemm && mmx_takes(c, c->H) &&
           (n / 2) % (BM / 2) == 0 && c->pstride % 16 == 0 && c->noff[i1] % 16 == 0 && c->m->t[i1].rows % BN == 0 &&
           (i2 < 0 || (c->noff[i2] % 16 == 0 && c->m->t[i2].rows % BN == 0));
}
/* that LN of the rows [time][n members] of X into Y (wp: the members' perturbed weights), with the T rows of tensors i1
 * (and i2) into T ([1 or 2][rows][4]); tsl timestep slices, so that about 32 warps an SM walk the pairs. i1 < 0: the LN
 * alone (lnxb_kernel<H, 1, 0>, any rank: ln_walks) */
static void lnxb_run(CudaImpl *c, int rows, int n, const int8_t *X, const int8_t *wp, const int8_t *nz, int i1, int i2, int8_t *Y, int32_t *T) {
    const int H = c->H;
    int tsl;
    const int nb = walk_blocks(c, n, rows / n, &tsl);
    const size_t bo = i1 < 0 ? 0 : c->noff[i1] + a_span(c->r, c->m->t[i1].rows), bo2 = i2 < 0 ? 0 : c->noff[i2] + a_span(c->r, c->m->t[i2].rows);
    if (i1 < 0) {
#define LNW(HH) lnxb_kernel<HH, 1, 0><<<nb, 256, 0, c->st>>>(rows, n, X, wp, nz, c->pstride, 0, 0, tsl, Y, NULL)
        if (H == 256) LNW(256);
        else if (H == 512) LNW(512);
        else LNW(128);
#undef LNW
        return;
    }
#define LNXB(HH, NM) lnxb_kernel<HH, decltype(rr)::value, NM><<<nb, 256, 0, c->st>>>(rows, n, X, wp, nz, c->pstride, bo, bo2, tsl, Y, T)
    rank_go(c->r, [&](auto rr) {
        if (H == 256 && i2 >= 0) LNXB(256, 2);
        else if (H == 256) LNXB(256, 1);
        else if (H == 512 && i2 >= 0) LNXB(512, 2);
        else if (H == 512) LNXB(512, 1);
        else if (i2 >= 0) LNXB(128, 2);
        else LNXB(128, 1);
    });
#undef LNXB
}
#endif
/* EGG-LN of weight tensor id (vector v of the members' perturbed ones) as ln(); where lnxb_kernel takes it, with the T
 * rows of tensors i1 (and i2, or -1) into T, and *tr = true (their GEMMs then skip xb_kernel's pass) */
static int ln_t(CudaImpl *c, int rows, int n, const int8_t *X, int id, int v, const int8_t *nz, const int8_t *lnp, int8_t *Y, int i1, int i2,
                int32_t *T, bool *tr, egg_err *err) {
#ifdef EGG_MMP
    if ((*tr = lnxb_takes(c, n, nz, lnp, i1, i2))) {
        lnxb_run(c, rows, n, X, lnp + (size_t)v * n * c->H, nz, i1, i2, Y, T);
        CKL();
        return 0;
    }
#else
    (void)i1; (void)i2; (void)T;
    *tr = false;
#endif
    return ln(c, rows, n, X, id, v, nz, lnp, Y, err);
}
static bool rec_split(const CudaImpl *c, bool noisy) {
    return !rec_chunked(c, noisy) && !rec_clustered(c, noisy) && c->H % 16 == 0 && (c->rsplit >= 2 || (c->rsplit == 1 && c->H >= 768));
}
static int forward(CudaImpl *c, Ctx *x, int noisy, int T, int group, int gbase, int m0, egg_err *err) {
    const int n = x->n, H = c->H, L = c->L, V = c->V, rowlen = T + 1;
    const int wpb = 8;
    const int8_t *nz = noisy ? ctx_noise(c, x) : NULL;
    const size_t nh = (size_t)n * H, hsh = (size_t)(x->hsn ? x->hsn : n) * H; /* a layer's state in Hs */
    int8_t *lnp = c->lnp ? c->lnp + x->lnp_at : NULL;           /* x's members' perturbed vectors */
    uint64_t *ekp = c->ekeys ? c->ekeys + x->mb / 2 : NULL;       /* x's pairs' embedding-noise keys */
    int rc;
    CK(cudaMemsetAsync(x->scores, 0, sizeof(int32_t) * (size_t)n, c->st));
    prof_start(c);
    const uint64_t *ek = nz ? ekp : NULL; /* the pairs' embedding-noise keys of the step */
    if (ek) {
        emb_keys_kernel<<<(n / 2 + 255) / 256, 256, 0, c->st>>>(n / 2, m0, c->seedep, ekp);
        CKL();
    }
    if (nz && lnp) { /* the members' perturbed vectors: LN1, LN2 of each layer, the output LN, and each layer's bf, bh
                         * where a reader exists (the chunk recurrence at H = 256, rreg_kernel at 128, rclus_kernel at 384 /
                         * 512, the split per-timestep recurrence) */
        const int vmax = ((H == 256 || (H == 128 && c->rreg)) && rec_chunked(c, true)) || rec_split(c, true) || rec_clustered(c, true) ? 4 * L : 2 * L;
        const int nt = n * (H / 4);
        lnpert_kernel<<<dim3((unsigned)((nt + 255) / 256), (unsigned)(vmax + 1)), 256, 0, c->st>>>(n, H, c->params, c->lnpo, nz, c->pstride,
                                                                                                   c->pshift, lnp);
        CKL();
        prof_mark(c, P_LN);
    }
    MMArgs tfx; /* rank 2-4: up's, down's and the head's T (16 bytes a row) in TF, free once the recurrence has read it */
    memset(&tfx, 0, sizeof tfx);
    tfx.T = (int32_t *)x->TF;
    for (int t0 = 0; t0 < T; t0 += x->tc) {
        const int tc = T - t0 < x->tc ? T - t0 : x->tc, rows = n * tc, rbt = (rows + wpb - 1) / wpb;
        /* layer 0's EGG-LN1 in the embedding where its lanes are ln16_kernel's (EGG_CUDA_EMBLN=0: an LN launch) */
        const bool embln = c->embln && c->ln_vec && (H == 128 || H == 256 || H == 512);
        const int id_ln1 = EGG_T_LAYER(0, 0) + EGG_L_LN1;
        const int8_t *lwp = nz && lnp ? lnp : NULL; /* layer 0's LN1: vector 0 of the members' perturbed ones */
#define EMBV(K4, LPR, LN)                                                                                           \
    embed_vec_kernel<K4, LPR, LN><<<(rows + wpb * (32 / LPR) - 1) / (wpb * (32 / LPR)), 32 * wpb, 0, c->st>>>(               \
        rows, n, L, c->r, c->pshift, x->tokens, rowlen, t0, group, gbase, m0, tp(c, EGG_T_EMB), nz, c->pstride,             \
        c->noff[EGG_T_EMB], c->seedep, ek, x->X, x->rz, x->Hs, (int)(hsh / H), tp(c, id_ln1), nz, c->noff[id_ln1], lwp, x->XN)
        /* the embedding with layer 0's EGG-LN1 walking each pair's timesteps (n a multiple of 128; EGG_CUDA_EMBWALK=0: a row a
         * slot), tsl timestep slices as lnxb_run's */
#ifdef EGG_MMP
        const bool ewalk = embln && c->embwalk && walk_members(n);
        int etsl = 0;
        const int enb = ewalk ? walk_blocks(c, n, tc, &etsl) : 0;
#endif
#define EMBW(LPR)                                                                                                   \
    embed_walk_kernel<LPR><<<enb, 256, 0, c->st>>>(rows, n, L, c->r, c->pshift, x->tokens, rowlen, t0, group, gbase, m0,          \
                                                   tp(c, EGG_T_EMB), nz, c->pstride, c->noff[EGG_T_EMB], c->seedep, ek, x->X, x->rz, \
                                                   x->Hs, (int)(hsh / H), tp(c, id_ln1), nz, c->noff[id_ln1], lwp, x->XN, etsl)
#ifdef EGG_MMP
        if (ewalk && H == 128) EMBW(8);
        else if (ewalk && H == 256) EMBW(16);
        else if (ewalk) EMBW(32);
        else
#endif
        if (embln && H == 128) EMBV(4, 8, true);
        else if (embln && H == 256) EMBV(4, 16, true);
        else if (embln) EMBV(4, 32, true);
        else if (c->ln_vec && H == 128) EMBV(4, 8, false);
        else if (c->ln_vec && H == 256) EMBV(4, 16, false);
        else if (c->ln_vec && H == 384) EMBV(3, 32, false);
        else if (c->ln_vec && H == 512) EMBV(4, 32, false);
        else if (c->ln_vec && H == 640) EMBV(5, 32, false);
        else if (c->ln_vec && H == 768) EMBV(6, 32, false);
        else if (c->ln_vec && H == 1024) EMBV(8, 32, false);
        else if (c->ln_vec && H == 896) EMBV(7, 32, false);
        else
        embed_kernel<<<rbt, 32 * wpb, 0, c->st>>>(rows, n, H, L, c->r, c->pshift, x->tokens, rowlen, t0, group, gbase, m0,
                                                  tp(c, EGG_T_EMB), nz, c->pstride, c->noff[EGG_T_EMB], c->seedep, ek, x->X, x->rz,
                                                  x->Hs, (int)(hsh / H));
        CKL();
        prof_mark(c, P_EMB);
        for (int l = 0; l < L; l++) {
            const int id0 = EGG_T_LAYER(l, 0);
            int8_t *Hl = x->Hs + (size_t)l * hsh;
            /* rank 2-4 at hidden 128, 256 and 512: EGG-LN1 with Wf.x's and Wh.x's T rows (lnxb_kernel), so that their GEMMs need
             * no xb_kernel pass (EGG_CUDA_LNXB=0: the LN, then that pass); layer 0's LN1 runs in the embedding where embln */
            const int ih = id0 + EGG_L_WH;
            bool lnxb = false;
            if (!(l == 0 && embln) &&
                (rc = ln_t(c, rows, n, x->X, id0 + EGG_L_LN1, 2 * l, nz, lnp, x->XN, id0 + EGG_L_WF, ih, (int32_t *)x->U, &lnxb, err)))
                return rc;
            prof_mark(c, P_LN);
            /* the input projections of the whole chunk at once */
            { /* Wf.x and Wh.x: one launch reading the chunk's x once where mmx_kernel takes them (EGG_CUDA_DUAL=0: two) */
                MMArgs m2;
                memset(&m2, 0, sizeof m2);
                m2.tready = lnxb;
                m2.W2 = tp(c, ih); m2.Wp2 = c->wperm && c->wp_ok[ih] ? c->wperm + c->m->t[ih].off : NULL; m2.aoff2 = c->noff[ih];
                m2.Y2 = x->TH;
                m2.T = (int32_t *)x->U; /* rank 2-4: both matrices' T (32 bytes a row) in U, free until up */
                if ((rc = mm(c, x, rows, id0 + EGG_L_WF, noisy, x->XN, x->TF, MODE_PLAIN, NULL, -1, NULL, NULL, &m2, err))) return rc;
            }
            prof_mark(c, P_MM_X);
            /* the recurrence: f = Uf.h + Wf.x + bf, g = gate(f, h); c = Uh.g + Wh.x + bh, h' = mix(f, c, h),
             * R = h' + x (state reset where the next token is 0); one kernel for the chunk, or two GEMMs per timestep */
#ifdef EGG_MMP
            /* rank 2-4 where lnxb_kernel takes EGG-LN2 with up's T rows (EGG_CUDA_LN2XB): the recurrence without the LN,
             * then that LN, so that up needs no xb_kernel pass. ln2x: the chunk recurrence, where the fused MLP runs */
            const bool mlpf = mlp_fused_takes(c, x, l, noisy ? c->r : 0); /* this layer's MLP in one mlp_kernel launch */
            const bool ln2_up = nz && c->r >= 2 && c->ln2xb && lnxb_takes(c, n, nz, lnp, id0 + EGG_L_UP, -1);
            const bool ln2x = ln2_up && c->rreg && mlpf;
            /* rank 2-4: rreg_kernel alone, with the step's perturbed biases and LN2 weights (else per timestep) */
            const bool chunked = rec_chunked(c, noisy) && (!nz || c->r <= 1 || (lnp && (H == 128 || c->ln2_fuse || ln2x)));
            if (chunked) { /* the whole chunk's recurrence in one launch, Uf and Uh resident */
                const RecChunk rc2 = rec_args(c, x, l, nz, lnp, Hl, tc, !ln2x && (H == 128 || c->ln2_fuse));
                const int nrb = (n + RBM - 1) / RBM, cap = c->rchunk_ctas[H == 256], nb = nrb < cap ? nrb : cap;
                /* the pass on the fragments where the step's perturbed biases (and at H = 128 LN2 weights) are at hand;
                 * at H = 128 not with the epilogue of perturbation shifts > 8, which spills there */
                const int ep = rc2.s == 8 ? (c->pshift == 8 ? 2 : c->pshift > 8 ? 1 : 0) : 0;
                if (c->rreg && (!nz || (rc2.bpf && (rc2.bpl || ln2x) && (H == 256 || ep != 1 || c->r >= 2)))) {
                    const int nr = nrb < c->rreg_ctas[H == 256] ? nrb : c->rreg_ctas[H == 256];
#define RREG_R(HH, RR, LN) (ep == 2 ? rreg_kernel<HH, RR, 2, LN><<<nr, rchunk_threads<HH>(), rreg_smem_bytes<HH>(), c->st>>>(rc2) \
                                  : rreg_kernel<HH, RR, 0, LN><<<nr, rchunk_threads<HH>(), rreg_smem_bytes<HH>(), c->st>>>(rc2))
                    if (nz && c->r >= 2) { /* rank 2-4: the generic epilogue (s = ps = 8: epi_quad_r8), the A values from global memory */
                        rank_go(c->r, [&](auto rr) {
                            constexpr int RR = decltype(rr)::value;
                            if (H == 256 && ln2x) RREG_R(256, RR, false);
                            else if (H == 256) RREG_R(256, RR, true);
                            else if (ln2x) RREG_R(128, RR, false);
                            else RREG_R(128, RR, true);
                        });
                    }
#undef RREG_R
                    else if (H == 256 && nz && ep == 2) rreg_kernel<256, 1, 2><<<nr, rchunk_threads<256>(), rreg_smem_bytes<256>(), c->st>>>(rc2);
                    else if (H == 256 && nz && ep == 1) rreg_kernel<256, 1, 1><<<nr, rchunk_threads<256>(), rreg_smem_bytes<256>(), c->st>>>(rc2);
                    else if (H == 256 && nz) rreg_kernel<256, 1, 0><<<nr, rchunk_threads<256>(), rreg_smem_bytes<256>(), c->st>>>(rc2);
                    else if (H == 256) rreg_kernel<256, 0, 0><<<nr, rchunk_threads<256>(), rreg_smem_bytes<256>(), c->st>>>(rc2);
                    else if (nz && ep == 2) rreg_kernel<128, 1, 2><<<nr, rchunk_threads<128>(), rreg_smem_bytes<128>(), c->st>>>(rc2);
                    else if (nz) rreg_kernel<128, 1, 0><<<nr, rchunk_threads<128>(), rreg_smem_bytes<128>(), c->st>>>(rc2);
                    else rreg_kernel<128, 0, 0><<<nr, rchunk_threads<128>(), rreg_smem_bytes<128>(), c->st>>>(rc2);
                } else if (H == 256 && nz) rchunk_kernel<256, 1><<<nb, rchunk_threads<256>(), rchunk_smem_bytes<256>(), c->st>>>(rc2);
                else if (H == 256) rchunk_kernel<256, 0><<<nb, rchunk_threads<256>(), rchunk_smem_bytes<256>(), c->st>>>(rc2);
                else if (nz) rchunk_kernel<128, 1><<<nb, rchunk_threads<128>(), rchunk_smem_bytes<128>(), c->st>>>(rc2);
                else rchunk_kernel<128, 0><<<nb, rchunk_threads<128>(), rchunk_smem_bytes<128>(), c->st>>>(rc2);
                CKL();
            }
            /* H = 384 / 512: the chunk in one launch over clusters of H / 128 CTAs (the members' perturbed biases and LN2
             * weights from the step's copies) */
            const bool clustered = !chunked && rec_clustered(c, noisy) && (!nz || lnp);
            /* hidden 512: the cluster recurrence without EGG-LN2 where ln2_up (up's GEMM then reads the LN's T rows) */
            const bool ln2c = clustered && H == 512 && ln2_up;
            if (clustered) {
                const RecChunk rc2 = rec_args(c, x, l, nz, lnp, Hl, tc, !ln2c);
                const int nrb = (n + RBM - 1) / RBM;
                int ncl = c->rclus_ncl[rclus_i(H)];
                if (c->rclus >= 2 && c->rclus < ncl) ncl = c->rclus; /* EGG_CUDA_RCLUS=n: n clusters (tests) */
                if (ncl > nrb) ncl = nrb;
                const int rr = nz ? c->r : 0;
                RclusLaunch rl;
                rclus_launch(&rl, H, rr, ncl, c->st);
                cudaError_t le = cudaSuccess;
                auto go = [&](auto hh) {
                    constexpr int HH = decltype(hh)::value;
                    if (rr == 0) le = cudaLaunchKernelEx(&rl.lc, rclus_kernel<HH, 0>, rc2);
                    else if (rr == 1) le = cudaLaunchKernelEx(&rl.lc, rclus_kernel<HH, 1>, rc2);
                    else rank_go(rr, [&](auto r2) {
                        constexpr int R2 = decltype(r2)::value;
                        le = ln2c ? cudaLaunchKernelEx(&rl.lc, rclus_kernel<HH, R2, false>, rc2) : cudaLaunchKernelEx(&rl.lc, rclus_kernel<HH, R2>, rc2);
                    });
                };
                if (H == 512) go(std::integral_constant<int, 512>{});
                else if (H == 384) go(std::integral_constant<int, 384>{});
                else if (rr <= 1) le = cudaLaunchKernelEx(&rl.lc, rr ? rclus_kernel<640, 1> : rclus_kernel<640, 0>, rc2);
                else le = cudaLaunchKernelEx(&rl.lc, rr == 2 ? rclus_kernel<640, 2> : rr == 3 ? rclus_kernel<640, 3> : rclus_kernel<640, 4>, rc2);
                CK(le);
            }
#else
            const bool chunked = false, clustered = false, ln2x = false, ln2c = false;
#endif
            const bool ln2_fused = (chunked && !ln2x && (H == 128 || (H == 256 && nz && lnp && c->ln2_fuse))) || (clustered && !ln2c);
            /* per timestep: the GEMMs as PLAIN GEMMs (at H >= 768 mmd_kernel's 128 x 256 tiles) and the bias, gate and
             * mix in 16-byte passes of their own, with the step's perturbed biases (EGG_CUDA_RSPLIT); else GEMMs whose
             * epilogues do them (MODE_BIAS_GATE, MODE_BIAS_MIX) */
            const bool split = rec_split(c, nz != NULL) && (!nz || lnp);
            const int8_t *bpf = !split ? NULL : nz ? lnp + (size_t)(2 * L + 1 + 2 * l) * n * H : tp(c, id0 + EGG_L_BF);
            const int8_t *bph = !split ? NULL : nz ? bpf + (size_t)n * H : tp(c, id0 + EGG_L_BH);
            const int bstride = nz ? H : 0, eb = (int)((nh / 16 + 255) / 256);
            for (int dt = 0; dt < tc && split; dt++) {
                const size_t o = (size_t)dt * nh;
                const uint8_t *rz = dt + 1 < tc ? x->rz + (size_t)(dt + 1) * n : x->rz0;
                if ((rc = mm(c, x, n, id0 + EGG_L_UF, noisy, Hl, x->F, MODE_PLAIN, NULL, -1, NULL, NULL, NULL, err))) return rc;
                rec_gate_kernel<<<eb, 256, 0, c->st>>>(n, H, x->F, x->TF + o, bpf, bstride, Hl, x->G);
                CKL();
                if ((rc = mm(c, x, n, id0 + EGG_L_UH, noisy, x->G, x->R + o, MODE_PLAIN, NULL, -1, NULL, NULL, NULL, err))) return rc;
                rec_mix_kernel<<<eb, 256, 0, c->st>>>(n, H, x->R + o, x->TH + o, bph, bstride, x->F, Hl, x->X + o, rz);
                CKL();
            }
            for (int dt = 0; dt < tc && !chunked && !clustered && !split; dt++) {
                const size_t o = (size_t)dt * nh;
                if ((rc = mm(c, x, n, id0 + EGG_L_UF, noisy, Hl, x->F, MODE_BIAS_GATE, x->TF + o, id0 + EGG_L_BF, Hl, x->G, NULL,
                             err)))
                    return rc;
                MMArgs mx;
                memset(&mx, 0, sizeof mx);
                mx.f = x->F; mx.xres = x->X + o; mx.hs = Hl; mx.rz = dt + 1 < tc ? x->rz + (size_t)(dt + 1) * n : x->rz0;
                if ((rc = mm(c, x, n, id0 + EGG_L_UH, noisy, x->G, x->R + o, MODE_BIAS_MIX, x->TH + o, id0 + EGG_L_BH, NULL, NULL,
                             &mx, err)))
                    return rc;
            }
            prof_mark(c, P_MM_H);
            /* EGG-LN2 where the recurrence left it: with up's T rows into TF (free once the recurrence has read it) where
             * the recurrence ran without it for them (upt: written) */
            bool upt = false;
            rc = 0;
            if ((chunked && ln2x) || ln2c)
                rc = ln_t(c, rows, n, x->R, id0 + EGG_L_LN2, 2 * l + 1, nz, lnp, x->XN, id0 + EGG_L_UP, -1, (int32_t *)x->TF, &upt, err);
            else if (!ln2_fused)
                rc = ln(c, rows, n, x->R, id0 + EGG_L_LN2, 2 * l + 1, nz, lnp, x->XN, err);
            if (rc) return rc;
            prof_mark(c, P_LN2);
            int fused = 0;
#ifdef EGG_MMP
            if (mlpf && (rc = mlp_fused(c, x, rows, l, noisy, upt ? (const int32_t *)x->TF : NULL, &fused, err))) return rc;
            if (fused) prof_mark(c, P_MLP);
#endif
            if (!fused) {
                tfx.tready = upt; /* up's T rows from EGG-LN2 (lnxb_kernel) */
                rc = mm(c, x, rows, id0 + EGG_L_UP, noisy, x->XN, x->U, MODE_PLAIN, NULL, -1, NULL, NULL, &tfx, err);
                tfx.tready = false;
                if (rc) return rc;
                prof_mark(c, P_UP);
                if ((rc = mm(c, x, rows, id0 + EGG_L_DOWN, noisy, x->U, x->X, MODE_RESID, x->R, -1, NULL, NULL, &tfx, err))) return rc;
                prof_mark(c, P_DOWN);
            }
        }
        bool hxb = false; /* the output LN, with the head's T rows where lnxb_kernel takes it */
        if ((rc = ln_t(c, rows, n, x->X, EGG_T_LNOUT(L), 2 * L, nz, lnp, x->XN, EGG_T_HEAD(L), -1, tfx.T, &hxb, err))) return rc;
        prof_mark(c, P_LN);
        MMArgs th = tfx;
        th.tready = hxb;
        if ((rc = mm(c, x, rows, EGG_T_HEAD(L), noisy, x->XN, x->logits, MODE_PLAIN, NULL, -1, NULL, NULL, &th, err))) return rc;
        prof_mark(c, P_HEAD);
        const int lb = (n + wpb - 1) / wpb;
        if (c->ln_vec && V == 256 && c->lossrs) loss_rs_kernel<2><<<lb, 32 * wpb, 0, c->st>>>(n, tc, x->logits, x->tokens, rowlen, t0, group, gbase, m0, x->scores);
        else if (c->ln_vec && V == 128 && c->lossrs) loss_rs_kernel<1><<<lb, 32 * wpb, 0, c->st>>>(n, tc, x->logits, x->tokens, rowlen, t0, group, gbase, m0, x->scores);
        else if (c->ln_vec && V == 256) loss_vec_kernel<2><<<lb, 32 * wpb, 0, c->st>>>(n, tc, x->logits, x->tokens, rowlen, t0, group, gbase, m0, x->scores);
        else if (c->ln_vec && V == 128) loss_vec_kernel<1><<<lb, 32 * wpb, 0, c->st>>>(n, tc, x->logits, x->tokens, rowlen, t0, group, gbase, m0, x->scores);
        else if (c->ln_vec && V == 512) loss_vec_kernel<4><<<lb, 32 * wpb, 0, c->st>>>(n, tc, x->logits, x->tokens, rowlen, t0, group, gbase, m0, x->scores);
        else loss_kernel<<<lb, 32 * wpb, 0, c->st>>>(n, tc, V, x->logits, x->tokens, rowlen, t0, group, gbase, m0, x->scores);
#undef EMBV
#undef EMBW
        CKL();
        prof_mark(c, P_LOSS);
    }
    return 0;
}

#endif /* EGG_FORWARD_CUH */

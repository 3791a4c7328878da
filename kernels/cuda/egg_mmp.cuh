/* egg_mmp.cuh — mmp_kernel, the persistent forward GEMM (PLAIN, RESID; rank <= 1):
 * cp.async or TMA loads with mma.sync or wgmma, the pipeline running across tiles.
 * Part of the CUDA backend: included once by kernels/cuda/egg_cuda.cu (one translation unit). */
#ifndef EGG_MMP_CUH
#define EGG_MMP_CUH

#define EGG_MMP 1
/* The forward's big MMs (PLAIN, RESID; rank <= 1, the default) as a persistent
 * kernel: a CTA walks tiles blockIdx.x, blockIdx.x + gridDim.x, ... (a row
 * block's N tiles adjacent) and its cp.async pipeline runs on across tile
 * boundaries, so the next tile's first k-steps load while this tile's epilogue
 * runs. At K = 256 a tile has only 4 k-steps, and mm_kernel (pipeline filled
 * and drained per tile, epilogue staged over the pipeline buffers) reaches 40%
 * of its own K = 8192 rate. The epilogue goes from the fragments into an int8
 * staging tile, then out 16 bytes per thread (adding the residual); the pairs'
 * A rows arrive in shared memory with the tile's first k-step. Same integer
 * operations as epi_tile4. */
__host__ __device__ constexpr int mmp_smem_bytes() {
    return STAGES * (BM + BN) * LDS + STAGES * (BM / 2) * BK + 2 * (BM / 2) * BN + BM * OLD + BM * 4 + STAGES * 8;
}
/* PLAIN, RESID: staged int8 rows out 16 bytes per access (the residual added): chunk c = t + q nthr (q < 4) is
 * row c / 8 of Os (output row m0 + c / 8), columns 16 (c % 8) .. +15 */
template <int MODE>
__device__ __forceinline__ void mmp_res_load(const MMArgs &a, int m0, int n0, int t, int nthr, int4 (&ot)[4]) {
    if (MODE == MODE_RESID) {
#pragma unroll
        for (int q = 0; q < 4; q++) {
            const int c = t + q * nthr, m = m0 + (c >> 3), o = n0 + (c & 7) * 16;
            ot[q] = m < a.M && o < a.N ? __ldg((const int4 *)(a.other + (size_t)m * a.ldy + o)) : make_int4(0, 0, 0, 0);
        }
    }
}
/* ot: the residual's chunks (mmp_res_load) */
template <int MODE>
__device__ __forceinline__ void mmp_out_rows(const MMArgs &a, const int8_t *Os, int m0, int n0, int t, int nthr, const int4 (&ot)[4]) {
    /* chunk t + q nthr: row t / 8 + q nthr / 8, the same 16 columns for every q */
    const int r0 = t >> 3, o = n0 + (t & 7) * 16, dr = nthr >> 3;
    const int8_t *Or = Os + r0 * OLD + (t & 7) * 16;
    int8_t *Yr = a.Y + (size_t)(m0 + r0) * a.ldy + o;
    const size_t dy = (size_t)dr * a.ldy;
#pragma unroll
    for (int q = 0; q < 4; q++) {
        if (m0 + r0 + q * dr < a.M && o < a.N) {
            int4 y = *(const int4 *)(Or + q * dr * OLD);
            if (MODE == MODE_RESID) {
                y.x = (int)add_clip4((unsigned)y.x, (unsigned)ot[q].x); y.y = (int)add_clip4((unsigned)y.y, (unsigned)ot[q].y);
                y.z = (int)add_clip4((unsigned)y.z, (unsigned)ot[q].z); y.w = (int)add_clip4((unsigned)y.w, (unsigned)ot[q].w);
            }
            *(int4 *)(Yr + q * dy) = y;
        }
    }
}

template <int MODE, int R>
__global__ void __launch_bounds__(NTHREADS, 2) mmp_kernel(MMArgs a, const __grid_constant__ CUtensorMap tmx,
                                                         const __grid_constant__ CUtensorMap tmw,
                                                         const __grid_constant__ CUtensorMap tmb,
                                                         const __grid_constant__ CUtensorMap tmn) {
    extern __shared__ __align__(1024) unsigned char smem[];
    int8_t *Xs = (int8_t *)smem;              /* [STAGES][BM][LDS] */
    int8_t *Ws = Xs + STAGES * BM * LDS;      /* [STAGES][BN][LDS] */
    int8_t *Bs = Ws + STAGES * BN * LDS;      /* [STAGES][BM/2][BK]: the pairs' B row (rank 1; sm_90a: swizzled as X) */
    int8_t *As = Bs + STAGES * (BM / 2) * BK; /* [2][BM/2][BN]: the pairs' A row, by tile parity */
    int8_t *Os = As + 2 * (BM / 2) * BN;      /* [BM][OLD]: int8 results */
    int *ts = (int *)(Os + BM * OLD);         /* [BM]: sign * (x . B) */
    uint64_t *bars = (uint64_t *)(ts + BM);   /* [STAGES]: TMA completion (a.tma) */
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
#ifdef MMP_WGMMA
    const bool tma = a.tma; /* and at rank 1 the pairs' B and A rows by TMA too */
    if (tma && tid == 0) {
        for (int st = 0; st < STAGES; st++) mbar_init(bars + st, 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
#else
    (void)bars; (void)tmx; (void)tmw; (void)tmb; (void)tmn;
    const bool tma = false;
#endif
    const int wm = warp >> 2, wn = warp & 3, gid = lane >> 2, tig = lane & 3;
    (void)wm; (void)wn; /* the wgmma path maps warps by warpgroup */
    const int ntiles = a.mtn * a.ntn, G = (int)gridDim.x;
    const int mine = (int)blockIdx.x < ntiles ? (ntiles - 1 - (int)blockIdx.x) / G + 1 : 0;
    const int KT = (a.K + BK - 1) / BK, J = mine * KT;

    /* the loader walks the jobs (tile, k-step) in order; its tile's origin and this
     * thread's noise pair are computed once per tile, not per job (divisions) */
    int l_it = 0, l_kt = 0, l_m0 = 0, l_n0 = 0;
    bool l_okr = false;
    const int8_t *l_blob = a.noise;
    auto l_tile = [&]() {
        const int g = (int)blockIdx.x + l_it * G;
        l_m0 = (g / a.ntn) * BM;
        l_n0 = (g - (g / a.ntn) * a.ntn) * BN;
        if (R > 0 && !tma) {
            l_okr = l_m0 + 2 * (tid >> 2) < a.M;
            l_blob = l_okr ? a.noise + (size_t)pair_of(a, l_m0 + 2 * (tid >> 2)) * a.pstride + a.aoff : a.noise;
        }
    };
    if (mine > 0) l_tile();
    auto load_next = [&](int st) {
        const int it = l_it, kt = l_kt, m0 = l_m0, n0 = l_n0, k0 = kt * BK;
#ifdef MMP_WGMMA
        if (tma) { /* one thread: the X and W boxes (zeros outside the matrices), 64B-swizzled as wgmma reads them;
                    * at rank 1 the 64 pairs' B chunks (swizzled the same way) and, at a tile's first k-step, their A rows */
            if (tid == 0) {
                const int p0 = R > 0 ? (m0 >> 1) % a.wrap : 0; /* the row block's pairs are p0 .. p0 + 63 (launch_mm) */
                mbar_expect_tx(bars + st, (BM + BN) * BK + (R > 0 ? (BM / 2) * BK + (kt == 0 ? (BM / 2) * BN : 0) : 0));
                tma_load_2d(Xs + st * BM * LDS, &tmx, k0, m0, bars + st);
                tma_load_2d(Ws + st * BN * LDS, &tmw, k0, n0, bars + st);
                if (R > 0) {
                    tma_load_2d(Bs + st * (BM / 2) * BK, &tmb, (int)(a.aoff + a_span(1, a.N)) + k0, p0, bars + st);
                    if (kt == 0) tma_load_2d(As + (it & 1) * (BM / 2) * BN, &tmn, (int)a.aoff + n0, p0, bars + st);
                }
            }
        } else
#endif
#pragma unroll
        for (int q = 0; q < 2; q++) {
            const int ch = tid + q * NTHREADS, row = ch >> 2, c = ch & 3;
            const bool kin = k0 + c * 16 < a.K;
            const int gm = m0 + row, gn = n0 + row;
#ifdef MMP_WGMMA
            const int so = wg_off(row, c);
#else
            const int so = row * LDS + c * 16;
#endif
            bool ok = gm < a.M && kin;
            cp_async16(Xs + st * BM * LDS + so, a.X + (ok ? (size_t)gm * a.ldx + k0 + c * 16 : 0), ok);
            ok = gn < a.N && kin;
            cp_async16(Ws + st * BN * LDS + so, a.W + (ok ? (size_t)gn * a.ldw + k0 + c * 16 : 0), ok);
        }
        if (R > 0 && !tma) { /* thread -> pair tid/4, 16-byte chunk tid%4 of B (and chunks 2c, 2c+1 of A) */
            const int p = tid >> 2, c = tid & 3;
            const bool okr = l_okr;
            const int8_t *blob = l_blob;
            const bool ok = okr && k0 + c * 16 < a.K;
#ifdef MMP_WGMMA
            const int bo = wg_off(p, c);
#else
            const int bo = p * BK + c * 16;
#endif
            cp_async16(Bs + st * (BM / 2) * BK + bo, ok ? blob + a_span(1, a.N) + k0 + c * 16 : a.noise, ok);
            if (kt == 0) {
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int cc = 2 * c + h;
                    const bool oka = okr && n0 + cc * 16 < a.N;
#ifdef MMP_WGMMA
                    const int ao = as_off(p, cc * 16);
#else
                    const int ao = p * BN + cc * 16;
#endif
                    cp_async16(As + (it & 1) * (BM / 2) * BN + ao, oka ? blob + n0 + cc * 16 : a.noise, oka);
                }
            }
        }
        if (++l_kt == KT) {
            l_kt = 0;
            if (++l_it < mine) l_tile();
        }
    };

#pragma unroll
    for (int st = 0; st < STAGES - 1; st++) {
        if (st < J) load_next(st);
        cp_commit();
    }
    int j = 0;
#ifdef MMP_WGMMA
    int d[64];  /* warpgroup warp>>2: rows 64 (warp>>2) .. +63 x all 128 columns (a tile's first wgmma starts it) */
    int dt[16]; /* rank 1: those 64 rows . the B rows of their 32 pairs (a row needs its own pair's column) */
    /* x . B by wgmma (PLAIN, RESID) or by dp4a per thread (BIAS_GATE, BIAS_MIX: their epilogue's registers
     * and the 16 more accumulators spill) */
    constexpr bool TW = MODE == MODE_PLAIN || MODE == MODE_RESID;
#endif
    for (int it = 0; it < mine; it++) {
        const int g = (int)blockIdx.x + it * G, m0 = (g / a.ntn) * BM, n0 = (g % a.ntn) * BN;
#ifndef MMP_WGMMA
        int acc[4][4][4];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int jn = 0; jn < 4; jn++)
#pragma unroll
                for (int c = 0; c < 4; c++) acc[i][jn][c] = 0;
#endif
        int tpart = 0; /* dp4a: this thread's part of its row's x . B */
        (void)tpart;
        for (int kt = 0; kt < KT; kt++, j++) {
            cp_wait<STAGES - 2>();
#ifdef MMP_WGMMA
            /* TMA: the stage's X, W (and B, A) have landed when its mbarrier flips */
            if (tma) {
                mbar_wait(bars + j % STAGES, (unsigned)(j / STAGES) & 1);
                __syncwarp();
            } else {
                fence_proxy_async(); /* this thread's cp.async data, next read by the tensor cores */
                __syncthreads();
            }
#else
            __syncthreads();
#endif
#ifndef MMP_WGMMA
            {
                const int nj = j + STAGES - 1;
                if (nj < J) load_next(nj % STAGES);
                cp_commit();
            }
#endif
            const int st = j % STAGES;
            const int8_t *xs = Xs + st * BM * LDS, *ws = Ws + st * BN * LDS;
#ifdef MMP_WGMMA
            {
                const unsigned xa = (unsigned)__cvta_generic_to_shared(xs) + (warp >> 2) * 64 * 64;
                const unsigned wb = (unsigned)__cvta_generic_to_shared(ws);
                wg_fence();
                wg_mma_s8(d, wg_desc(xa), wg_desc(wb), kt > 0);
                wg_mma_s8(d, wg_desc(xa + 32), wg_desc(wb + 32));
                if (R > 0 && TW) { /* t on the tensor cores too: 25% more MMA work, no per-thread dot products */
                    const unsigned bb = (unsigned)__cvta_generic_to_shared(Bs + st * (BM / 2) * BK) + (warp >> 2) * 32 * 64;
                    wg_mma_s8(dt, wg_desc(xa), wg_desc(bb), kt > 0);
                    wg_mma_s8(dt, wg_desc(xa + 32), wg_desc(bb + 32));
                }
                wg_commit();
            }
            if (R > 0 && !TW) { /* t partial: thread -> row tid/2, half (tid&1) of the k-step (B swizzled as X) */
                const int mi = tid >> 1, half = tid & 1;
                const int4 x0 = *(const int4 *)(xs + wg_off(mi, 2 * half)), x1 = *(const int4 *)(xs + wg_off(mi, 2 * half + 1));
                const int8_t *bs = Bs + st * (BM / 2) * BK;
                const int4 b0 = *(const int4 *)(bs + wg_off(mi >> 1, 2 * half)), b1 = *(const int4 *)(bs + wg_off(mi >> 1, 2 * half + 1));
                tpart = dp4a_16x2(x0, x1, b0, b1, tpart);
                /* those generic reads of the X and B stage before the TMA refill (a k-step later) that the barriers
                 * below let the producer issue: the async proxy's writes are not ordered after them by the barriers
                 * alone (mbar_release_read) */
                if (tma) fence_proxy_async();
            }
            /* this k-step's wgmma runs on; the previous one is done in every warpgroup after the
             * barrier, so its stage (= the stage of job j + 2) can be reloaded */
            wg_wait<1>();
            __syncthreads();
            {
                const int nj = j + STAGES - 1;
                if (nj < J) load_next(nj % STAGES);
                cp_commit();
            }
#else
            warp_tile_k64(acc, xs, ws, wm, wn, lane);
            if (R > 0) { /* t partial: thread -> row tid/2, half (tid&1) of the k-step */
                const int mi = tid >> 1, half = tid & 1;
                const int4 *xw = (const int4 *)(xs + mi * LDS + half * 32);
                const int4 *bw = (const int4 *)(Bs + (st * (BM / 2) + (mi >> 1)) * BK + half * 32);
                tpart = dp4a_16x2(xw[0], xw[1], bw[0], bw[1], tpart);
            }
#endif
        }
#ifdef MMP_WGMMA
        wg_wait<0>();
#endif
        if (R > 0) {
#ifdef MMP_WGMMA
            if (TW) wg_ts(dt, ts, warp, gid, tig);
            else
#endif
            {
                const int t = tpart + __shfl_xor_sync(0xffffffffu, tpart, 1), mi = tid >> 1;
                if ((tid & 1) == 0) ts[mi] = (mi & 1) ? -t : t;
            }
        }
        __syncthreads(); /* ts complete; the previous tile's stores have read Os */
        const int8_t *Ab = As + (it & 1) * (BM / 2) * BN;
        const int s = a.s, ps = a.pshift;
#ifdef MMP_WGMMA
        wg_frag_out<R>(d, Os, Ab, ts, warp, gid, tig, s, ps);
#else
        constexpr int EI = 4, EJ = 4;
        const int rbase = wm * 64, cbase = wn * 32;
#pragma unroll
        for (int i = 0; i < EI; i++)
#pragma unroll
            for (int hr = 0; hr < 2; hr++) {
                const int ml = rbase + i * 16 + gid + hr * 8;
                const int t = R > 0 ? ts[ml] : 0;
                /* the row's A values first: the compiler keeps shared loads behind earlier shared stores */
                unsigned short Av[EJ];
#pragma unroll
                for (int jn = 0; jn < EJ; jn++) Av[jn] = R > 0 ? *(const unsigned short *)(Ab + (ml >> 1) * BN + cbase + jn * 8 + tig * 2) : 0;
#pragma unroll
                for (int jn = 0; jn < EJ; jn++)
                    *(unsigned short *)(Os + ml * OLD + cbase + jn * 8 + tig * 2) =
                        epi_pair<R>(acc[i][jn][hr * 2], acc[i][jn][hr * 2 + 1], Av[jn], t, s, ps);
            }
#endif
#ifdef MMP_WGMMA
        if (R > 0 && tma) fence_proxy_async(); /* the A rows read (generic loads) before a later TMA refills them (mbar_release_read) */
#endif
        __syncthreads();
        /* out: 128 rows x 8 chunks of 16 bytes, 4 per thread (a fixed chunk column) */
        if (MODE == MODE_PLAIN || MODE == MODE_RESID) {
            int4 ot[4]; /* the residual's loads first */
            mmp_res_load<MODE>(a, m0, n0, tid, NTHREADS, ot);
            mmp_out_rows<MODE>(a, Os, m0, n0, tid, NTHREADS, ot);
        } else { /* BIAS_GATE, BIAS_MIX: the minGRU's fused bias, gate and mix */
            const int o = n0 + (tid & 7) * 16;
            bytes16 bias;
            if (o < a.N) bias.v = __ldg((const int4 *)(a.bias + o));
#pragma unroll 2
            for (int q = 0; q < 4; q++) {
                const int row = (tid >> 3) + q * (NTHREADS / 8), m = m0 + row;
                if (m >= a.M || o >= a.N) continue;
                const size_t yi = (size_t)m * a.ldy + o;
                bytes16 y, ot, n1, n2, hh, ff, xr;
                y.v = *(const int4 *)(Os + row * OLD + (o - n0));
                ot.v = __ldg((const int4 *)(a.other + yi));
                if (R > 0) {
                    const int8_t *nv = a.noise + (size_t)pair_of(a, m) * a.pstride + a.voff + o;
                    n1.v = __ldg((const int4 *)nv);
                    n2.v = __ldg((const int4 *)(nv + a.N));
                }
                if (MODE == MODE_BIAS_GATE) hh.v = __ldg((const int4 *)(a.h + yi));
                else {
                    ff.v = __ldg((const int4 *)(a.f + yi));
                    hh.v = *(const int4 *)(a.hs + yi);
                    xr.v = __ldg((const int4 *)(a.xres + yi));
                }
                const int sg = (m & 1) ? -1 : 1;
                const bool reset = MODE == MODE_BIAS_MIX && a.rz[m];
                bytes16 out, out2;
#pragma unroll
                for (int e = 0; e < 16; e++) {
                    const int b = R > 0 ? egg_vec_pert(bias.b[e], n1.b[e], n2.b[e], sg, ps) : bias.b[e];
                    const int f = clip4(y.b[e] + ot.b[e] + b); /* the gate f, or the candidate c */
                    if (MODE == MODE_BIAS_GATE) {
                        out.b[e] = (signed char)f;
                        out2.b[e] = (signed char)egg_gru_gate(f, hh.b[e]);
                    } else {
                        const int hp = egg_gru_mix(ff.b[e], f, hh.b[e]);
                        out2.b[e] = reset ? 0 : (signed char)hp;
                        out.b[e] = (signed char)clip4(hp + xr.b[e]);
                    }
                }
                *(int4 *)(a.Y + yi) = out.v;
                *(int4 *)((MODE == MODE_BIAS_GATE ? a.gout : a.hs) + yi) = out2.v;
            }
        }
    }
    cp_wait<0>();
}

#endif /* EGG_MMP_CUH */

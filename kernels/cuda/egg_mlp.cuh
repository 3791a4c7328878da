/* egg_mlp.cuh — mlp_kernel, a layer's MLP (up, clip, down, residual) in one launch
 * at H = 128 or 256 on sm_90a, the 4H hidden units never leaving the SM.
 * Part of the CUDA backend: included once by kernels/cuda/egg_cuda.cu (one translation unit). */
#ifndef EGG_MLP_CUH
#define EGG_MLP_CUH

/* The MLP of a layer at H = 128 or 256 in one kernel (sm_90a, rank <= 4; EGG_CUDA_FMLP=0: up and down as two GEMMs):
 *   U = clip((x . Wup^T + ((t_up A_up) >> ps)) >> 8), X = clip(clip((U . Wdown^T + ((t_dn A_dn) >> ps)) >> s) + R)
 * with U never leaving the SM: up and down as two GEMMs write U ([rows][4H], 4 bytes a row per byte of x) to DRAM
 * and read it back, 8 of the layer's ~21 bytes of DRAM traffic per row and hidden unit. A CTA takes whole 128-row
 * blocks; a consumer warpgroup's 64 rows run the 4H hidden units in chunks of 64:
 *   up:   m64n64k32 MMAs of the block's x (resident) against the chunk's rows of W_up's copy permuted by wpermu_row,
 *         so that the epilogue (epi_quad_bytes) makes a thread's accumulators, four at a time, the words of down's A
 *         fragment, kept in registers (no U tile in shared memory, no proxy fence or warpgroup barrier between the
 *         epilogue and down's MMAs), and adds U . B_dn to the row's t_dn (dp4a);
 *   down: m64nHk32 MMAs with A from those registers against Wdown's chunk of columns, accumulating over the chunks.
 * The two warpgroups issue their MMAs as they are ready. Until v143, hidden 128 at rank 2 (and until v142 at every
 * rank) wrote U into a shared-memory tile in the operand layout instead, the warpgroups taking turns and the epilogue
 * running on a copy of the accumulators under the next MMAs (OVL): the register path ran the MLP 25% faster there,
 * EGG-128x4 +9.9% at rank 1 and +9.0% at rank 2 (docs/BENCHMARKS.md), and made hidden 128 at rank 3-4 faster fused
 * than as two GEMMs (v144: +25% / +21% a step). t_up = sign * (x . B_up) comes from dp4a over the resident x at the
 * block's start. Wup's and Wdown's chunks come through one ring of stages (a producer warpgroup, TMA); the pairs' B
 * rows of up with the block's x, the A rows of up and the B rows of down per chunk, the A rows of down per block.
 * After the last chunk the down accumulators go out through wg_frag_direct (residual added), as in mmd_kernel. Same
 * integer operations as up in mmx_kernel and down in mmd_kernel. */
/* W stages of 64 H bytes: a chunk's up ([H/64][64][64]: its 64 rows of Wup) is job j, its down ([H][64]) j + 1; 8 at H = 256,
 * 7, 6, 4 there at rank R >= 2, as the noise rows of R ranks take the rest; 7 at H = 128 (10 and 14 ran no faster) */
__host__ __device__ constexpr int ml_stages(int H, int R = 1) { return H == 128 ? 7 : R >= 4 ? 4 : R == 3 ? 6 : R == 2 ? 7 : 8; }
/* the chunks' noise buffers: up's A rows [AR][64 pairs][64], down's B rows [AR][64 pairs][64]; AR = max(R, 1) ranks */
__host__ __device__ constexpr int ml_ma(int H, int R) { return H == 128 ? (R >= 4 ? 3 : 4) : R >= 3 ? 2 : R == 2 ? 3 : 4; }
__host__ __device__ constexpr int mlp_smem_bytes(int H, int R = 1) {
    /* stages, x, up's B rows (rank 1: at rank 2-4 x . B_up comes from T), down's A rows, the noise buffers, ts (an int4 a
     * row at rank 2-4), barriers */
    return ml_stages(H, R) * 64 * H + H * BM + (R >= 2 ? 0 : H * 64) + (H / 128) * rank_rows(R) * (BM / 2) * BN +
           ml_ma(H, R) * 2 * rank_rows(R) * 64 * BK + BM * 4 * (R >= 2 ? 4 : 1) + (2 * ml_stages(H, R) + 4 + ml_ma(H, R)) * 8;
}
#ifdef MMP_WGMMA
template <int H, int R, int EP, int w>
__device__ __forceinline__ void mlp_consume(const MMArgs &a, const int8_t *Ws, const int8_t *Xr, const int8_t *Bu, const int8_t *An, const int8_t *Ad,
                                            int *ts, uint64_t *full, uint64_t *empty, uint64_t *xfull, uint64_t *xempty, uint64_t *aempty,
                                            uint64_t *adfull, uint64_t *adempty, int nrb, int tid) {
    constexpr int KT = H / 64, NC = 4 * H / 64, SB = 64 * H;
    constexpr int ML_S = ml_stages(H, R), ML_MA = ml_ma(H, R), AR = rank_rows(R);
    const int warp = tid >> 5, lane = tid & 31, gid = lane >> 2, tig = lane & 3;
    int dd[H / 2], du[32];
    unsigned ua[8]; /* the chunk's U, word 4 hr + q of row hr: units 16 q + 4 tig .. + 3 */
    const uint64_t dx0 = wg_desc((unsigned)__cvta_generic_to_shared(Xr) + w * 64 * BK), dw0 = wg_desc((unsigned)__cvta_generic_to_shared(Ws));
    int r[2];
#pragma unroll
    for (int hr = 0; hr < 2; hr++) r[hr] = warp * 16 + gid + hr * 8; /* the thread's rows in the block (warp 4 w + w % 4) */
    unsigned j = 0;  /* the block's first stage job: chunk c's up is job j + 2 c, its down j + 2 c + 1 */
    unsigned ac = 0; /* the chunk's noise buffer, counted over the blocks */
    /* stage job jb's buffer filled, probed without waiting (before an epilogue, whose MMAs then skip their wait) */
    auto stage_full = [&](unsigned jb) { return mbar_test(full + jb % ML_S, (jb / ML_S) & 1); };
    auto issue_up = [&](unsigned ju, bool ready = false) { /* up's MMAs of the chunk at stage job ju (ready: its stage probed full) */
        /* no turns between the warpgroups: at H = 256 turns measured 5% slower (MLP 854.7 against 901.3 us a launch) */
        if (!ready) mbar_wait(full + ju % ML_S, (ju / ML_S) & 1);
        const unsigned so = (ju % ML_S) * (SB >> 4);
        wg_fence();
#pragma unroll
        for (int kt = 0; kt < KT; kt++) wg_mma_k64(du, dx0 + kt * (BM * BK >> 4), dw0 + so + kt * (64 * BK >> 4), kt > 0);
        wg_commit();
    };
    auto release = [&](unsigned jr) { mbar_arrive(empty + jr % ML_S); }; /* stage job jr is read */
    /* the block's x (and at rank 1 up's B) rows are read: at rank 1 by t_up's generic loads too (mbar_release_read's proxy
     * fence before the TMA refill), else by the MMAs alone */
    auto release_x = [&]() {
        if constexpr (R == 1) mbar_release_read(xempty);
        else mbar_arrive(xempty);
    };
    /* the first block's first up; a later block's is issued by the block before, in its last epilogue */
    mbar_wait(xfull, 0);
    issue_up(0);
    for (int q = 0; q < nrb; q++, j += 2 * NC) {
        const int m0 = blk_m0(a, (int)blockIdx.x + q * (int)gridDim.x);
        int tu[2] = {0, 0}, tn[2] = {0, 0};
        int4 tur[2]; /* rank 2-4: the rows' sign * x . B_up_j (T, xb_kernel) */
        int tnr[2][AR] = {}; /* rank 2-4: U . B_dn_j */
        if (R >= 2) {
            load_tr(a, m0, warp, gid, tur);
            if (EP == 2)
#pragma unroll
                for (int hr = 0; hr < 2; hr++) tur[hr] = t_split(tur[hr]);
        }
        if ((tid & 127) == 0) { /* the warpgroup's rows of the residual into L2, loaded in the last epilogue under the next
                                       * block's first up (loaded under this block's last down, their registers spilled) */
            const int rows = min(64, a.M - (m0 + 64 * w));
            if (rows > 0) l2_prefetch_bulk(a.other + (size_t)(m0 + 64 * w) * a.ldy, (unsigned)(rows * a.ldy));
        }
        if (R == 1) { /* t_up = sign * (x . B_up): the thread's 16 bytes of each k-step, the row's 4 lanes summed */
#pragma unroll
            for (int hr = 0; hr < 2; hr++) {
                int t = 0;
#pragma unroll
                for (int kt = 0; kt < KT; kt++)
                    t += dot16(*(const int4 *)(Xr + kt * BM * BK + wg_off(r[hr], tig)), *(const int4 *)(Bu + kt * 64 * BK + wg_off(r[hr] >> 1, tig)));
                t += __shfl_xor_sync(0xffffffffu, t, 1);
                t += __shfl_xor_sync(0xffffffffu, t, 2);
                tu[hr] = (r[hr] & 1) ? -t : t;
            }
        }
        /* down's MMAs of chunk cd (its U in ua); first (a constant at each call): chunk 0's, whose MMA sets dd rather than
         * adding to it */
        auto issue_down = [&](int cd, bool first = false, bool ready = false) {
            const unsigned jd = j + 2 * cd + 1;
            if (!ready) mbar_wait(full + jd % ML_S, (jd / ML_S) & 1);
            wg_fence();
            /* k32 step s: units 32 s .. + 31, words 2 s, 2 s + 1 of each row (wg_mma_s8r's fragment) */
            const uint64_t db = dw0 + (jd % ML_S) * (SB >> 4);
            if (first) wg_mma_s8r_set(dd, ua[0], ua[4], ua[1], ua[5], db);
            else wg_mma_s8r(dd, ua[0], ua[4], ua[1], ua[5], db);
            wg_mma_s8r(dd, ua[2], ua[6], ua[3], ua[7], db + 2);
        };
        /* chunk c's epilogue from its up accumulators v into ua, t_dn += U . B_dn; the rows' pairs' A rows of up and B rows
         * of down from the chunk's noise buffer */
        auto epilogue = [&](const int (&v)[32]) {
            const int8_t *nb = An + (ac % ML_MA) * 2 * AR * 64 * BK;
            /* the four U bytes of accumulator groups 2 q4, 2 q4 + 1 of row hr (rank <= 1; Aw: their A bytes) */
            auto quad = [&](int hr, int q4, unsigned Aw) {
                return epi_quad_bytes<R, EP>(v[8 * q4 + 2 * hr], v[8 * q4 + 2 * hr + 1], v[8 * q4 + 4 + 2 * hr], v[8 * q4 + 4 + 2 * hr + 1],
                                             R > 0 ? Aw : 0u, tu[hr], 8, a.pshift);
            };
            if constexpr (R >= 2) { /* as below with R ranks: nb holds up's A rows of each rank, then down's B rows */
#pragma unroll
                for (int hr = 0; hr < 2; hr++) {
                    int t[AR]; /* EP 2: tur holds t_split(t) */
#pragma unroll
                    for (int jr = 0; jr < AR; jr++) t[jr] = (&tur[hr].x)[jr];
#pragma unroll
                    for (int q4 = 0; q4 < 4; q4++) {
                        const int o = wg_off(r[hr] >> 1, q4) + 4 * tig, i = 8 * q4 + 2 * hr;
                        unsigned aw[AR];
#pragma unroll
                        for (int jr = 0; jr < AR; jr++) aw[jr] = *(const unsigned *)(nb + jr * 64 * BK + o);
                        const unsigned y = EP == 2 ? epi_quad_r8<AR>(v[i], v[i + 1], v[i + 4], v[i + 5], aw, tur[hr])
                                                   : epi_quad_r<AR, false>(v[i], v[i + 1], v[i + 4], v[i + 5], aw, t, 8, a.pshift);
                        ua[4 * hr + q4] = y;
#pragma unroll
                        for (int jr = 0; jr < AR; jr++) tnr[hr][jr] = __dp4a((int)y, *(const int *)(nb + (AR + jr) * 64 * BK + o), tnr[hr][jr]);
                    }
                }
            } else { /* W_up's copy wpermu_row: accumulator groups 2 q, 2 q + 1 of row hr are units 16 q + 4 tig .. + 3 */
#pragma unroll
                for (int hr = 0; hr < 2; hr++)
#pragma unroll
                    for (int q4 = 0; q4 < 4; q4++) {
                        const int o = wg_off(r[hr] >> 1, q4) + 4 * tig;
                        const unsigned y = quad(hr, q4, R > 0 ? *(const unsigned *)(nb + o) : 0u);
                        ua[4 * hr + q4] = y;
                        if (R > 0) tn[hr] = __dp4a((int)y, *(const int *)(nb + 64 * BK + o), tn[hr]);
                    }
            }
            if (R > 0) { /* the chunk's noise rows are read (generic loads: mbar_release_read) */
                mbar_release_read(aempty + ac % ML_MA);
                ac++;
            }
        };
        { /* chunk c's epilogue, then its down, then chunk c + 1's up (chunk 0's before); chunks 0 and NC - 1
                  * peeled, so that no MMA sits behind a branch */
            /* chunk c's epilogue, its down (first: chunk 0's) and, where next, chunk c + 1's up. The stages of that down and
             * up are probed before the epilogue, so that a wait on a stage already full (the producer runs chunks ahead)
             * costs no latency between the epilogue and the MMAs; first and next are constants at each call */
            auto chunk = [&](int c, bool first, bool next) {
                const bool rd = stage_full(j + 2 * c + 1), ru = next && stage_full(j + 2 * c + 2);
                epilogue(du);
                issue_down(c, first, rd);
                wg_commit();
                if (next) issue_up(j + 2 * c + 2, ru);
            };
            wg_wait<0>();
            release(j);
            chunk(0, true, true);
            for (int c = 1; c < NC - 1; c++) {
                wg_wait<0>(); /* this chunk's up and the previous chunk's down are done */
                release(j + 2 * c);
                release(j + 2 * c - 1);
                chunk(c, false, true);
            }
            wg_wait<0>();
            release(j + 2 * NC - 2);
            release(j + 2 * NC - 3);
            release_x();
            chunk(NC - 1, false, false);
        }
        int4 ot[H / 128][4]; /* the residual in wg_frag_direct's store order (loaded under the next block's first up) */
        const bool ra = R > 0 ? mbar_test(adfull, (unsigned)q & 1) : false; /* down's A rows (loaded chunks ago), probed early */
        wg_wait<0>();
        release(j + 2 * NC - 1);
        if (R >= 2) { /* the rows' sign * U . B_dn_j into ts as an int4 a row */
#pragma unroll
            for (int hr = 0; hr < 2; hr++) {
                int4 o = make_int4(0, 0, 0, 0);
#pragma unroll
                for (int jr = 0; jr < AR; jr++) {
                    int t = tnr[hr][jr];
                    t += __shfl_xor_sync(0xffffffffu, t, 1);
                    t += __shfl_xor_sync(0xffffffffu, t, 2);
                    (&o.x)[jr] = (r[hr] & 1) ? -t : t;
                }
                if (tig == 0) ((int4 *)ts)[r[hr]] = o;
            }
            __syncwarp();
            if (!ra) mbar_wait(adfull, (unsigned)q & 1);
        } else if (R > 0) {
#pragma unroll
            for (int hr = 0; hr < 2; hr++) {
                int t = tn[hr];
                t += __shfl_xor_sync(0xffffffffu, t, 1);
                t += __shfl_xor_sync(0xffffffffu, t, 2);
                if (tig == 0) ts[r[hr]] = (r[hr] & 1) ? -t : t;
            }
            __syncwarp();
            if (!ra) mbar_wait(adfull, (unsigned)q & 1);
        }
        { /* the residual's loads, the outputs from the accumulators (under the loads), then the next block's first up, then
           * the residual's add and the stores under it (no instruction may read an accumulator while an MMA is in flight);
           * the loads after the outputs had left their L2 latency before the stores: 20% of the kernel with both gone (a
           * timing hack) */
            int4 st[H / 128][2][2];
#pragma unroll
            for (int h = 0; h < H / 128; h++) frag_direct_resid(a, m0, h * BN, warp, gid, tig, ot[h]);
            if constexpr (R >= 2) { /* down at K = 4 H: at H = 256 (K = 1024, s = 9) and ps = 8 (EP 2) epi_quad_r9, else p in 64
                                     * bits at rank 3-4, in 32 at rank 2 (R K <= 2048); at H = 128 (K = 512) p in 32 bits */
                int4 tdr[2];
#pragma unroll
                for (int hr = 0; hr < 2; hr++) tdr[hr] = ((const int4 *)ts)[r[hr]];
#pragma unroll
                for (int h = 0; h < H / 128; h++)
                    frag_direct_out_r<AR, (H == 256 && AR > 2 && EP != 2), false, (H == 256 && EP == 2)>(
                        a, *reinterpret_cast<const int(*)[64]>(dd + 64 * h), Ad + h * AR * (BM / 2) * BN, tdr, warp, gid, tig, adempty, st[h]);
            } else {
#pragma unroll
                for (int h = 0; h < H / 128; h++)
                    frag_direct_out<R, 0>(a, *reinterpret_cast<const int(*)[64]>(dd + 64 * h), Ad + h * (BM / 2) * BN, ts, warp, gid, tig, adempty,
                                          st[h]);
            }
            if (q + 1 < nrb) {
                mbar_wait(xfull, (unsigned)(q + 1) & 1);
                issue_up(j + 2 * NC);
            }
#pragma unroll
            for (int h = 0; h < H / 128; h++) frag_direct_store<MODE_RESID, true>(a, st[h], m0, h * BN, warp, gid, tig, ot[h], a.Y);
        }
    }
    wg_wait<0>();
}
#endif
/* tmaps: x [rows][H] (box 64 x 128), Wup's permuted copy (64 x 64), the noise (64 x 64 pairs: up's A and
 * B rows, down's B rows), Wdown's permuted copy (64 x 128), the noise for down's A rows (128 x 64 pairs); a: down's
 * GEMM (X unused), aoff_up: up's noise */
template <int H, int R, int EP>
__global__ void __launch_bounds__(MX_THREADS, 1) mlp_kernel(MMArgs a, size_t aoff_up, const __grid_constant__ CUtensorMap tmx,
                                                            const __grid_constant__ CUtensorMap tmwu, const __grid_constant__ CUtensorMap tmnu,
                                                            const __grid_constant__ CUtensorMap tmwd, const __grid_constant__ CUtensorMap tmnd) {
#ifdef MMP_WGMMA
    constexpr int KT = H / 64, NC = 4 * H / 64, SB = 64 * H, ML_S = ml_stages(H, R), ML_MA = ml_ma(H, R), AR = rank_rows(R);
    extern __shared__ __align__(1024) unsigned char smem[];
    int8_t *Ws = (int8_t *)smem;                    /* [ML_S][SB] */
    int8_t *Xr = Ws + ML_S * SB;                    /* [KT][BM][BK]: the block's x */
    int8_t *Bu = Xr + KT * BM * BK;                 /* [KT][64][BK]: its pairs' B rows of up (rank 1) */
    int8_t *Ad = Bu + (R >= 2 ? 0 : KT * 64 * BK);  /* [H/128][AR][BM/2][BN]: their A rows of down */
    int8_t *An = Ad + (H / 128) * AR * (BM / 2) * BN; /* [ML_MA][2][AR][64][BK]: a chunk's A rows of up, B rows of down */
    int *ts = (int *)(An + ML_MA * 2 * AR * 64 * BK); /* [BM]: sign * (U . B_dn) (rank 2-4: [BM][4]) */
    uint64_t *full = (uint64_t *)(ts + BM * (R >= 2 ? 4 : 1)), *empty = full + ML_S, *xfull = empty + ML_S, *xempty = xfull + 1, *adfull = xempty + 1,
             *adempty = adfull + 1, *aempty = adempty + 1;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    if (tid == 0) {
        for (int st = 0; st < ML_S; st++) {
            mbar_init(full + st, 1);
            mbar_init(empty + st, 256);
        }
        mbar_init(xfull, 1);
        mbar_init(xempty, 256);
        mbar_init(adfull, 1);
        mbar_init(adempty, 256 * (H / 128)); /* every consumer thread, once per 128 columns */
        for (int u = 0; u < ML_MA; u++) mbar_init(aempty + u, 256);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    const int G = (int)gridDim.x;
    const int nrb = (int)blockIdx.x < a.mtn ? (a.mtn - 1 - (int)blockIdx.x) / G + 1 : 0;
    if (warp >= 8) { /* producer: one thread walks the blocks and their chunks */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
        if (warp == 8 && lane == 0) {
            int j = 0;
            unsigned ac = 0;
            const uint64_t once = l2_policy(L2_FIRST), keep = l2_policy(L2_LAST);
            auto stage = [&]() { /* the next stage job's buffer, once the consumers released its previous use */
                const int st = j % ML_S;
                if (j >= ML_S) mbar_wait(empty + st, (unsigned)(j / ML_S - 1) & 1);
                return st;
            };
            for (int q = 0; q < nrb; q++) {
                const int m0 = blk_m0(a, (int)blockIdx.x + q * G);
                const int p0 = R > 0 ? (m0 >> 1) % a.wrap : 0;
                if (q >= 1) mbar_wait(xempty, (unsigned)(q - 1) & 1);
                mbar_expect_tx(xfull, KT * BM * BK + (R == 1 ? KT * 64 * BK : 0));
                for (int kt = 0; kt < KT; kt++) {
                    tma_load_2d(Xr + kt * BM * BK, &tmx, kt * BK, m0, xfull, once);
                    if (R == 1) tma_load_2d(Bu + kt * 64 * BK, &tmnu, (int)(aoff_up + a_span(1, 4 * H)) + kt * BK, p0, xfull, keep);
                }
                for (int c = 0; c < NC; c++) {
                    int st = stage(); /* up: Wup's permuted rows 64 c .. 64 c + 63, all k-steps, and the chunk's noise rows */
                    if (R > 0 && ac >= (unsigned)ML_MA) mbar_wait(aempty + ac % ML_MA, (ac / ML_MA - 1) & 1);
                    mbar_expect_tx(full + st, SB + (R > 0 ? 2 * AR * 64 * BK : 0));
                    for (int kt = 0; kt < KT; kt++) tma_load_2d(Ws + st * SB + kt * 64 * BK, &tmwu, kt * BK, c * 64, full + st, keep);
                    if (R > 0) { /* rank j's A_up at column aoff_up + j 4H, B_dn at a.aoff + a_span(R, H) + j 4H */
                        int8_t *nb = An + (ac % ML_MA) * 2 * AR * 64 * BK;
                        for (int jr = 0; jr < AR; jr++) {
                            tma_load_2d(nb + jr * 64 * BK, &tmnu, (int)aoff_up + jr * 4 * H + c * 64, p0, full + st, keep);
                            tma_load_2d(nb + (AR + jr) * 64 * BK, &tmnu, (int)(a.aoff + a_span(AR, H)) + jr * 4 * H + c * 64, p0, full + st, keep);
                        }
                        ac++;
                    }
                    j++;
                    st = stage(); /* down: Wdown's permuted rows, columns 64 c .. 64 c + 63 */
                    mbar_expect_tx(full + st, SB);
                    for (int h = 0; h < H / 128; h++) tma_load_2d(Ws + st * SB + h * BN * BK, &tmwd, c * BK, h * BN, full + st, keep);
                    j++;
                    if (R > 0 && c == NC / 2) { /* down's A rows, once the previous block's epilogue read them */
                        if (q >= 1) mbar_wait(adempty, (unsigned)(q - 1) & 1);
                        mbar_expect_tx(adfull, (H / 128) * AR * (BM / 2) * BN);
                        for (int h = 0; h < H / 128; h++)
                            for (int jr = 0; jr < AR; jr++)
                                tma_load_2d(Ad + (h * AR + jr) * (BM / 2) * BN, &tmnd, (int)a.aoff + jr * H + h * BN, p0, adfull, keep);
                    }
                }
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    if (nrb == 0) return;
    if (warp < 4) mlp_consume<H, R, EP, 0>(a, Ws, Xr, Bu, An, Ad, ts, full, empty, xfull, xempty, aempty, adfull, adempty, nrb, tid);
    else mlp_consume<H, R, EP, 1>(a, Ws, Xr, Bu, An, Ad, ts, full, empty, xfull, xempty, aempty, adfull, adempty, nrb, tid);
#else
    (void)a; (void)aoff_up; (void)tmx; (void)tmwu; (void)tmnu; (void)tmwd; (void)tmnd;
#endif
}

#endif /* EGG_MLP_CUH */

/* egg_mm.cuh — the GEMM arguments (MMArgs), the weights' permuted row orders, the
 * cp.async and mma.sync helpers, the per-output epilogue of the CPU's egg_mm_out
 * and its fused modes, and mm_kernel: the portable int8 GEMM (mma.sync m16n8k32;
 * MFMA / WMMA on AMD) that every shape and GPU can run.
 * Part of the CUDA backend: included once by kernels/cuda/egg_cuda.cu (one translation unit). */
#ifndef EGG_MM_CUH
#define EGG_MM_CUH

#define BM 128
#define BN 128
#define BK 64
#define LDS 80 /* padded smem row: 64 data bytes + 16 -> conflict-free 32-bit fragment loads */
/* Shared-memory plan. AMD has 64 KiB of LDS per workgroup and no cp.async
 * (kernels/hip/egg_tile_hip.h copies synchronously, so stages add no overlap):
 * one stage, and the int32 C tile staged in passes of BM/2 rows (38 KiB at
 * rank 4). -DEGG_GEMM_AMD_PLAN selects that plan on NVIDIA too (tests). */
#if defined(__HIPCC__) || defined(EGG_GEMM_AMD_PLAN)
#define STAGES 1
#define EPI_ROWS (BM / 2)
#elif defined(EGG_MM_OCC3)
/* experiment: 2 stages (smem 69.6 KB) and <= 80 registers so 3 CTAs fit an SM */
#define STAGES 2
#define EPI_ROWS BM
#define MM_MIN_BLOCKS 3
#else
#define STAGES 3
#define EPI_ROWS BM
#endif
#ifndef EGG_EPI_UNROLL
#define EGG_EPI_UNROLL 4 /* rows of the epilogue in flight per thread */
#endif
#define EGG_PRAGMA(x) _Pragma(#x)
#define EGG_UNROLL(n) EGG_PRAGMA(unroll n)
#ifndef MM_MIN_BLOCKS
#define MM_MIN_BLOCKS 2 /* <= 128 registers: two CTAs per SM (134 without the bound = one) */
#endif
#define NTHREADS 256
#define LDC (BN + 4)

struct MMArgs {
    const int8_t *X; int ldx;  /* [M][K] */
    const int8_t *W; int ldw;  /* [N][K] */
    const int8_t *Wp;          /* NULL, or W with each 128-row block's rows permuted (wperm_row: the mmw epilogue's layout) */
    int M, N, K;
    int s, pshift, r;          /* r = 0: unperturbed */
    const int8_t *noise; size_t pstride; size_t aoff; /* A at noise + p*pstride + aoff, B at + a_span(r, N) */
    const int8_t *other;       /* [M][N]: added (BIAS) or residual (RESID) */
    const int8_t *bias; size_t voff; /* bias [N]; its n1 at noise + p*pstride + voff, n2 after */
    const int8_t *h; int8_t *gout;   /* BIAS_GATE: g = gate(y, h) */
    int8_t *Y; int ldy;
    int32_t *Z; int ksplit;          /* update: split-K partial sums, atomically added */
    int ntn, mtn, nfast;             /* forward: N and M tiles of the 1-D grid; N tiles fastest */
    int wrap;                        /* rows are [time][members]: pair of row m = (m/2) % wrap; 0 = m/2 */
    /* BIAS_MIX (candidate c = y): h' = mix(f, c, hs); Y = clip(h' + xres); hs = rz[m] ? 0 : h' (rz never NULL) */
    const int8_t *f, *xres; int8_t *hs; const uint8_t *rz;
    int tma;                         /* persistent GEMM on sm_90a: X and W tiles by TMA (tensor maps passed with the launch) */
    /* a second GEMM of the same X and shape in the same launch (Wf and Wh: mmx_kernel's DUAL, X read once; elsewhere
     * launch_mm runs it as a second launch): its weights, their permuted copy, its noise offset and output */
    const int8_t *W2, *Wp2; size_t aoff2; int8_t *Y2;
    /* MODE_UPDATE over every matrix in one launch (mmw_kernel): X, W the matrices' operand rows stacked, tile g is
     * items[g] = {X row, W row, matrix, first k-step}; matrix t's rows start at gtab[t].x in X, .y in W, it has
     * gtab[t].z rows and .w columns, its votes at Z + gzoff[t] */
    const int4 *items; int nitems; const int4 *gtab; const long long *gzoff;
    int resw;                        /* mmx_kernel: W resident where all its tiles fit the stages (EGG_CUDA_RESW=0: streamed) */
    /* rank 2-4 in mmx_kernel and mmd_kernel: T [M][4] int32, row m's sign * x_m . B_j (j < r; xb_kernel, before the
     * launch); the caller's scratch, room for two matrices where a has a second (its T at T + 4 M) */
    int32_t *T; int tready;          /* tready: T holds this GEMM's rows already (a pair's second: xb_kernel ran for both) */
    int tord;                        /* > 0: the timesteps of the rows [tord][2 wrap]; the row blocks walk timesteps first (blk_m0) */
};
/* the W row that row o of its permuted copy holds: in each block of 128 rows, row 8 jn + 2 tig + b holds
 * 64 (jn / 8) + 16 tig + 2 (jn % 8) + b: a wgmma accumulator's columns 8 jn + 2 tig (+1), jn < 16, become two runs
 * of 16 adjacent columns, the four lanes of a row covering 64 adjacent bytes (full 32-byte sectors per store) */
__host__ __device__ __forceinline__ int wperm_row(int o) {
    return (o & ~63) | (((o >> 1) & 3) << 4) | (((o >> 3) & 7) << 1) | (o & 1);
}
/* and its inverse: where W row o goes */
__host__ __device__ __forceinline__ int wperm_dst(int o) {
    return (o & ~63) | (((o >> 1) & 7) << 3) | (((o >> 4) & 3) << 1) | (o & 1);
}
/* the fused MLP's copy of W_up at H = 256 (mlp_kernel's RS): in each block of 64 rows, row 8 i + 2 tig + b holds
 * 16 (i / 2) + 4 tig + 2 (i % 2) + b, so that a thread's up accumulators of a row, four at a time, are the hidden
 * units 16 q + 4 tig .. + 3 (q < 4): the bytes of down's A operand in registers (wgmma's k32 fragment: row gid
 * (+ 8), k 4 tig .. + 3 and 16 + 4 tig .. + 3), with down's K in the natural order */
__host__ __device__ __forceinline__ int wpermu_row(int o) {
    return (o & ~63) | (((o >> 4) & 3) << 4) | (((o >> 1) & 3) << 2) | (((o >> 3) & 1) << 1) | (o & 1);
}
__host__ __device__ __forceinline__ int wpermu_dst(int u) {
    return (u & ~63) | (((u >> 4) & 3) << 4) | (((u >> 1) & 1) << 3) | (((u >> 2) & 3) << 1) | (u & 1);
}
__device__ __forceinline__ int pair_of(const MMArgs &a, int m) { return a.wrap ? (m >> 1) % a.wrap : (m >> 1); }
/* row block b's first row. Rows are [time][n = 2 wrap members]; with a.tord (n a multiple of BM) block b is members
 * BM (b / tord) .. + BM - 1 at timestep b % tord: a persistent launch's CTAs, at work on neighbouring blocks, read the
 * same few pairs' noise rows (at rank 4 the fused MLP's are 32 MB a member part of 8192, read again each timestep; in
 * timestep order every CTA read other pairs'), which then stay in L2. Else block b is rows BM b .. + BM - 1 */
__device__ __forceinline__ int blk_m0(const MMArgs &a, int b) {
    return a.tord > 0 ? (b % a.tord) * (2 * a.wrap) + (b / a.tord) * BM : b * BM;
}

#if !defined(__HIPCC__) /* PTX; HIP: the same names in kernels/hip/egg_tile_hip.h */
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, bool pred) {
    unsigned saddr = (unsigned)__cvta_generic_to_shared(smem);
    int sz = pred ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(saddr), "l"(gmem), "r"(sz));
}
__device__ __forceinline__ void cp_async8(void *smem, const void *gmem, bool pred) {
    unsigned saddr = (unsigned)__cvta_generic_to_shared(smem);
    int sz = pred ? 8 : 0;
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(saddr), "l"(gmem), "r"(sz));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void mma_s8(int (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif

#if !defined(__HIPCC__)
__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], const int8_t *p) {
    unsigned a = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}
#endif

__host__ __device__ constexpr int mm_pipe_bytes(int r) { return STAGES * (BM + BN) * LDS + STAGES * (BM / 2) * r * BK; }
__host__ __device__ constexpr int mm_ts_offset(int r) {
    int pipe = mm_pipe_bytes(r), ctile = EPI_ROWS * LDC * 4;
    return pipe > ctile ? pipe : ctile;
}

/* The epilogue of one output element (the CPU's egg_mm_out and fused ops). */
template <int MODE>
__device__ __forceinline__ int epi_one(const MMArgs &a, int32_t v, int m, int o, const int *t, int r, bool small) {
    int y;
    const int p = pair_of(a, m);
    if (r == 0) {
        y = egg_mm_out(v, 0, a.pshift, a.s);
    } else {
        const int8_t *A = a.noise + (size_t)p * a.pstride + a.aoff;
        if (small) {
            int32_t pp = 0;
            for (int q = 0; q < r; q++) pp += t[q] * A[(size_t)q * a.N + o];
            int32_t u = (v + (pp >> a.pshift)) >> a.s;
            y = u < -127 ? -127 : (u > 127 ? 127 : u);
        } else {
            int64_t pp = 0;
            for (int q = 0; q < r; q++) pp += (int64_t)t[q] * A[(size_t)q * a.N + o];
            y = egg_mm_out(v, pp, a.pshift, a.s);
        }
    }
    const size_t yi = (size_t)m * a.ldy + o;
    if (MODE == MODE_BIAS || MODE == MODE_BIAS_GATE || MODE == MODE_BIAS_MIX) {
        int b = a.bias[o];
        if (r > 0) {
            const int8_t *n1 = a.noise + (size_t)p * a.pstride + a.voff;
            b = egg_vec_pert(b, n1[o], n1[a.N + o], (m & 1) ? -1 : 1, a.pshift);
        }
        y = egg_clip8(y + a.other[yi] + b);
    } else if (MODE == MODE_RESID) {
        y = egg_clip8(y + a.other[yi]);
    }
    return y;
}

/* Fast epilogue for N % 4 == 0 and r * K <= 2048 (p fits int32): four
 * consecutive outputs per thread, every global access 4 bytes wide, the rank
 * R known at compile time. Same integer operations as epi_one. */
__device__ __forceinline__ int clip4(int v) { return v < -127 ? -127 : (v > 127 ? 127 : v); }
/* 4 bytes the kernel only reads (read-only data path on NVIDIA): the epilogue's
 * loads then do not wait behind its stores and several rows' loads overlap */
__device__ __forceinline__ char4 ld_ro4(const int8_t *p) {
#if defined(__HIPCC__)
    return *(const char4 *)p;
#else
    return __ldg((const char4 *)p);
#endif
}
template <int MODE, int R>
__device__ __forceinline__ void epi_tile4(const MMArgs &a, const int *Cs, const int *ts, const int *prow, int m0, int n0, int tid) {
    /* a thread keeps one group of 4 columns (BN/4 = 32 groups per row) and walks
     * the rows NTHREADS/32 apart: the column's bias and offsets are set up once */
    constexpr int CPR = BN / 4, RSTEP = NTHREADS / CPR;
    const int ol = (tid % CPR) * 4, o = n0 + ol;
    if (o >= a.N) return;
    int bb0 = 0, bb1 = 0, bb2 = 0, bb3 = 0;
    if (MODE == MODE_BIAS || MODE == MODE_BIAS_GATE || MODE == MODE_BIAS_MIX) {
        const char4 b = *(const char4 *)(a.bias + o);
        bb0 = b.x; bb1 = b.y; bb2 = b.z; bb3 = b.w;
    }
    const int8_t *acol = a.noise + a.aoff + o, *vcol = a.noise + a.voff + o;
    const int s = a.s, ps = a.pshift;
    const int nrows = a.M - m0 < EPI_ROWS ? a.M - m0 : EPI_ROWS;
    EGG_UNROLL(EGG_EPI_UNROLL)
    for (int ml = tid / CPR; ml < nrows; ml += RSTEP) {
        const int m = m0 + ml;
        const int4 v = *(const int4 *)&Cs[ml * LDC + ol];
        const size_t boff = R > 0 ? (size_t)prow[ml] * a.pstride : 0;
        int y0, y1, y2, y3;
        if (R == 0) {
            y0 = clip4(v.x >> s); y1 = clip4(v.y >> s); y2 = clip4(v.z >> s); y3 = clip4(v.w >> s);
        } else {
            int p0 = 0, p1 = 0, p2 = 0, p3 = 0;
#pragma unroll
            for (int q = 0; q < R; q++) {
                const int t = ts[ml * GPU_RMAX + q];
                const char4 A = ld_ro4(acol + boff + (size_t)q * a.N);
                p0 += t * A.x; p1 += t * A.y; p2 += t * A.z; p3 += t * A.w;
            }
            y0 = clip4((v.x + (p0 >> ps)) >> s);
            y1 = clip4((v.y + (p1 >> ps)) >> s);
            y2 = clip4((v.z + (p2 >> ps)) >> s);
            y3 = clip4((v.w + (p3 >> ps)) >> s);
        }
        const size_t yi = (size_t)m * a.ldy + o;
        if (MODE == MODE_BIAS || MODE == MODE_BIAS_GATE || MODE == MODE_BIAS_MIX) {
            const char4 ot = ld_ro4(a.other + yi);
            int b0 = bb0, b1 = bb1, b2 = bb2, b3 = bb3;
            if (R > 0) {
                const int sg = (m & 1) ? -1 : 1;
                const char4 n1 = ld_ro4(vcol + boff), n2 = ld_ro4(vcol + boff + a.N);
                b0 = egg_vec_pert(b0, n1.x, n2.x, sg, ps); b1 = egg_vec_pert(b1, n1.y, n2.y, sg, ps);
                b2 = egg_vec_pert(b2, n1.z, n2.z, sg, ps); b3 = egg_vec_pert(b3, n1.w, n2.w, sg, ps);
            }
            y0 = clip4(y0 + ot.x + b0); y1 = clip4(y1 + ot.y + b1); y2 = clip4(y2 + ot.z + b2); y3 = clip4(y3 + ot.w + b3);
            if (MODE == MODE_BIAS_GATE) {
                const char4 h = ld_ro4(a.h + yi);
                *(char4 *)(a.gout + yi) = make_char4((signed char)egg_gru_gate(y0, h.x), (signed char)egg_gru_gate(y1, h.y),
                                                     (signed char)egg_gru_gate(y2, h.z), (signed char)egg_gru_gate(y3, h.w));
            } else if (MODE == MODE_BIAS_MIX) {
                const char4 f = ld_ro4(a.f + yi), h = *(const char4 *)(a.hs + yi), x = ld_ro4(a.xres + yi);
                const int h0 = egg_gru_mix(f.x, y0, h.x), h1 = egg_gru_mix(f.y, y1, h.y);
                const int h2 = egg_gru_mix(f.z, y2, h.z), h3 = egg_gru_mix(f.w, y3, h.w);
                *(char4 *)(a.hs + yi) = a.rz[m] ? make_char4(0, 0, 0, 0)
                                                          : make_char4((signed char)h0, (signed char)h1, (signed char)h2, (signed char)h3);
                y0 = clip4(h0 + x.x); y1 = clip4(h1 + x.y); y2 = clip4(h2 + x.z); y3 = clip4(h3 + x.w);
            }
        } else if (MODE == MODE_RESID) {
            const char4 ot = ld_ro4(a.other + yi);
            y0 = clip4(y0 + ot.x); y1 = clip4(y1 + ot.y); y2 = clip4(y2 + ot.z); y3 = clip4(y3 + ot.w);
        }
        *(char4 *)(a.Y + yi) = make_char4((signed char)y0, (signed char)y1, (signed char)y2, (signed char)y3);
    }
}

/* One warp's 64 x 32 share of a BK = 64 k-step: fragments of the X and W
 * stage tiles (padded rows of LDS bytes) and 4 x 4 m16n8k32 MMAs. */
__device__ __forceinline__ void warp_tile_k64(int (&acc)[4][4][4], const int8_t *xs, const int8_t *ws, int wm, int wn, int lane) {
    const int gid = lane >> 2, tig = lane & 3;
    (void)gid; (void)tig;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 32) {
        unsigned af[4][4], bf[4][2];
#if defined(__CUDA_ARCH__) && !defined(__HIPCC__)
        /* ldmatrix.x4: four 8x16-byte matrices per instruction land exactly in the
         * m16n8k32 fragment registers (A: rows 0-7/8-15 x bytes 0-15/16-31;
         * B: two n-tiles x bytes 0-15/16-31). 6 instructions instead of 24 LDS. */
#pragma unroll
        for (int i = 0; i < 4; i++)
            ldsm_x4(af[i], xs + (wm * 64 + i * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * LDS + kk + (lane >> 4) * 16);
#pragma unroll
        for (int j = 0; j < 4; j += 2) {
            unsigned q[4];
            ldsm_x4(q, ws + (wn * 32 + j * 8 + (lane & 7) + (lane >> 4) * 8) * LDS + kk + ((lane >> 3) & 1) * 16);
            bf[j][0] = q[0]; bf[j][1] = q[1]; bf[j + 1][0] = q[2]; bf[j + 1][1] = q[3];
        }
#else
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int8_t *p = xs + (wm * 64 + i * 16 + gid) * LDS + kk + tig * 4;
            af[i][0] = *(const unsigned *)(p);
            af[i][1] = *(const unsigned *)(p + 8 * LDS);
            af[i][2] = *(const unsigned *)(p + 16);
            af[i][3] = *(const unsigned *)(p + 8 * LDS + 16);
        }
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int8_t *p = ws + (wn * 32 + j * 8 + gid) * LDS + kk + tig * 4;
            bf[j][0] = *(const unsigned *)(p);
            bf[j][1] = *(const unsigned *)(p + 16);
        }
#endif
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) mma_s8(acc[i][j], af[i], bf[j]);
    }
}

/* One CTA: BM rows of X (members, or update rows) x BN rows of W (outputs).
 * 8 warps as 2 (M) x 4 (N); warp tile 64 x 32 = 4 x 4 mma tiles of 16 x 8;
 * K in steps of 64 through a 3-stage cp.async pipeline. While the tile's X
 * rows pass through shared memory, each member's t_j = x . B_j is accumulated
 * with dp4a from its pair's B rows (the rank-r term needs it in the epilogue). */
template <int MODE>
__global__ void __launch_bounds__(NTHREADS, MM_MIN_BLOCKS) mm_kernel(MMArgs a) {
    extern __shared__ __align__(1024) unsigned char smem[];
    const int r = (MODE == MODE_UPDATE) ? 0 : a.r;
    const int rr = r > 0 ? r : 1;
    int8_t *Xs = (int8_t *)smem;                 /* [STAGES][BM][LDS] */
    int8_t *Ws = Xs + STAGES * BM * LDS;         /* [STAGES][BN][LDS] */
    int8_t *Bs = Ws + STAGES * BN * LDS;         /* [STAGES][BM/2][r][BK] */
    int *ts = (int *)(smem + mm_ts_offset(rr));  /* [BM][GPU_RMAX] */
    int *prow = ts + BM * GPU_RMAX;              /* [BM]: noise pair of each row */

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int wm = warp >> 2, wn = warp & 3, gid = lane >> 2, tig = lane & 3;
    /* forward: a 1-D grid, M tiles fastest, or (nfast) the N tiles of one row
     * block adjacent so the row block is read from DRAM once and shared
     * through L2; the update keeps x = M tiles, y = N tiles, z = K split */
    const int mt = MODE == MODE_UPDATE ? (int)blockIdx.x : a.nfast ? (int)blockIdx.x / a.ntn : (int)blockIdx.x % a.mtn;
    const int nt = MODE == MODE_UPDATE ? (int)blockIdx.y : a.nfast ? (int)blockIdx.x % a.ntn : (int)blockIdx.x / a.mtn;
    const int m0 = mt * BM, n0 = nt * BN;
    int kbeg = 0, kend = a.K;
    if (MODE == MODE_UPDATE) {
        kbeg = blockIdx.z * a.ksplit;
        kend = min(a.K, kbeg + a.ksplit);
    }
    const int KT = (kend - kbeg + BK - 1) / BK; /* a last half stage (K % 64 == 32) is zero-filled */

    auto load_stage = [&](int st, int kt) {
        const int k0 = kbeg + kt * BK;
#pragma unroll
        for (int q = 0; q < 2; q++) { /* 128 rows x 4 chunks of 16 B = 512 chunks each for X and W */
            int ch = tid + q * NTHREADS, row = ch >> 2, c = ch & 3;
            const bool kin = k0 + c * 16 < kend;
            int gm = m0 + row;
            bool ok = gm < a.M && kin;
            cp_async16(Xs + (st * BM + row) * LDS + c * 16, a.X + (ok ? (size_t)gm * a.ldx + k0 + c * 16 : 0), ok);
            int gn = n0 + row;
            ok = gn < a.N && kin;
            cp_async16(Ws + (st * BN + row) * LDS + c * 16, a.W + (ok ? (size_t)gn * a.ldw + k0 + c * 16 : 0), ok);
        }
        if (MODE != MODE_UPDATE && r > 0) {
            for (int q = tid; q < (BM / 2) * r * 4; q += NTHREADS) {
                int p = q / (rr * 4), j = (q >> 2) % rr, c = q & 3;
                const bool ok = 2 * ((m0 >> 1) + p) < a.M && k0 + c * 16 < kend;
                const int gp = ok ? prow[2 * p] : 0;
                const int8_t *src = a.noise + (ok ? (size_t)gp * a.pstride + a.aoff + a_span(r, a.N) + (size_t)j * a.K + k0 + c * 16 : 0);
                cp_async16(Bs + ((st * (BM / 2) + p) * rr + j) * BK + c * 16, src, ok);
            }
        }
    };

    /* rows are [time][member]: the pair of row m is (m/2) % wrap, one division per row here
     * instead of one per use in the loader and the epilogue */
    if (MODE != MODE_UPDATE && r > 0) {
        for (int i = tid; i < BM; i += NTHREADS) prow[i] = pair_of(a, m0 + i);
        __syncthreads();
    }

    int acc[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int c = 0; c < 4; c++) acc[i][j][c] = 0;
    int tpart[GPU_RMAX] = {0, 0, 0, 0};

#pragma unroll
    for (int st = 0; st < STAGES - 1; st++) {
        if (st < KT) load_stage(st, st);
        cp_commit();
    }
    for (int kt = 0; kt < KT; kt++) {
        cp_wait<(STAGES > 1 ? STAGES - 2 : 0)>();
        __syncthreads();
        {
            int nk = kt + STAGES - 1;
            if (nk < KT) load_stage(nk % STAGES, nk);
            cp_commit();
        }
        if (STAGES == 1) { /* the stage just loaded is the one computed on */
            cp_wait<0>();
            __syncthreads();
        }
        const int st = kt % STAGES;
        const int8_t *xs = Xs + st * BM * LDS, *ws = Ws + st * BN * LDS;
        warp_tile_k64(acc, xs, ws, wm, wn, lane);
        if (MODE != MODE_UPDATE && r > 0) {
            /* t partials: thread -> member tid/2, half (tid&1) of the 16 words */
            const int mi = tid >> 1, half = tid & 1;
            const int4 *xw = (const int4 *)(xs + mi * LDS + half * 32);
            const int8_t *bb = Bs + ((st * (BM / 2) + (mi >> 1)) * rr) * BK + half * 32;
            int4 x0 = xw[0], x1 = xw[1];
#pragma unroll
            for (int j = 0; j < GPU_RMAX; j++)
                if (j < r) {
                    const int4 *bw = (const int4 *)(bb + j * BK);
                    int4 b0 = bw[0], b1 = bw[1];
                    int t = tpart[j];
                    t = __dp4a(x0.x, b0.x, t); t = __dp4a(x0.y, b0.y, t); t = __dp4a(x0.z, b0.z, t); t = __dp4a(x0.w, b0.w, t);
                    t = __dp4a(x1.x, b1.x, t); t = __dp4a(x1.y, b1.y, t); t = __dp4a(x1.z, b1.z, t); t = __dp4a(x1.w, b1.w, t);
                    tpart[j] = t;
                }
        }
    }
    cp_wait<0>();
    __syncthreads();
    if (MODE != MODE_UPDATE && r > 0) {
        const int mi = tid >> 1;
#pragma unroll
        for (int j = 0; j < GPU_RMAX; j++) {
            int t = tpart[j] + __shfl_xor_sync(0xffffffffu, tpart[j], 1);
            if ((tid & 1) == 0 && j < r) ts[mi * GPU_RMAX + j] = (mi & 1) ? -t : t;
        }
    }
    /* epilogue: stage the int32 tile through shared memory (over the pipeline
     * buffers), then walk it with consecutive threads on consecutive outputs,
     * four at a time, so global reads and writes are coalesced and wide. */
    int *Cs = (int *)smem; /* [EPI_ROWS][LDC] */
    const bool small = r * a.K <= 2048;
    for (int p = 0; p < BM / EPI_ROWS; p++) { /* one pass unless shared memory is short (AMD) */
        const int r0 = p * EPI_ROWS, e0 = m0 + r0;
        const int *tse = ts + r0 * GPU_RMAX, *pre = prow + r0;
        if (p) __syncthreads(); /* the previous pass has read Cs */
        if (wm * (BM / 2) / EPI_ROWS == p) {
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    int row = wm * 64 + i * 16 + gid - r0, col = wn * 32 + j * 8 + tig * 2;
                    *(int2 *)&Cs[row * LDC + col] = make_int2(acc[i][j][0], acc[i][j][1]);
                    *(int2 *)&Cs[(row + 8) * LDC + col] = make_int2(acc[i][j][2], acc[i][j][3]);
                }
        }
        __syncthreads();
        if (MODE == MODE_UPDATE) {
            for (int idx = tid; idx < EPI_ROWS * BN; idx += NTHREADS) {
                const int ml = idx / BN, ol = idx % BN, m = e0 + ml, o = n0 + ol;
                if (m < a.M && o < a.N) {
                    int v = Cs[ml * LDC + ol];
                    if (v) atomicAdd(&a.Z[(size_t)m * a.N + o], v);
                }
            }
            continue;
        }
        if ((a.N & 3) == 0 && small) {
            switch (r) {
            case 0: epi_tile4<MODE, 0>(a, Cs, tse, pre, e0, n0, tid); break;
            case 1: epi_tile4<MODE, 1>(a, Cs, tse, pre, e0, n0, tid); break;
            case 2: epi_tile4<MODE, 2>(a, Cs, tse, pre, e0, n0, tid); break;
            case 3: epi_tile4<MODE, 3>(a, Cs, tse, pre, e0, n0, tid); break;
            default: epi_tile4<MODE, 4>(a, Cs, tse, pre, e0, n0, tid); break;
            }
        } else {
            for (int idx = tid; idx < EPI_ROWS * BN; idx += NTHREADS) {
                const int ml = idx / BN, ol = idx % BN, m = e0 + ml, o = n0 + ol;
                if (m >= a.M || o >= a.N) continue;
                int y = epi_one<MODE>(a, Cs[ml * LDC + ol], m, o, tse + ml * GPU_RMAX, r, small);
                const size_t yi = (size_t)m * a.ldy + o;
                if (MODE == MODE_BIAS_GATE) a.gout[yi] = (int8_t)egg_gru_gate(y, a.h[yi]);
                if (MODE == MODE_BIAS_MIX) {
                    const int hp = egg_gru_mix(a.f[yi], y, a.hs[yi]);
                    a.hs[yi] = (int8_t)(a.rz[m] ? 0 : hp);
                    y = egg_clip8(hp + a.xres[yi]);
                }
                a.Y[yi] = (int8_t)y;
            }
        }
    }
}

static size_t mm_smem_bytes(int r) { return (size_t)mm_ts_offset(r > 0 ? r : 1) + (size_t)BM * (GPU_RMAX + 1) * 4; }

#endif /* EGG_MM_CUH */

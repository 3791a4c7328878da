/* egg_recur.cuh — the minGRU recurrence of a chunk of timesteps in one launch on
 * sm_90a: rchunk_kernel and rreg_kernel (its outputs in registers, the default).
 * Part of the CUDA backend: included once by kernels/cuda/egg_cuda.cu (one translation unit). */
#ifndef EGG_RECUR_CUH
#define EGG_RECUR_CUH

#define RBM 64 /* members per row block */
/* The minGRU recurrence of one layer over a whole chunk of timesteps at H = 128
 * or 256 (sm_90a, rank <= 1): a CTA (H/64 warpgroups splitting N, 64 columns
 * each; one CTA per SM at H = 256, two at H = 128) keeps Uf and Uh (2 H^2 bytes)
 * resident in shared memory and walks row blocks of 64 members; a row block's
 * state h stays in shared memory from the chunk's first timestep to its last,
 * and each timestep runs
 *   f = clip(Uf.h + Wf.x + bf), g = gate(f, h)            (phase 0; f + 127, g in shared memory)
 *   c = clip(Uh.g + Wh.x + bh), h' = mix(f, c, h)          (phase 1)
 *   state = h' (0 where the next token is 0), R = clip(h' + x)
 * with each phase's accumulators staged as int8 in shared memory and finished
 * by a pass of 16 bytes per access (two int16 lanes per instruction: rec_gate4,
 * rec_mix4). Wf.x and Wh.x of the timestep load (cp.async) under the phase-0
 * MMAs; the last pass also applies the next EGG-LN. Same integer operations as MODE_BIAS_GATE and
 * MODE_BIAS_MIX of the GEMM kernels (the path other shapes and GPUs use). */
struct RecChunk {
    const int8_t *Uf, *Uh, *bf, *bh;
    const int8_t *noise; size_t pstride, off_uf, off_uh, off_bf, off_bh;
    const int8_t *TF, *TH, *X; /* [tc][n][H] */
    const uint8_t *rz;         /* [tc][n]; rz0: n zeros (after the last timestep) */
    const uint8_t *rz0;
    int8_t *Hs, *R;            /* state [n][H]; output [tc][n][H] */
    const int8_t *ln; size_t off_ln; int8_t *XN; /* H = 128: ln2, XN = LN(R) [tc][n][H] */
    const int8_t *bpf, *bph;   /* H = 256: the members' perturbed bf, bh [n][H] (NULL: from the noise) */
    const int8_t *bpl;         /* H = 256: the members' perturbed ln2 [n][H]: XN = LN(R) here too (NULL: a separate LN) */
    int n, tc, s, pshift;
    int l2pf;                  /* rreg_kernel: the next timestep's rows of TF, TH, X prefetched into L2 (EGG_CUDA_L2PF) */
};
template <int H> __host__ __device__ constexpr int rchunk_threads() { return 128 * (H / 64); }
/* a thread's two rows (w4 16 + gid, + 8) of the row block at m0: whether each is a member (ok) and its member index
 * (gc; 0 past the last, so its loads stay in bounds). PAIR: the two rows hold one pair, members m0 + w4 16 + 2 gid and
 * + 1 (row hr is the member of sign hr), so the thread loads the pair's noise once for both; else row r is member
 * m0 + r */
template <bool PAIR = false>
__device__ __forceinline__ void rec_rows(int m0, int n, int w4, int gid, int (&row)[2], bool (&ok)[2], int (&gc)[2]) {
#pragma unroll
    for (int hr = 0; hr < 2; hr++) {
        row[hr] = w4 * 16 + gid + hr * 8;
        const int mi = PAIR ? w4 * 16 + 2 * gid + hr : row[hr];
        ok[hr] = m0 + mi < n;
        gc[hr] = ok[hr] ? m0 + mi : 0;
    }
}
#ifdef MMP_WGMMA
/* a recurrence phase's MMA: d = Op . Ws^T for the warpgroup's 64 output rows of Ws (both [H/64 k-slices][rows][64],
 * swizzled); the descriptors are offsets from the first (the low word is the address / 16, below 2^14), whose
 * shared addresses come through asm volatile: hoisted out of the timestep loop, all 16 descriptors would hold 64
 * registers and spill */
template <int H>
__device__ __forceinline__ void rec_mma(int (&d)[32], const int8_t *Op, const int8_t *Ws, int wg) {
    unsigned ox, ow;
    asm volatile("mov.u32 %0, %1;" : "=r"(ox) : "r"((unsigned)__cvta_generic_to_shared(Op)));
    asm volatile("mov.u32 %0, %1;" : "=r"(ow) : "r"((unsigned)__cvta_generic_to_shared(Ws) + wg * 64 * 64));
    const uint64_t dx = wg_desc(ox), dw = wg_desc(ow);
    wg_fence();
#pragma unroll
    for (int kt = 0; kt < H / 64; kt++) {
        wg_mma_k64(d, dx + kt * (RBM * 64 / 16), dw + kt * (H * 64 / 16), kt > 0);
    }
    wg_commit();
}
/* a thread's m64n64 accumulators of row hr, its 16 columns in wperm_row order, through the rank-1 epilogue (epi_quad<R,
 * EP>: t the row's sign * x.B, Av its pair's A bytes) as int16-lane words: yl[w] = columns 4 w, 4 w + 1, yu[w] = 4 w + 2,
 * 4 w + 3 */
template <int R, int EP>
__device__ __forceinline__ void rec_epi(const int (&d)[32], int hr, int t, int4 Av, int s, int ps, unsigned (&yl)[4], unsigned (&yu)[4]) {
#pragma unroll
    for (int w = 0; w < 4; w++)
        epi_quad<R, EP>(d[8 * w + hr * 2], d[8 * w + hr * 2 + 1], d[8 * w + 4 + hr * 2], d[8 * w + 4 + hr * 2 + 1], (unsigned)(&Av.x)[w], t, s,
                        ps, yl[w], yu[w]);
}
/* rec_epi at rank R >= 2 (the generic epilogue, epi_quad_r, p in 32 bits: K = H <= 256; E8: s = ps = 8, epi_quad_r8 on
 * t_split(t), its lanes straight); Aj: the row's pair's A values of rank j at the thread's 16 columns */
template <int R, bool E8>
__device__ __forceinline__ void rec_epi_ra(const int (&d)[32], int hr, const int (&t)[R], const int4 (&Aj)[R], int s, int ps, unsigned (&yl)[4],
                                           unsigned (&yu)[4]) {
    const int4 ts = E8 ? t_split(make_int4(t[0], t[1], R > 2 ? t[R > 2 ? 2 : 0] : 0, R > 3 ? t[R > 3 ? 3 : 0] : 0)) : int4{};
#pragma unroll
    for (int w = 0; w < 4; w++) {
        unsigned aw[R];
#pragma unroll
        for (int j = 0; j < R; j++) aw[j] = (unsigned)(&Aj[j].x)[w];
        const int v0 = d[8 * w + 2 * hr], v1 = d[8 * w + 2 * hr + 1], u0 = d[8 * w + 4 + 2 * hr], u1 = d[8 * w + 4 + 2 * hr + 1];
        if constexpr (E8) {
            epi_quad_r8_lanes<R>(v0, v1, u0, u1, aw, ts, yl[w], yu[w]);
        } else {
            const unsigned y = epi_quad_r<R, false>(v0, v1, u0, u1, aw, t, s, ps);
            yl[w] = lo2(y);
            yu[w] = hi2(y);
        }
    }
}
/* rec_epi_ra with the A values loaded here: Ap, the row's pair's A values at the thread's 16 columns (A_j at Ap + j H) */
template <int H, int R, bool E8>
__device__ __forceinline__ void rec_epi_r(const int (&d)[32], int hr, const int (&t)[R], const int8_t *Ap, int s, int ps, unsigned (&yl)[4],
                                          unsigned (&yu)[4]) {
    int4 Aj[R];
#pragma unroll
    for (int j = 0; j < R; j++) Aj[j] = __ldg((const int4 *)(Ap + (size_t)j * H));
    rec_epi_ra<R, E8>(d, hr, t, Aj, s, ps, yl, yu);
}
#endif
/* H = 128 has room for its own X tile and the members' perturbed biases (bf, bh, ln2) */
template <int H> __host__ __device__ constexpr bool rchunk_sep() { return H == 128; }
template <int H> __host__ __device__ constexpr int rchunk_smem_bytes() {
    /* Wf, Wh: [H/64][H][64] swizzled; Xh, Gs, Fs: [H/64][64][64] swizzled; As: [2][32][H + 8]; TFs, THs
     * and at H = 128 XS, Pb [3]: [H/64][64][64] swizzled; ts; rzs */
    return 2 * H * H + 3 * RBM * H + RBM * (H + 8) + 2 * RBM * H + (rchunk_sep<H>() ? 4 * RBM * H : 0) + RBM * 4 + RBM;
}
template <int H, int R>
__global__ void __launch_bounds__(rchunk_threads<H>(), H == 128 ? 2 : 1) rchunk_kernel(RecChunk a) {
#ifdef MMP_WGMMA
    constexpr int KT = H / 64, NW = 64, NT = rchunk_threads<H>(), TPR = NT / RBM; /* threads per row */
    constexpr bool LN2 = H == 128, SEP = rchunk_sep<H>();
    constexpr int UQ = H == 128 ? 2 : 1; /* the pass's rows unrolled (at H = 256 that spills) */
    constexpr int AP = H + 8; /* As row pitch: the 4 pairs a warp's fragment rows read fall in different banks */
    extern __shared__ __align__(1024) unsigned char smem[];
    int8_t *Wfs = (int8_t *)smem, *Whs = Wfs + H * H, *Xh = Whs + H * H, *Gs = Xh + RBM * H, *Fs = Gs + RBM * H;
    int8_t *As = Fs + RBM * H, *TFs = As + RBM * H + 512, *THs = TFs + RBM * H;
    /* X of the timestep: its own tile at H = 128; at H = 256 it borrows TFs between the phase-0 pass and the next timestep */
    int8_t *XS = SEP ? THs + RBM * H : TFs, *Pb = THs + (SEP ? 2 : 1) * RBM * H;
    int *ts = (int *)(Pb + (SEP ? 3 * RBM * H : 0));
    uint8_t *rzs = (uint8_t *)(ts + RBM);
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, gid = lane >> 2, tig = lane & 3;
    const int wg = warp >> 2, w4 = warp & 3, n = a.n, s = a.s, ps = a.pshift;
    auto sw = [](int row, int col) { return (col >> 6) * (RBM * 64) + wg_off(row, (col >> 4) & 3) + (col & 15); };
    /* resident weights: k-slice kt of row o at kt * H * 64 + wg_off(o, chunk) */
    for (int ch = tid; ch < 2 * H * H / 16; ch += NT) {
        const int mat = ch / (H * H / 16), rem = ch % (H * H / 16), o = rem / (H / 16), col = (rem % (H / 16)) * 16;
        cp_async16((mat ? Whs : Wfs) + (col >> 6) * H * 64 + wg_off(o, (col >> 4) & 3), (mat ? a.Uh : a.Uf) + (size_t)o * H + col, true);
    }
    cp_commit();
    /* the passes' thread -> (row, 16 columns) map: 8 consecutive lanes cover 2 rows x 64 columns of one
     * k-slice, so the swizzled tiles are read without bank conflicts; a row's lanes differ in bits 0, 1, 3 (4) */
    const int nrb = (n + RBM - 1) / RBM, col = ((((lane >> 3) & (KT - 1)) << 2) | (lane & 3)) * 16;
    auto prow = [&](int q) { return ((tid + q * NT) >> 5) * (512 / H) + ((lane >> 2) & 1) + ((lane >> (KT == 2 ? 4 : 5)) << 1); };
    bytes16 bfv, bhv, lw;
    bfv.v = __ldg((const int4 *)(a.bf + col));
    bhv.v = __ldg((const int4 *)(a.bh + col));
    if (LN2) lw.v = __ldg((const int4 *)(a.ln + col));
    /* timestep t's rows of T ([tc][n][H]) into Ds ([64][H]) */
    auto load_t = [&](int8_t *Ds, const int8_t *T, int t, int m0) {
        const size_t tb = (size_t)t * n * H;
        for (int ch = tid; ch < RBM * H / 16; ch += NT) {
            const int row = ch / (H / 16), c = (ch % (H / 16)) * 16, gm = m0 + row;
            cp_async16(Ds + sw(row, c), gm < n ? T + tb + (size_t)gm * H + c : T, gm < n);
        }
    };
    /* t = -+ b.h of the row's pair (TPR threads per row, 2 chunks each: chunk lane & 3 of two k-slices, 8
     * consecutive lanes on 2 rows of one k-slice); rzn: also the row's reset flag into rzs */
    auto row_t = [&](const int8_t *Op, size_t off, int m0, const uint8_t *rzn) {
        const int pb = TPR == 8 ? (lane >> 3) & 1 : 0, row = warp * (32 / TPR) + ((lane >> 2) & 1) + ((lane >> (TPR == 8 ? 4 : 3)) << 1);
        const int gm = m0 + row;
        const bool lead = (lane & 3) == 0 && pb == 0;
        const int rz = rzn && lead && gm < n ? rzn[gm] : 0;
        int t = 0;
        if (R > 0 && gm < n) {
            const int8_t *B = a.noise + (size_t)(gm >> 1) * a.pstride + off + a_span(1, H);
#pragma unroll
            for (int i = 0; i < 2; i++) {
                const int k = (pb + i * (KT / 2)) * 64 + (lane & 3) * 16;
                const int4 xv = *(const int4 *)(Op + sw(row, k)), bv = __ldg((const int4 *)(B + k));
                t += dot16(xv, bv);
            }
        }
        t += __shfl_xor_sync(0xffffffffu, t, 1);
        t += __shfl_xor_sync(0xffffffffu, t, 2);
        if (TPR == 8) t += __shfl_xor_sync(0xffffffffu, t, 8);
        if (lead) ts[row] = (gm & 1) ? -t : t;
        if (rzn && lead) rzs[row] = (uint8_t)rz;
    };
    auto mma = [&](int (&d)[NW / 2], const int8_t *Op, const int8_t *Ws) { rec_mma<H>(d, Op, Ws, wg); };
    /* accumulators -> int8 MM results y at Ys (A rows of the pairs at Ap) */
    const int ep = s == 8 ? (ps == 8 ? 2 : ps > 8 ? 1 : 0) : 0; /* epi_pair8 (K = H = 256) */
    auto frag = [&](const int (&d)[NW / 2], int8_t *Ys, const int8_t *Ap) {
#pragma unroll
        for (int hr = 0; hr < 2; hr++) {
            const int row = w4 * 16 + gid + hr * 8;
            const int t = R > 0 ? ts[row] : 0;
            unsigned short Av[NW / 8]; /* loads first: they would wait behind the stores below */
#pragma unroll
            for (int jn = 0; jn < NW / 8; jn++) Av[jn] = R > 0 ? *(const unsigned short *)(Ap + (row >> 1) * AP + wg * NW + jn * 8 + tig * 2) : 0;
            /* sw(row, wg NW + 8 jn + 2 tig): the 16-byte chunk jn / 2 of the warpgroup's k-slice at chunk (jn / 2) ^ ((row >> 1) & 3) */
            int8_t *Yc[4];
#pragma unroll
            for (int c = 0; c < 4; c++) Yc[c] = Ys + wg * (RBM * 64) + row * 64 + ((c ^ ((row >> 1) & 3)) << 4) + tig * 2;
            auto put = [&](auto epi) {
#pragma unroll
                for (int jn = 0; jn < NW / 8; jn++) *(unsigned short *)(Yc[jn >> 1] + (jn & 1) * 8) = epi(d[jn * 4 + hr * 2], d[jn * 4 + hr * 2 + 1], Av[jn]);
            };
            if (R > 0 && H == 256 && ep == 2) put([&](int v0, int v1, unsigned A) { return epi_pair8<true>(v0, v1, A, t, ps); });
            else if (R > 0 && H == 256 && ep == 1) put([&](int v0, int v1, unsigned A) { return epi_pair8<false>(v0, v1, A, t, ps); });
            else put([&](int v0, int v1, unsigned A) { return epi_pair<R>(v0, v1, (unsigned short)A, t, s, ps); });
        }
    };
    int d[NW / 2];
    for (int rb = blockIdx.x; rb < nrb; rb += gridDim.x) {
        const int m0 = rb * RBM;
        __syncthreads(); /* the previous row block is done with every tile */
        for (int ch = tid; ch < RBM * H / 16; ch += NT) {
            const int row = ch / (H / 16), c = (ch % (H / 16)) * 16, gm = m0 + row;
            cp_async16(Xh + sw(row, c), gm < n ? a.Hs + (size_t)gm * H + c : a.Hs, gm < n);
            if (R > 0) {
                const int ph = row >> 5, p = row & 31, gp = m0 + 2 * p;
                const int8_t *src = a.noise + (gp < n ? (size_t)(gp >> 1) * a.pstride + (ph ? a.off_uh : a.off_uf) + c : 0);
                cp_async8(As + (ph * 32 + p) * AP + c, src, gp < n);
                cp_async8(As + (ph * 32 + p) * AP + c + 8, src + 8, gp < n);
            }
            if (SEP && R > 0) { /* the row's perturbed biases, once per row block */
                bytes16 pv[3];
                const int8_t *blob = a.noise + (gm < n ? (size_t)(gm >> 1) * a.pstride : 0);
                const int sg = (gm & 1) ? -1 : 1;
#pragma unroll
                for (int k = 0; k < 3; k++) {
                    const size_t off = k == 0 ? a.off_bf : k == 1 ? a.off_bh : a.off_ln;
                    const int8_t *w = k == 0 ? a.bf : k == 1 ? a.bh : a.ln;
                    bytes16 n1, n2, wv;
                    wv.v = __ldg((const int4 *)(w + c));
                    n1.v = __ldg((const int4 *)(blob + off + c));
                    n2.v = __ldg((const int4 *)(blob + off + H + c));
#pragma unroll
                    for (int b = 0; b < 16; b++) pv[k].b[b] = (signed char)egg_vec_pert(wv.b[b], n1.b[b], n2.b[b], sg, ps);
                    *(int4 *)(Pb + k * RBM * H + sw(row, c)) = pv[k].v;
                }
            }
        }
        load_t(TFs, a.TF, 0, m0);
        load_t(THs, a.TH, 0, m0);
        if (SEP) load_t(XS, a.X, 0, m0);
        cp_commit();
        cp_wait<0>();
        fence_proxy_async(); /* Xh, read next by the tensor cores */
        __syncthreads();
        for (int t = 0; t < a.tc; t++) {
            const size_t tb = (size_t)t * n * H;
            const uint8_t *rzn = t + 1 < a.tc ? a.rz + (size_t)(t + 1) * n : a.rz0;
#pragma unroll
            for (int ph = 0; ph < 2; ph++) {
                mma(d, ph ? Gs : Xh, ph ? Whs : Wfs);
                row_t(ph ? Gs : Xh, ph ? a.off_uh : a.off_uf, m0, ph ? rzn : NULL);
                wg_wait<0>();
                __syncthreads(); /* ts complete; phase 1: both warpgroups done reading g */
                frag(d, ph ? Gs : Fs, As + ph * 32 * AP);
                /* this phase's tiles: loaded one phase (H = 256: X) or one timestep earlier */
                if (SEP) cp_wait<1>();
                else cp_wait<0>();
                __syncthreads();
                const size_t voff = ph ? a.off_bh : a.off_bf;
#pragma unroll UQ
                for (int q = 0; q < RBM * H / 16 / NT; q++) { /* no early exit: the LN reduces over a row's lanes */
                    const int row = prow(q), gm = m0 + row;
                    const bool ok = gm < n;
                    const size_t gi = tb + (size_t)(ok ? gm : 0) * H + col;
                    const int8_t *blob = a.noise + (R > 0 && ok ? (size_t)(gm >> 1) * a.pstride : 0);
                    bytes16 y, e, n1, n2, h, f, xr, o1, o2, pb;
                    y.v = *(const int4 *)((ph ? Gs : Fs) + sw(row, col));
                    h.v = *(const int4 *)(Xh + sw(row, col));
                    e.v = *(const int4 *)((ph ? THs : TFs) + sw(row, col));
                    if (R > 0 && SEP) pb.v = *(const int4 *)(Pb + ph * RBM * H + sw(row, col));
                    else if (R > 0 && a.bpf) pb.v = __ldg((const int4 *)((ph ? a.bph : a.bpf) + (size_t)(ok ? gm : 0) * H + col));
                    else if (R > 0) {
                        n1.v = __ldg((const int4 *)(blob + voff + col));
                        n2.v = __ldg((const int4 *)(blob + voff + H + col));
                    }
                    bytes16 wlg; /* H = 256, fused LN2: the member's perturbed ln2 */
                    if (ph) {
                        f.v = *(const int4 *)(Fs + sw(row, col));
                        xr.v = *(const int4 *)(XS + sw(row, col));
                        if (!SEP && R > 0 && a.bpl) wlg.v = __ldg((const int4 *)(a.bpl + (size_t)(ok ? gm : 0) * H + col));
                    }
                    /* the timestep's bias bytes: perturbed per member (rank 1: from shared memory, the step's
                     * perturbed vectors, or the noise), else the layer's */
                    if (R > 0 && !SEP && !a.bpf) {
                        const int sg = (gm & 1) ? -1 : 1;
#pragma unroll
                        for (int b = 0; b < 16; b++) pb.b[b] = (signed char)egg_vec_pert(ph ? bhv.b[b] : bfv.b[b], n1.b[b], n2.b[b], sg, ps);
                    } else if (R == 0) pb.v = ph ? bhv.v : bfv.v;
                    const bool reset = ph && rzs[row];
                    /* four bytes per step, two int16 lanes per instruction (rec_gate4, rec_mix4); f is kept as
                     * f + 127 in Fs */
#pragma unroll
                    for (int w = 0; w < 4; w++) {
                        const unsigned yw = (unsigned)(&y.v.x)[w], ew = (unsigned)(&e.v.x)[w], bw = (unsigned)(&pb.v.x)[w];
                        const unsigned hw = (unsigned)(&h.v.x)[w];
                        if (ph == 0) {
                            unsigned pw;
                            (&o2.v.x)[w] = (int)rec_gate4(lo2(yw), hi2(yw), ew, bw, hw, pw);
                            (&o1.v.x)[w] = (int)pw;
                        } else {
                            unsigned hl, hu, rw;
                            rec_mix4(lo2(yw), hi2(yw), ew, bw, (unsigned)(&f.v.x)[w], hw, (unsigned)(&xr.v.x)[w], hl, hu, rw);
                            (&o1.v.x)[w] = reset ? 0 : (int)pack4(hl, hu);
                            (&o2.v.x)[w] = (int)rw;
                        }
                    }
                    if (ph == 0) {
                        *(int4 *)(Fs + sw(row, col)) = o1.v;
                        *(int4 *)(Gs + sw(row, col)) = o2.v;
                    } else {
                        *(int4 *)(Xh + sw(row, col)) = o1.v;
                        if (ok) *(int4 *)(a.R + gi) = o2.v;
                        if (LN2 || (R > 0 && a.bpl)) { /* EGG-LN of the row R: sum |R| over the row's H/16 lanes, then 16 outputs */
                            int sa = 0;
#pragma unroll
                            for (int w = 0; w < 4; w++) {
                                w4u u;
                                u.w = (&o2.v.x)[w];
                                sa += abs_sum4(u);
                            }
                            sa += __shfl_xor_sync(0xffffffffu, sa, 1); /* the row's 8 (H = 128) or 16 lanes */
                            sa += __shfl_xor_sync(0xffffffffu, sa, 2);
                            sa += __shfl_xor_sync(0xffffffffu, sa, 8);
                            if (H == 256) sa += __shfl_xor_sync(0xffffffffu, sa, 16);
                            const int mq = LNM(egg_ln_div(sa, H)); /* d <= 127: |R| <= 127 */
                            bytes16 wl, xo;
                            wl.v = R > 0 ? (SEP ? *(const int4 *)(Pb + 2 * RBM * H + sw(row, col)) : wlg.v) : lw.v;
#pragma unroll
                            for (int w = 0; w < 4; w++) (&xo.v.x)[w] = (int)ln_word((unsigned)(&o2.v.x)[w], (unsigned)(&wl.v.x)[w], mq);
                            if (ok) *(int4 *)(a.XN + gi) = xo.v;
                        }
                    }
                }
                fence_proxy_async(); /* g (phase 0) and the state h (phase 1) next read by the tensor cores */
                __syncthreads();
                /* prefetch into the tiles this pass has finished with */
                if (ph == 0) {
                    if (SEP) { if (t + 1 < a.tc) load_t(TFs, a.TF, t + 1, m0); }
                    else load_t(XS, a.X, t, m0);
                } else if (t + 1 < a.tc) {
                    load_t(THs, a.TH, t + 1, m0);
                    load_t(SEP ? XS : TFs, SEP ? a.X : a.TF, t + 1, m0);
                }
                cp_commit();
            }
        }
        cp_wait<0>();
        for (int ch = tid; ch < RBM * H / 16; ch += NT) { /* the state after the chunk */
            const int row = ch / (H / 16), c = (ch % (H / 16)) * 16, gm = m0 + row;
            if (gm < n) *(int4 *)(a.Hs + (size_t)gm * H + c) = *(const int4 *)(Xh + sw(row, c));
        }
    }
    cp_wait<0>();
#else
    (void)a; /* not launched: the host checks wgmma_probe first */
#endif
}
/* The chunk recurrence at H = 128 and 256 with every thread's outputs in registers (sm_90a, rank <= 1, and rank 2-4
 * with the generic epilogue rec_epi_r, the A values from global memory and As holding the x.B_j partials;
 * EGG_CUDA_RREG=0: rchunk_kernel at rank <= 1, two GEMMs per timestep at 2-4). Same CTA shape as rchunk_kernel<H> (H / 64 warpgroups of 64 output columns, Uf
 * and Uh resident, row blocks of 64 members; two CTAs per SM at H = 128), but the rows of Uf and Uh sit in shared
 * memory permuted (wperm_row) so that a thread's wgmma accumulators, columns
 * 8 jn + 2 tig (+1) of its warpgroup's 64, are the 16 adjacent columns 16 tig .. 16 tig + 15 of the output: the
 * epilogue and the element-wise pass run on the fragments themselves, with no staging tile and no pass over it.
 * A thread owns rows w4 16 + gid (+8) and those 16 columns for the whole chunk: it alone writes and reads them in
 * the state h (Xh, also the MMA operand), f + 127 (Fs) and R (Rs), and loads its rows' Wf.x, Wh.x, x, biases and
 * noise from global memory under the MMAs; each timestep is
 *   phase 0: MMA Uf.h; epilogue; f = clip(.. + Wf.x + bf), g = gate(f, h) into Gs; partial g.B(Uh)   | barrier
 *   phase 1: MMA Uh.g; epilogue; h' = mix(f, c, h) into Xh, R = clip(h' + x); partial h'.B(Uf), |R|  | barrier
 * The rank-1 terms x.B sum the warpgroups' partials from shared memory after the barrier; the fused EGG-LN of R
 * (ln2) finishes one phase later, under the next timestep's phase-0 MMA (after the chunk: at its end). */
/* As row pitch H + 64: the 4 pairs a warp's rows read cover the banks twice */
template <int H> __host__ __device__ constexpr int rreg_smem_bytes() { return 2 * H * H + 4 * RBM * H + 2 * 32 * (H + 64) + 3 * RBM * 16; }
template <int H, int R, int EP, bool LN2 = true> /* EP: the epilogue, as rchunk_kernel's ep (R = 0: 0); LN2: EGG-LN2 here
                                                  * (false: rank 2-4 only, the LN then in lnxb_kernel with up's T rows) */
__global__ void __launch_bounds__(rchunk_threads<H>(), H == 128 ? 2 : 1) rreg_kernel(RecChunk a) {
#ifdef MMP_WGMMA
    constexpr int NT = rchunk_threads<H>(), NW = 64, RRA = H + 64;
    extern __shared__ __align__(1024) unsigned char smem[];
    int8_t *Wfs = (int8_t *)smem, *Whs = Wfs + H * H, *Xh = Whs + H * H, *Gs = Xh + RBM * H, *Rs = Gs + RBM * H;
    int8_t *Fs = Rs + RBM * H, *As = Fs + RBM * H;   /* Fs: f + 127; As [2][32][RRA]: the pairs' A rows of Uf, Uh */
    /* R >= 2: the A values come from global memory (rec_epi_r) and As holds the x.B partials instead */
    constexpr int RK = R > 1 ? R : 1;
    constexpr bool PRE = R == 1 && H == 256; /* a phase's B noise loaded under its MMA (bn), at rank 1 and H = 256 */
    /* PB (rank 3-4 at EP = 2): a thread's two rows are one pair (rec_rows<true>), whose A and B noise it loads once for
     * both: the A values under the MMA, the x.B_j partials after both rows. Rank 4 at hidden 256 spilled 80 bytes
     * without it and none with it; at rank 2 the recurrence measured 1% slower with it, and at the other epilogues
     * and rank 1 ptxas spilled more */
    constexpr bool PB = R > 2 && EP == 2;
    /* EBP: a phase's e + b (eb_lanes) added while its MMA runs, pinned before the wait, and the gate and mix from them
     * (rec_gate4s, rec_mix4s): at rank <= 1 at H = 256 (the recurrence 585 -> 554 us a launch on an H200, and no spills
     * where ptxas had spilled 8 bytes); at rank 4 there it measured 642 -> 652 us, at H = 128 rank 1 630 -> 646 */
    constexpr bool EBP = H == 256 && R <= 1;
    int4 *lns = (int4 *)(As + 2 * 32 * RRA) + 2 * RBM;                      /* [RBM]: a row's sum |R| partials */
    int4 *tsx = R > 1 ? (int4 *)As : (int4 *)(As + 2 * 32 * RRA);          /* [2][RK][RBM]: a row's x.B_j partials of the H / 64
                                                                            * warpgroups (h, g) */
    static_assert(R <= 1 || 2 * R * RBM * 16 <= 2 * 32 * RRA, "the partials fit As");
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, gid = lane >> 2, tig = lane & 3;
    const int wg = warp >> 2, w4 = warp & 3, n = a.n, ps = a.pshift, s = a.s;
    const int c0 = wg * 64 + tig * 16; /* the thread's 16 columns */
    /* L2 priorities: a row block's per-member rows (perturbed biases, LN2 weights, the pairs' B noise), read again every
     * timestep, stay; the timestep's Wf.x, Wh.x, x rows and its outputs stream through once */
    const uint64_t keep = l2_policy(L2_LAST), once = l2_policy(L2_FIRST);
    /* resident weights: shared row o holds output column wperm_row(o) (in the warpgroup's 64: 16 ((o >> 1) & 3) +
     * 2 ((o >> 3) & 7) + (o & 1)) */
    for (int ch = tid; ch < 2 * H * H / 16; ch += NT) {
        const int mat = ch / (H * H / 16), rem = ch % (H * H / 16), o = rem / (H / 16), col = (rem % (H / 16)) * 16;
        cp_async16((mat ? Whs : Wfs) + (col >> 6) * H * 64 + wg_off(o, (col >> 4) & 3), (mat ? a.Uh : a.Uf) + (size_t)wperm_row(o) * H + col, true);
    }
    cp_commit();
    if (H == 128) /* the first row block's t = 0 LN2 (not stored) reads them */
        for (int i = tid; i < RBM; i += NT) lns[i] = make_int4(0, 0, 0, 0);
    auto sw = [](int row, int col) { return (col >> 6) * (RBM * 64) + wg_off(row, (col >> 4) & 3) + (col & 15); };
    auto mma = [&](int (&d)[NW / 2], const int8_t *Op, const int8_t *Ws) { rec_mma<H>(d, Op, Ws, wg); };
    /* the row's partial over this thread's 16 columns, summed over the 4 lanes of the row, into slot wg of P[row] */
    auto partial = [&](int4 *P, int row, int v) {
        v += __shfl_xor_sync(0xffffffffu, v, 1);
        v += __shfl_xor_sync(0xffffffffu, v, 2);
        if (tig == 0) ((int *)(P + row))[wg] = v;
    };
    auto sum4 = [](int4 v) { return H == 256 ? v.x + v.y + v.z + v.w : v.x + v.y; }; /* the warpgroups' slots */
    auto epi = [&](const int (&d)[NW / 2], int hr, int t, int4 Av, unsigned (&yl)[4], unsigned (&yu)[4]) { rec_epi<R, EP>(d, hr, t, Av, s, ps, yl, yu); };
    /* EGG-LN2 here: always at H = 128 (as rchunk_kernel), at 256 with noise (the host launches it there only with the
     * members' LN2 weights, a.bpl): a constant, as a flag read at run time left a branch around each of its row sums in
     * the phase-1 epilogue. LN2 = false (rank 2-4 where the fused MLP runs): none; lnxb_kernel then applies it and
     * writes up's T rows (at rank 4 the LN here took the recurrence from ~720 to ~1000 us a launch at hidden 256) */
    static_assert(LN2 || R > 1, "rank 2-4 only");
    constexpr bool lnf = LN2 && (H == 128 || R > 0);
    const size_t nH = (size_t)n * H;
    int d[NW / 2];
    /* `-warn-spills`: 8 bytes in each <256, 1, *> since the LN2 flag is a constant (the recurrence ran 2.8% faster);
     * before, 4 in <256, 1, 2>: nrb, one load a row block (bounding the loop by rb * RBM < n instead made it spill more
     * elsewhere) */
    for (int rb = blockIdx.x, nrb = (n + RBM - 1) / RBM; rb < nrb; rb += gridDim.x) {
        const int m0 = rb * RBM;
        int row[2], gc[2];
        bool ok[2];
        rec_rows<PB>(m0, n, w4, gid, row, ok, gc);
        /* row hr's member's sign (PB: hr) and its pair's noise at the thread's 16 columns */
        auto sgn = [&](int hr) { return PB ? hr : row[hr] & 1; };
        auto pnoise = [&](int hr) { return a.noise + (size_t)(gc[PB ? 0 : hr] >> 1) * a.pstride + c0; };
        /* the row's B noise of Uf / Uh (its 16 columns), the row's (perturbed) bias of phase ph: loaded when used, as
         * registers do not hold them across the chunk */
        auto bload = [&](int hr, size_t off, int j = 0) { return ldg_hint(pnoise(hr) + off + a_span(RK, H) + (size_t)j * H, keep); };
        /* PB: the pair's A values of phase ph, for both rows' epilogues */
        auto aload_r = [&](int ph, int4 (&Aj)[RK]) {
#pragma unroll
            for (int j = 0; j < RK; j++) Aj[j] = __ldg((const int4 *)(pnoise(0) + (ph ? a.off_uh : a.off_uf) + (size_t)j * H));
        };
        /* R >= 2: the epilogue of phase ph, t_j the row's x.B_j from the phase's slots with the row's sign; Aj from
         * aload_r (PB), else loaded here */
        auto epi_r = [&](int ph, int hr, const int4 (&Aj)[RK], unsigned (&yl)[4], unsigned (&yu)[4]) {
            int t[RK];
#pragma unroll
            for (int j = 0; j < RK; j++) {
                const int v = sum4(tsx[(ph * RK + j) * RBM + row[hr]]);
                t[j] = sgn(hr) ? -v : v;
            }
            if constexpr (PB) rec_epi_ra<RK, true>(d, hr, t, Aj, s, ps, yl, yu);
            else rec_epi_r<H, RK, false>(d, hr, t, pnoise(hr) + (ph ? a.off_uh : a.off_uf), s, ps, yl, yu);
        };
        /* x . B_j partials of row hr's 16 bytes v into phase ph's slots (R > 0); pre: B_0 is b0, loaded under the MMA
         * (rank 1 at H = 256) */
        auto partials1 = [&](int ph, int hr, int4 v, size_t off, bool pre = false, int4 b0 = int4{}) {
#pragma unroll
            for (int j = 0; j < RK; j++) partial(tsx + (ph * RK + j) * RBM, row[hr], dot16(v, j == 0 && pre ? b0 : bload(hr, off, j)));
        };
        /* the same for both rows, each B row loaded once for the two (PB; elsewhere each row's partials go out in the
         * row's loop, as holding the first row's bytes through the second's epilogue spilled) */
        auto partials = [&](int ph, const int4 (&v)[2], size_t off) {
#pragma unroll
            for (int j = 0; j < RK; j++) {
                const int4 b = bload(0, off, j);
#pragma unroll
                for (int hr = 0; hr < 2; hr++) partial(tsx + (ph * RK + j) * RBM, row[hr], dot16(v[hr], b));
            }
        };
        auto pload = [&](int hr, int ph) {
            return R > 0 ? ldg_hint((ph ? a.bph : a.bpf) + (size_t)gc[hr] * H + c0, keep) : __ldg((const int4 *)((ph ? a.bh : a.bf) + c0));
        };
        /* the A noise of the row's pair and 16 columns for phase ph (EP = 2: loaded under the MMA; the other epilogues
         * have fewer registers to spare) */
        auto aload = [&](int ph, int hr) {
            return R > 0 ? *(const int4 *)(As + (ph * 32 + (row[hr] >> 1)) * RRA + c0) : make_int4(0, 0, 0, 0);
        };
        /* XN = EGG-LN(R) of the rows' timestep at XN + tb0 (R in Rs, the row sums in lns) */
        constexpr bool WLP = H == 256;
        auto ln_out = [&](size_t tb0, const int4 *wls, bool st) { /* wls: the rows' LN weights (WLP), else loaded here; st: store */
#pragma unroll
            for (int hr = 0; hr < 2; hr++) {
                const size_t gi = (size_t)gc[hr] * H + c0;
                int4 wl;
                if constexpr (WLP) wl = wls[hr];
                else wl = R > 0 ? ldg_hint(a.bpl + gi, keep) : __ldg((const int4 *)(a.ln + c0));
                const int4 rv = *(const int4 *)(Rs + sw(row[hr], c0));
                const int mq = LNM(egg_ln_div(sum4(lns[row[hr]]), H));
                int4 xo;
#pragma unroll
                for (int w = 0; w < 4; w++) (&xo.x)[w] = (int)ln_word((unsigned)(&rv.x)[w], (unsigned)(&wl.x)[w], mq);
                if (ok[hr] && st) stg_hint(a.XN + tb0 + gi, xo, once);
            }
        };
        if (R == 1) /* the pairs' A rows (the previous row block read them before its last barrier) */
            for (int ch = tid; ch < 2 * 32 * H / 16; ch += NT) {
                const int ph = ch / (32 * H / 16), p = (ch / (H / 16)) % 32, c = (ch % (H / 16)) * 16, gp = m0 + 2 * p;
                cp_async16(As + (ph * 32 + p) * RRA + c,
                           gp < n ? a.noise + (size_t)(gp >> 1) * a.pstride + (ph ? a.off_uh : a.off_uf) + c : a.noise, gp < n);
            }
        cp_commit();
        /* timestep t's rows of Wf.x, Wh.x and x (and the reset flags of t + 1) into L2 one timestep ahead: loaded at
         * their use, under a phase's MMA (~1000 cycles), a DRAM latency was longer. Brought as evict_last and read as
         * evict_first, they stay until read (prefetched at normal priority the other parts' streams evicted some first;
         * two timesteps ahead pushed the per-member rows out) */
        const unsigned pfb = (unsigned)(min(RBM, n - m0) * H);
        auto l2pf = [&](int t) {
            if (t < a.tc && tid < 3) l2_prefetch_bulk_hint((tid == 0 ? a.TF : tid == 1 ? a.TH : a.X) + (size_t)t * nH + (size_t)m0 * H, pfb, keep);
            if (t + 1 < a.tc && tid == 3) asm volatile("prefetch.global.L2 [%0];" ::"l"(a.rz + (size_t)(t + 1) * n + m0));
        };
        if (a.l2pf) l2pf(0);
        {
            int4 hv[2];
#pragma unroll
            for (int hr = 0; hr < 2; hr++) {
                const size_t gi = (size_t)gc[hr] * H + c0;
                hv[hr] = ok[hr] ? __ldg((const int4 *)(a.Hs + gi)) : make_int4(0, 0, 0, 0);
                *(int4 *)(Xh + sw(row[hr], c0)) = hv[hr];
            }
            if (PB) partials(0, hv, a.off_uf);
            else if (R > 0)
#pragma unroll
                for (int hr = 0; hr < 2; hr++) partials1(0, hr, hv[hr], a.off_uf);
        }
        cp_wait<0>();
        fence_proxy_async(); /* Xh, read next by the tensor cores */
        __syncthreads();
        int4 wln[2]; /* WLP: the rows' EGG-LN2 weights for the next ln_out, loaded at the end of phase 1 (at their use in
                      * ln_out a DRAM latency a timestep; loaded before the phase-0 MMA the kernel ran 6% slower) */
        for (int t = 0; t < a.tc; t++) {
            const size_t tb = (size_t)t * nH;
            const uint8_t *rzn = t + 1 < a.tc ? a.rz + (size_t)(t + 1) * n : a.rz0;
            /* ---- phase 0 */
            int4 ef[2], pf[2], eh[2], xv[2], ph[2], bn[2], ov[2];
            int rz[2];
            mma(d, Xh, Wfs);
            if (a.l2pf) l2pf(t + 1);
#pragma unroll
            for (int hr = 0; hr < 2; hr++) {
                ef[hr] = ldg_hint(a.TF + tb + (size_t)gc[hr] * H + c0, once);
                pf[hr] = pload(hr, 0);
                if (PRE) bn[hr] = bload(hr, a.off_uh); /* the phase's B noise under the MMA (at its use an L2
                                                        * latency a phase; at H = 128 its registers spill) */
            }
            /* EGG-LN of the previous timestep's R; at H = 128 at t = 0 too, not stored (Rs and lns hold the row block
             * before's last, or lns its zeros), so no branch in the phase: recurrence −2.5–3.6% there; at 256 the same
             * measured 1% slower */
            if (lnf && (H == 128 || t > 0)) ln_out(t > 0 ? tb - nH : 0, wln, t > 0);
            int tt[2];
            int4 Av[2], Aj[RK];
            /* phase ph's rank-1 terms: the rows' sign * (x . B) from the warpgroups' partials, A under the MMA (EP = 2);
             * PB: the pair's A values for both rows, under the MMA too */
            auto terms = [&](int phase) {
#pragma unroll
                for (int hr = 0; hr < 2; hr++) {
                    const int t = R == 1 ? sum4(tsx[phase * RBM + row[hr]]) : 0;
                    tt[hr] = sgn(hr) ? -t : t;
                    if (EP == 2 && R == 1) Av[hr] = aload(phase, hr);
                }
                if (PB) aload_r(phase, Aj);
            };
            /* phase ph's epilogue of the row's accumulators: rank 1 with t and A from terms, rank 2-4 in epi_r */
            auto epi_ph = [&](int ph, int hr, unsigned (&yl)[4], unsigned (&yu)[4]) {
                if constexpr (R > 1) epi_r(ph, hr, Aj, yl, yu);
                else epi(d, hr, tt[hr], EP == 2 ? Av[hr] : aload(ph, hr), yl, yu);
            };
            eb2 es[2][4]; /* EBP: Wf.x + bf + 127 of the rows' words as int16 lanes, under the MMA (ef's and pf's registers) */
            if constexpr (EBP)
#pragma unroll
                for (int hr = 0; hr < 2; hr++)
#pragma unroll
                    for (int w = 0; w < 4; w++) es[hr][w] = eb_lanes<127, true>((unsigned)(&ef[hr].x)[w], (unsigned)(&pf[hr].x)[w]);
            terms(0);
            wg_wait<0>();
#pragma unroll
            for (int hr = 0; hr < 2; hr++) {
                unsigned yl[4], yu[4];
                epi_ph(0, hr, yl, yu);
                int4 gv, pv;
                const int4 hv = *(const int4 *)(Xh + sw(row[hr], c0));
#pragma unroll
                for (int w = 0; w < 4; w++) {
                    unsigned p; /* f + 127 */
                    (&gv.x)[w] = EBP ? (int)rec_gate4s(yl[w], yu[w], es[hr][w], (unsigned)(&hv.x)[w], p)
                                     : (int)rec_gate4(yl[w], yu[w], (unsigned)(&ef[hr].x)[w], (unsigned)(&pf[hr].x)[w], (unsigned)(&hv.x)[w], p);
                    (&pv.x)[w] = (int)p;
                }
                *(int4 *)(Gs + sw(row[hr], c0)) = gv;
                *(int4 *)(Fs + sw(row[hr], c0)) = pv;
                if (!PB && R > 0) partials1(1, hr, gv, a.off_uh, PRE, PRE ? bn[hr] : int4{});
                ov[hr] = gv;
            }
            if (PB) partials(1, ov, a.off_uh);
            fence_proxy_async(); /* g, read next by the tensor cores */
            __syncthreads();
            /* ---- phase 1 */
            mma(d, Gs, Whs);
#pragma unroll
            for (int hr = 0; hr < 2; hr++) {
                const size_t gi = tb + (size_t)gc[hr] * H + c0;
                eh[hr] = ldg_hint(a.TH + gi, once);
                xv[hr] = ldg_hint(a.X + gi, once);
                rz[hr] = rzn[gc[hr]];
                ph[hr] = pload(hr, 1);
                if (PRE) bn[hr] = bload(hr, a.off_uf);
            }
            eb2 ms[2][4]; /* EBP: Wh.x + bh, under the MMA */
            if constexpr (EBP)
#pragma unroll
                for (int hr = 0; hr < 2; hr++)
#pragma unroll
                    for (int w = 0; w < 4; w++) ms[hr][w] = eb_lanes<0, true>((unsigned)(&eh[hr].x)[w], (unsigned)(&ph[hr].x)[w]);
            terms(1);
            wg_wait<0>();
#pragma unroll
            for (int hr = 0; hr < 2; hr++) {
                unsigned yl[4], yu[4];
                epi_ph(1, hr, yl, yu);
                int4 ho, ro;
                const int4 hv = *(const int4 *)(Xh + sw(row[hr], c0)), pv = *(const int4 *)(Fs + sw(row[hr], c0));
                int sa = 0;
#pragma unroll
                for (int w = 0; w < 4; w++) {
                    unsigned hl, hu, r;
                    if constexpr (EBP)
                        rec_mix4s(yl[w], yu[w], ms[hr][w], (unsigned)(&pv.x)[w], (unsigned)(&hv.x)[w], (unsigned)(&xv[hr].x)[w], hl, hu, r);
                    else
                        rec_mix4(yl[w], yu[w], (unsigned)(&eh[hr].x)[w], (unsigned)(&ph[hr].x)[w], (unsigned)(&pv.x)[w], (unsigned)(&hv.x)[w],
                                 (unsigned)(&xv[hr].x)[w], hl, hu, r);
                    (&ho.x)[w] = rz[hr] ? 0 : (int)pack4(hl, hu);
                    (&ro.x)[w] = (int)r;
                    if (lnf) {
                        w4u q;
                        q.w = (int)r;
                        sa += abs_sum4(q);
                    }
                }
                *(int4 *)(Xh + sw(row[hr], c0)) = ho;
                if (ok[hr]) stg_hint(a.R + tb + (size_t)gc[hr] * H + c0, ro, once);
                if (lnf) {
                    *(int4 *)(Rs + sw(row[hr], c0)) = ro;
                    partial(lns, row[hr], sa);
                }
                if (!PB && R > 0) partials1(0, hr, ho, a.off_uf, PRE, PRE ? bn[hr] : int4{});
                ov[hr] = ho;
            }
            if (PB) partials(0, ov, a.off_uf);
            if (WLP && lnf)
#pragma unroll
                for (int hr = 0; hr < 2; hr++) wln[hr] = R > 0 ? ldg_hint(a.bpl + (size_t)gc[hr] * H + c0, keep) : __ldg((const int4 *)(a.ln + c0));
            fence_proxy_async(); /* the state h, read next by the tensor cores */
            __syncthreads();
        }
        if (lnf && a.tc > 0) ln_out((size_t)(a.tc - 1) * nH, wln, true); /* EGG-LN of the chunk's last R */
#pragma unroll
        for (int hr = 0; hr < 2; hr++) /* the state after the chunk */
            if (ok[hr]) *(int4 *)(a.Hs + (size_t)gc[hr] * H + c0) = *(const int4 *)(Xh + sw(row[hr], c0));
    }
#else
    (void)a; /* not launched: the host checks wgmma_probe first */
#endif
}

/* The chunk recurrence at H = 384 and 512 (sm_90a, rank 0-4), and 640 (h and g in one buffer, rclus_shg), over a
 * cluster of H / 128 CTAs, where Uf and Uh
 * (2 H^2 bytes: 512 KB at 512) do not fit one SM: each CTA keeps the rows of Uf and Uh of its 128 output columns
 * (128 KB at 512; permuted as rreg_kernel's, wperm_row) and the whole state h and gate g of the cluster's row block
 * of 64 members (the MMAs' operands); its two warpgroups take 64 columns each, a thread rows w4 16 + gid (+8) and 16
 * adjacent columns, as rreg_kernel. After each phase a CTA's threads write their bytes of g (phase 0) or h' (phase 1)
 * into their own and, by st.async with complete_tx, every partner's shared memory, with the rows' partial sums
 * (x.B_j of the next phase's rank-R term, |R| of EGG-LN2) per (CTA, warpgroup) slot; a CTA goes on when its own
 * threads met at a barrier and its phase's mbarrier counted every partner's bytes; a phase's MMAs over the CTA's own
 * k-slices run while it waits. Same integer operations as rreg_kernel: at rank 2-4 its generic epilogue rec_epi_r (p
 * in 32 bits: K = H <= 512), the A values from global memory, R slots of x.B_j partials a row and phase. (EGG_CUDA_RCLUS=0:
 * two GEMM launches per timestep over the whole population, ~230 TOPS at 512 at rank 1, mm_kernel's at rank 2-4.) */
#define RCL_PITCH 144 /* As, Rs row pitch: 128 columns + 16 (a warp's 4 pair rows in different banks) */
#define RCL_THREADS 256
template <int H> __host__ __device__ constexpr int rclus_ctas() { return H / 128; }
/* the x.B partials' ranks (tsx) and the rank-1 A rows (As: none at rank 2-4, whose epilogue reads A from global memory) */
template <int R> __host__ __device__ constexpr int rclus_rk() { return R > 1 ? R : 1; }
template <int R> __host__ __device__ constexpr int rclus_as() { return R > 1 ? 0 : 2 * 32 * RCL_PITCH; }
/* H = 640: h and g share one buffer (Uf, Uh rows take 160 KB), so a CTA overwrites it, its own and its partners', only once
 * every CTA's MMAs of the phase have read it (a read-done mbarrier: its own threads and every partner's warps arrive on it) */
template <int H> __host__ __device__ constexpr bool rclus_shg() { return H > 512; }
/* a row's partial-sum slots (CTA, warpgroup): 2 H / 128, at least 8 */
template <int H> __host__ __device__ constexpr int rclus_nsp() { return H / 64 > 8 ? H / 64 : 8; }
template <int H, int R = 1> __host__ __device__ constexpr int rclus_smem_bytes() {
    /* Uf, Uh rows [H/64][128][64]; Xh, Gs [H/64][64][64] (one buffer at 640); Rs [64][RCL_PITCH]; As [2][32][RCL_PITCH]
     * (rank <= 1); tsx [2][RK][64][NSP] (at 640 one phase's: the read-done waits keep a phase's partial sums from being
     * overwritten before they are read), lns [64][NSP] ints; two mbarriers, and at 640 two read-done ones (rank 4 at H =
     * 512: 224272 bytes; at 640: 226848) */
    return 2 * 128 * H + (rclus_shg<H>() ? 1 : 2) * RBM * H + RBM * RCL_PITCH + rclus_as<R>() +
           ((rclus_shg<H>() ? 1 : 2) * rclus_rk<R>() + 1) * RBM * rclus_nsp<H>() * 4 + (rclus_shg<H>() ? 32 : 16);
}
#ifdef MMP_WGMMA
__device__ __forceinline__ unsigned cl_map(const void *p, unsigned rank) { /* the shared::cluster address of p in CTA rank */
    unsigned r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"((unsigned)__cvta_generic_to_shared(p)), "r"(rank));
    return r;
}
__device__ __forceinline__ void st_async16(unsigned addr, int4 v, unsigned bar) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];" ::"r"(addr), "r"(v.x), "r"(v.y),
                 "r"(v.z), "r"(v.w), "r"(bar)
                 : "memory");
}
__device__ __forceinline__ void st_async4(unsigned addr, int v, unsigned bar) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(addr), "r"(v), "r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_arrive_remote(unsigned bar) { /* an mbarrier of a partner CTA (shared::cluster address) */
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
#endif
template <int H, int R, bool LN2 = true> /* LN2: EGG-LN2 here (false: at hidden 512, rank 2-4, lnxb_kernel's, with up's T rows) */
__global__ void __launch_bounds__(RCL_THREADS, 1) rclus_kernel(RecChunk a) {
#ifdef MMP_WGMMA
    constexpr int CN = rclus_ctas<H>(), NS = 2 * CN; /* CTAs a cluster (H / 64 k-slices: 2 a CTA's columns); partial-sum slots a row */
    constexpr int RK = rclus_rk<R>(), NP = R > 0 ? RK : 0; /* x.B_j partials a row and phase */
    constexpr bool SHG = rclus_shg<H>();                   /* h and g in one buffer (640) */
    constexpr int NSP = rclus_nsp<H>();                    /* slots a row in tsx, lns */
    /* bytes a CTA receives a phase: every partner's g (or h') bytes and its partial sums (x.B_j; |R|) */
    constexpr unsigned BG = (CN - 1) * (RBM * 128 + NP * RBM * 2 * 4), BH = (CN - 1) * (RBM * 128 + (NP + (LN2 ? 1 : 0)) * RBM * 2 * 4);
    extern __shared__ __align__(1024) unsigned char smem[];
    int8_t *Wfs = (int8_t *)smem, *Whs = Wfs + 128 * H, *Xh = Whs + 128 * H, *Gs = SHG ? Xh : Xh + RBM * H, *Rs = Gs + RBM * H;
    int8_t *As = Rs + RBM * RCL_PITCH;                       /* [2][32][RCL_PITCH]: the pairs' A values of the CTA's columns (rank 1) */
    int *tsx = (int *)(As + rclus_as<R>());                  /* [2][RK][RBM][NSP]: x.B_j partials (h, g) by slot (CTA, warpgroup);
                                                              * SHG: [1][RK][RBM][NSP], both phases' */
    int *lns = tsx + (SHG ? 1 : 2) * RK * RBM * NSP;         /* [RBM][NSP]: sum |R| partials */
    uint64_t *bars = (uint64_t *)(lns + RBM * NSP);          /* [2]: phase 0 (g), phase 1 (h') bytes from the partners;
                                                              * SHG: [2..3] the phase's MMAs done in every CTA */
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, gid = lane >> 2, tig = lane & 3;
    const int wg = warp >> 2, w4 = warp & 3, n = a.n, ps = a.pshift, s = a.s;
    unsigned rk, cid, ncl;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rk));
    asm("mov.u32 %0, %%clusterid.x;" : "=r"(cid));
    asm("mov.u32 %0, %%nclusterid.x;" : "=r"(ncl));
    const int lc0 = wg * 64 + tig * 16, c0 = (int)rk * 128 + lc0; /* the thread's 16 columns: in the CTA's 128, in the row */
    const int slot = (int)rk * 2 + wg;
    const uint64_t keep = l2_policy(L2_LAST), once = l2_policy(L2_FIRST);
    if (tid == 0) {
        mbar_init(bars, 1);
        mbar_init(bars + 1, 1);
        if (SHG) {
            mbar_init(bars + 2, RCL_THREADS + 8 * (CN - 1)); /* this CTA's threads, every partner's warps */
            mbar_init(bars + 3, RCL_THREADS + 8 * (CN - 1));
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    /* the CTA's rows of Uf, Uh: shared row o holds output column 128 rk + wperm_row(o) */
    for (int ch = tid; ch < 2 * 128 * H / 16; ch += RCL_THREADS) {
        const int mat = ch / (128 * H / 16), rem = ch % (128 * H / 16), o = rem / (H / 16), col = (rem % (H / 16)) * 16;
        cp_async16((mat ? Whs : Wfs) + (col >> 6) * 128 * 64 + wg_off(o, (col >> 4) & 3),
                   (mat ? a.Uh : a.Uf) + (size_t)((int)rk * 128 + wperm_row(o)) * H + col, true);
    }
    cp_commit();
    __syncthreads();
    cluster_sync(); /* every partner's barriers initialised before any byte is sent to them */
    if (tid == 0) {
        mbar_expect_tx(bars, BG);
        mbar_expect_tx(bars + 1, BH);
    }
    auto sw = [](int row, int col) { return (col >> 6) * (RBM * 64) + wg_off(row, (col >> 4) & 3) + (col & 15); };
    const unsigned xa = (unsigned)__cvta_generic_to_shared(Xh), ga = (unsigned)__cvta_generic_to_shared(Gs);
    const unsigned wfa = (unsigned)__cvta_generic_to_shared(Wfs) + wg * 64 * 64, wha = (unsigned)__cvta_generic_to_shared(Whs) + wg * 64 * 64;
    int d[32];
    /* a phase's MMA in two parts: the k-slices of this CTA's own columns (its own threads wrote them) while the
     * partners' bytes are still arriving, then the others */
    auto mma_own = [&](unsigned oa, unsigned wa) {
        const uint64_t dx = wg_desc(oa), dw = wg_desc(wa);
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < 2; kk++) {
            const int kt = 2 * (int)rk + kk;
            wg_mma_k64(d, dx + kt * (RBM * 64 / 16), dw + kt * (128 * 64 / 16), kk > 0);
        }
    };
    auto mma_rest = [&](unsigned oa, unsigned wa) {
        const uint64_t dx = wg_desc(oa), dw = wg_desc(wa);
        wg_fence();
#pragma unroll
        for (int q = 1; q < CN; q++)
#pragma unroll
            for (int kk = 0; kk < 2; kk++) {
                const int kt = 2 * (int)((rk + q) % CN) + kk;
                wg_mma_k64(d, dx + kt * (RBM * 64 / 16), dw + kt * (128 * 64 / 16));
            }
        wg_commit();
    };
    auto rsum = [](int v) {
        v += __shfl_xor_sync(0xffffffffu, v, 1);
        return v + __shfl_xor_sync(0xffffffffu, v, 2);
    };
    auto slots = [](const int *p) { /* a row's NS partials */
        int v = 0;
#pragma unroll
        for (int i = 0; i < NS; i++) v += p[i];
        return v;
    };
    /* the partners' shared memory: each one's window at rbase[q] (the same offsets as here) */
    const unsigned lbase = (unsigned)__cvta_generic_to_shared(smem);
    unsigned rbase[CN - 1];
#pragma unroll
    for (int q = 1; q < CN; q++) rbase[q - 1] = cl_map(smem, (rk + q) % CN);
    auto roff = [&](const void *p) { return (unsigned)__cvta_generic_to_shared(p) - lbase; };
    /* 16 bytes at Ds + off to this CTA and every partner (their phase's barrier counts them) */
    auto bcast16 = [&](int8_t *Ds, int off, int4 v, uint64_t *bar) {
        *(int4 *)(Ds + off) = v;
        const unsigned o = roff(Ds + off), b = roff(bar);
#pragma unroll
        for (int q = 0; q < CN - 1; q++) st_async16(rbase[q] + o, v, rbase[q] + b);
    };
    auto bcast4 = [&](int *p, int v, uint64_t *bar) {
        *p = v;
        const unsigned o = roff(p), b = roff(bar);
#pragma unroll
        for (int q = 0; q < CN - 1; q++) st_async4(rbase[q] + o, v, rbase[q] + b);
    };
    /* SHG: this warp's MMAs of phase ph have read the buffer; arrive on phase ph's read-done mbarrier in every CTA.
     * Its lanes' reads of the partial-sum slots (terms) come before it too: at phase 0 the next phase's x.B partials
     * overwrite them (the two phases share the slots) once every arrival is in. Each thread arrives here itself (its
     * release covers its own reads: with lane 0 alone, compute-sanitizer's racecheck reported the other lanes' reads
     * against this CTA's writes), and lane 0 at the partners after the warp syncs (memory ordering among its lanes) */
    auto rd_arrive = [&](int ph) {
        if (SHG) {
            mbar_arrive(bars + 2 + ph);
            __syncwarp();
            if (lane == 0) {
                const unsigned b = roff(bars + 2 + ph);
#pragma unroll
                for (int q = 0; q < CN - 1; q++) mbar_arrive_remote(rbase[q] + b);
            }
        }
    };
    unsigned prd[2] = {0, 0}; /* SHG: the read-done mbarriers' phases */
    auto rd_wait = [&](int ph) { /* SHG: every warp of the cluster is past phase ph's MMAs: the buffer may be overwritten */
        mbar_wait<true>(bars + 2 + ph, prd[ph]);
        prd[ph] ^= 1;
    };
    const size_t nH = (size_t)n * H;
    unsigned par[2] = {0, 0};
    const int nrb = (n + RBM - 1) / RBM;
    for (int rb = (int)cid; rb < nrb; rb += (int)ncl) {
        const int m0 = rb * RBM;
        int row[2], gc[2];
        bool ok[2];
        rec_rows(m0, n, w4, gid, row, ok, gc);
        auto bload = [&](int hr, size_t off, int col, int j = 0) { /* B_j of the row's pair at 16 columns from col */
            return ldg_hint(a.noise + (size_t)(gc[hr] >> 1) * a.pstride + off + a_span(RK, H) + (size_t)j * H + col, keep);
        };
        /* the rows' sign * x.B_j of phase ph from the slots (read before any byte of the phase goes out: a partner
         * writes the next timestep's only after it has them all) */
        auto terms = [&](int ph, int (&tt)[2][RK]) {
#pragma unroll
            for (int hr = 0; hr < 2; hr++)
#pragma unroll
                for (int j = 0; j < RK; j++) {
                    const int v = R > 0 ? slots(tsx + ((SHG ? 0 : ph) * RK + j) * RBM * NSP + row[hr] * NSP) : 0;
                    tt[hr][j] = (row[hr] & 1) ? -v : v;
                }
        };
        auto pload = [&](int hr, int ph) {
            return R > 0 ? ldg_hint((ph ? a.bph : a.bpf) + (size_t)gc[hr] * H + c0, keep) : __ldg((const int4 *)((ph ? a.bh : a.bf) + c0));
        };
        /* the row block's state (every column) and its pairs' A values of this CTA's columns */
        for (int ch = tid; ch < RBM * H / 16; ch += RCL_THREADS) {
            const int r = ch / (H / 16), c = (ch % (H / 16)) * 16, gm = m0 + r;
            cp_async16(Xh + sw(r, c), gm < n ? a.Hs + (size_t)gm * H + c : a.Hs, gm < n);
        }
        if (R == 1)
            for (int ch = tid; ch < 2 * 32 * 128 / 16; ch += RCL_THREADS) {
                const int ph = ch / (32 * 8), p = (ch / 8) % 32, c = (ch % 8) * 16, gp = m0 + 2 * p;
                cp_async16(As + (ph * 32 + p) * RCL_PITCH + c,
                           gp < n ? a.noise + (size_t)(gp >> 1) * a.pstride + (ph ? a.off_uh : a.off_uf) + (int)rk * 128 + c : a.noise, gp < n);
            }
        cp_commit();
        cp_wait<0>();
        __syncthreads();
        if (R > 0) /* x.B_j of the state for the first timestep: every slot here (the partners compute the same) */
#pragma unroll
            for (int q = 0; q < CN; q++)
#pragma unroll
                for (int hr = 0; hr < 2; hr++)
#pragma unroll
                    for (int j = 0; j < RK; j++) {
                        const int col = q * 128 + lc0;
                        const int v = rsum(dot16(*(const int4 *)(Xh + sw(row[hr], col)), bload(hr, a.off_uf, col, j)));
                        if (tig == 0) tsx[j * RBM * NSP + row[hr] * NSP + q * 2 + wg] = v;
                    }
        fence_proxy_async(); /* Xh, read next by the tensor cores */
        __syncthreads();
        mma_own(xa, wfa);
        int4 fv[2]; /* f + 127 of the thread's bytes, phase 0 to phase 1 */
        int4 hs[2]; /* SHG: h of the thread's bytes, phase 0 to phase 1 (g overwrites it in the buffer) */
        /* phase ph's epilogue of row hr: rank 1 with Av, rank 2-4 with its pair's A values from global memory */
        auto epi = [&](int ph, int hr, const int (&t)[RK], int4 Av, unsigned (&yl)[4], unsigned (&yu)[4]) {
            if constexpr (R > 1)
                rec_epi_r<H, RK, false>(d, hr, t, a.noise + (size_t)(gc[hr] >> 1) * a.pstride + (ph ? a.off_uh : a.off_uf) + c0, s, ps, yl, yu);
            else
                rec_epi<R, 0>(d, hr, t[0], Av, s, ps, yl, yu);
        };
        /* the row's x.B_j partials of its bytes v (B_0 in b0, loaded under the MMA) into phase ph's slots here and at
         * every partner, counted by bar */
        auto partials = [&](int ph, int hr, int4 v, int4 b0, size_t off, uint64_t *bar) {
#pragma unroll
            for (int j = 0; j < RK; j++) {
                const int pv = rsum(dot16(v, j == 0 ? b0 : bload(hr, off, c0, j)));
                if (tig == 0) bcast4(tsx + ((SHG ? 0 : ph) * RK + j) * RBM * NSP + row[hr] * NSP + slot, pv, bar);
            }
        };
        auto aload = [&](int ph, int hr) {
            return R == 1 ? *(const int4 *)(As + (ph * 32 + (row[hr] >> 1)) * RCL_PITCH + lc0) : make_int4(0, 0, 0, 0);
        };
        /* XN = EGG-LN2(R) of the rows' timestep at XN + tb0, the CTA's columns (R in Rs, the sums' partials in lns) */
        auto ln_out = [&](size_t tb0) {
#pragma unroll
            for (int hr = 0; hr < 2; hr++) {
                const size_t gi = (size_t)gc[hr] * H + c0;
                const int4 wl = R > 0 ? ldg_hint(a.bpl + gi, keep) : __ldg((const int4 *)(a.ln + c0));
                const int4 rv = *(const int4 *)(Rs + row[hr] * RCL_PITCH + lc0);
                const int mq = LNM(egg_ln_div(slots(lns + row[hr] * NSP), H)); /* d <= 127: |R| <= 127 */
                int4 xo;
#pragma unroll
                for (int u = 0; u < 4; u++) (&xo.x)[u] = (int)ln_word((unsigned)(&rv.x)[u], (unsigned)(&wl.x)[u], mq);
                if (ok[hr]) stg_hint(a.XN + tb0 + gi, xo, once);
            }
        };
        for (int t = 0; t < a.tc; t++) {
            const size_t tb = (size_t)t * nH;
            const uint8_t *rzn = t + 1 < a.tc ? a.rz + (size_t)(t + 1) * n : a.rz0;
            int tt[2][RK];
            int4 Av[2], bn[2];
            /* ---- phase 0: f = clip(Uf.h + Wf.x + bf), g = gate(f, h) */
            mma_rest(xa, wfa);
            /* the next timestep's rows of Wf.x, Wh.x and x into L2 (one tensor a CTA; brought evict_last, read
             * evict_first), as rreg_kernel's l2pf */
            if (a.l2pf && tid == 0 && rk < 3 && t + 1 < a.tc)
                l2_prefetch_bulk_hint((rk == 0 ? a.TF : rk == 1 ? a.TH : a.X) + (size_t)(t + 1) * nH + (size_t)m0 * H,
                                      (unsigned)(min(RBM, n - m0) * H), keep);
            int4 ef[2], pf[2];
#pragma unroll
            for (int hr = 0; hr < 2; hr++) {
                ef[hr] = ldg_hint(a.TF + tb + (size_t)gc[hr] * H + c0, once);
                pf[hr] = pload(hr, 0);
                if (R > 0) bn[hr] = bload(hr, a.off_uh, c0);
                Av[hr] = aload(0, hr);
            }
            terms(0, tt);
            if (LN2 && t > 0) ln_out(tb - nH); /* the timestep before's EGG-LN2, under the MMA */
            wg_wait<0>();
            rd_arrive(0);
            int4 gv2[2];
#pragma unroll
            for (int hr = 0; hr < 2; hr++) {
                unsigned yl[4], yu[4];
                epi(0, hr, tt[hr], Av[hr], yl, yu);
                const int4 hv = *(const int4 *)(Xh + sw(row[hr], c0));
                if (SHG) hs[hr] = hv; /* g takes its place: kept for phase 1's mix */
#pragma unroll
                for (int u = 0; u < 4; u++) {
                    unsigned p;
                    (&gv2[hr].x)[u] = (int)rec_gate4(yl[u], yu[u], (unsigned)(&ef[hr].x)[u], (unsigned)(&pf[hr].x)[u], (unsigned)(&hv.x)[u], p);
                    (&fv[hr].x)[u] = (int)p;
                }
                if (!SHG) {
                    bcast16(Gs, sw(row[hr], c0), gv2[hr], bars);
                    if (R > 0) partials(1, hr, gv2[hr], bn[hr], a.off_uh, bars);
                }
            }
            if (SHG) {
                rd_wait(0);
#pragma unroll
                for (int hr = 0; hr < 2; hr++) {
                    bcast16(Gs, sw(row[hr], c0), gv2[hr], bars);
                    if (R > 0) partials(1, hr, gv2[hr], bn[hr], a.off_uh, bars);
                }
            }
            fence_proxy_async(); /* g, read next by the tensor cores */
            __syncthreads();
            mma_own(ga, wha);
            mbar_wait<true>(bars, par[0]);
            par[0] ^= 1;
            fence_proxy_async();
            if (tid == 0) mbar_expect_tx(bars, BG); /* the next timestep's */
            /* ---- phase 1: c = clip(Uh.g + Wh.x + bh), h' = mix(f, c, h), R = clip(h' + x), the state reset where the next
             * token is 0 */
            mma_rest(ga, wha);
            int4 eh[2], xv[2], pb[2];
            int rz[2];
#pragma unroll
            for (int hr = 0; hr < 2; hr++) {
                const size_t gi = tb + (size_t)gc[hr] * H + c0;
                eh[hr] = ldg_hint(a.TH + gi, once);
                xv[hr] = ldg_hint(a.X + gi, once);
                pb[hr] = pload(hr, 1);
                rz[hr] = rzn[gc[hr]];
                if (R > 0) bn[hr] = bload(hr, a.off_uf, c0);
                Av[hr] = aload(1, hr);
            }
            terms(1, tt);
            wg_wait<0>();
            rd_arrive(1);
            int4 ho2[2];
            int sa2[2];
#pragma unroll
            for (int hr = 0; hr < 2; hr++) {
                unsigned yl[4], yu[4];
                epi(1, hr, tt[hr], Av[hr], yl, yu);
                const int4 hv = SHG ? hs[hr] : *(const int4 *)(Xh + sw(row[hr], c0));
                int4 ho, ro;
                int sa = 0;
#pragma unroll
                for (int u = 0; u < 4; u++) {
                    unsigned hl, hu, r;
                    rec_mix4(yl[u], yu[u], (unsigned)(&eh[hr].x)[u], (unsigned)(&pb[hr].x)[u], (unsigned)(&fv[hr].x)[u], (unsigned)(&hv.x)[u],
                             (unsigned)(&xv[hr].x)[u], hl, hu, r);
                    (&ho.x)[u] = rz[hr] ? 0 : (int)pack4(hl, hu);
                    (&ro.x)[u] = (int)r;
                    if (LN2) {
                        w4u qv;
                        qv.w = (int)r;
                        sa += abs_sum4(qv);
                    }
                }
                if (!SHG) bcast16(Xh, sw(row[hr], c0), ho, bars + 1);
                if (ok[hr]) stg_hint(a.R + tb + (size_t)gc[hr] * H + c0, ro, once);
                if (LN2) {
                    *(int4 *)(Rs + row[hr] * RCL_PITCH + lc0) = ro;
                    sa = rsum(sa);
                }
                if (!SHG) {
                    if (LN2 && tig == 0) bcast4(lns + row[hr] * NSP + slot, sa, bars + 1);
                    if (R > 0) partials(0, hr, ho, bn[hr], a.off_uf, bars + 1);
                }
                ho2[hr] = ho;
                sa2[hr] = sa;
            }
            if (SHG) {
                rd_wait(1);
#pragma unroll
                for (int hr = 0; hr < 2; hr++) {
                    bcast16(Xh, sw(row[hr], c0), ho2[hr], bars + 1);
                    if (LN2 && tig == 0) bcast4(lns + row[hr] * NSP + slot, sa2[hr], bars + 1);
                    if (R > 0) partials(0, hr, ho2[hr], bn[hr], a.off_uf, bars + 1);
                }
            }
            fence_proxy_async(); /* the state h, read next by the tensor cores */
            __syncthreads();
            mma_own(xa, wfa); /* the next timestep's (after the last one: drained below, its result unused) */
            mbar_wait<true>(bars + 1, par[1]);
            par[1] ^= 1;
            fence_proxy_async();
            if (tid == 0) mbar_expect_tx(bars + 1, BH);
        }
        wg_wait<0>();
        if (LN2 && a.tc > 0) ln_out((size_t)(a.tc - 1) * nH); /* EGG-LN2 of the chunk's last R */
#pragma unroll
        for (int hr = 0; hr < 2; hr++) /* the state after the chunk: this CTA's columns */
            if (ok[hr]) *(int4 *)(a.Hs + (size_t)gc[hr] * H + c0) = *(const int4 *)(Xh + sw(row[hr], c0));
        __syncthreads(); /* the next row block loads Xh, As */
    }
    cp_wait<0>();
    cluster_sync(); /* no CTA leaves while a partner may still send to it */
#else
    (void)a; /* not launched: the host checks wgmma_probe first */
#endif
}

#endif /* EGG_RECUR_CUH */

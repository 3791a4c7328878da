/* egg_rows.cuh — the row kernels: the members' perturbed LN weights (lnpert_kernel),
 * EGG-LN (ln_kernel, ln_vec_kernel, ln16_kernel), the embedding with its perturbation
 * (embed_kernel, embed_vec_kernel, which can apply the first EGG-LN), the integer
 * loss (loss_kernel, loss_vec_kernel), the state reset, and the per-timestep recurrence's gate and mix passes
 * (rec_gate_kernel, rec_mix_kernel) where its GEMMs run as PLAIN GEMMs.
 * Part of the CUDA backend: included once by kernels/cuda/egg_cuda.cu (one translation unit). */
#ifndef EGG_ROWS_CUH
#define EGG_ROWS_CUH

/* the nm members' perturbed copies of LN weight vector w (H, a multiple of 4):
 * wp[m][k] = egg_vec_pert(w[k], n1[k], n2[k], +1 (m even) / -1 (m odd)) of pair m/2,
 * once per step, so the LN kernels (a row per member and timestep) only read them */
/* every perturbed vector of the step in one launch: vector v = blockIdx.y is the tensor at params + po[v].x, its noise
 * at + po[v].y in a pair's blob, its copies at wp + v nm H (a launch per vector, 25 a step at EGG-256x6, had cost
 * ~26 us each) */
__global__ void lnpert_kernel(int nm, int H, const int8_t *params, const longlong2 *po, const int8_t *noise, size_t pstride, int pshift,
                              int8_t *wps) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x, hw = H >> 2;
    if (i >= nm * hw) return;
    const longlong2 t = po[blockIdx.y];
    const int8_t *w = params + t.x;
    const size_t voff = (size_t)t.y;
    int8_t *wp = wps + (size_t)blockIdx.y * nm * H;
    const int m = i / hw, k = (i - m * hw) * 4, sg = (m & 1) ? -1 : 1;
    const int8_t *n1 = noise + (size_t)(m >> 1) * pstride + voff + k;
    w4u wv, a, b, o;
    wv.w = *(const int *)(w + k);
    a.w = *(const int *)n1;
    b.w = *(const int *)(n1 + H);
#pragma unroll
    for (int e = 0; e < 4; e++) o.b[e] = (signed char)egg_vec_pert(wv.b[e], a.b[e], b.b[e], sg, pshift);
    *(int *)(wp + (size_t)m * H + k) = o.w;
}

/* EGG-LN of rows [time][members] (nm members per timestep), a warp per two
 * consecutive rows: with noise they are the two members of one pair (nm is
 * even), which share the weights' noise with opposite signs. */
__global__ void ln_kernel(int rows, int nm, int H, const int8_t *X, const int8_t *w, const int8_t *noise, size_t pstride,
                          size_t voff, int pshift, const int8_t *wp, int8_t *Y) {
    const int r0 = 2 * (blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)), lane = threadIdx.x & 31;
    if (r0 >= rows) return;
    const bool two = r0 + 1 < rows;
    const int8_t *x0 = X + (size_t)r0 * H, *x1 = x0 + H;
    int8_t *y0 = Y + (size_t)r0 * H, *y1 = y0 + H;
    int s0 = 0, s1 = 0;
#pragma unroll 4
    for (int i = lane; i < H; i += 32) {
        const int v0 = x0[i];
        s0 += v0 < 0 ? -v0 : v0;
        if (two) { const int v1 = x1[i]; s1 += v1 < 0 ? -v1 : v1; }
    }
    for (int off = 16; off; off >>= 1) {
        s0 += __shfl_xor_sync(0xffffffffu, s0, off);
        s1 += __shfl_xor_sync(0xffffffffu, s1, off);
    }
    const int32_t d0 = egg_ln_div(s0, H), d1 = egg_ln_div(s1, H);
    const lnq dv0 = LNQ(d0), dv1 = LNQ(d1); /* d <= 127: |x| <= 127 */
    const int8_t *n1 = noise ? noise + (size_t)((r0 % nm) >> 1) * pstride + voff : NULL;
    const int8_t *p0 = wp ? wp + (size_t)(r0 % nm) * H : NULL;
#pragma unroll 4
    for (int i = lane; i < H; i += 32) {
        const int wi = w[i];
        int w0 = wi, w1 = wi;
        if (p0) {
            w0 = p0[i];
            w1 = p0[H + i];
        } else if (n1) {
            const int a = n1[i], b = n1[H + i];
            w0 = egg_vec_pert(wi, a, b, 1, pshift);
            w1 = egg_vec_pert(wi, a, b, -1, pshift);
        }
        y0[i] = (int8_t)ln_apply(x0[i], w0, dv0);
        if (two) y1[i] = (int8_t)ln_apply(x1[i], w1, dv1);
    }
}

/* ln_kernel for H = 128 * K4 (K4 = 1 .. 8): each lane holds 4 * K4 bytes of both
 * rows in registers (ld_words), sums |x| with __vabsss4 / __dp4a, and stores them in the same
 * accesses; the same operations per element as ln_kernel (the byte loop there moved 1 byte per
 * lane per access). */
/* a lane's 4 * K4 bytes, loaded / stored in the widest accesses that keep each access of a warp's 32 lanes contiguous:
 * K4 = 4, 8: consecutive (16-byte accesses); K4 = 2, 6 (H = 256, 768): one or three 8-byte pairs of words at
 * p + 256 q; odd K4 (H = 128, 384, 640, 896): words q at p + 128 q (12 bytes a lane at 12-byte steps had
 * taken three accesses of 384 bytes each at H = 384); w_off gives a lane's p */
template <int K4> __host__ __device__ constexpr int w_off(int lane) { return K4 % 4 == 0 ? 4 * K4 * lane : K4 % 2 == 0 ? 8 * lane : 4 * lane; }
/* whether a lane's words are consecutive (loss_vec_kernel's lanes, embed_vec_kernel with fewer than 32 lanes a row) */
template <int K4> __host__ __device__ constexpr bool words_consecutive() { return K4 % 4 == 0 || K4 <= 2; }
template <int K4> __device__ __forceinline__ void ld_words(w4u (&v)[K4], const int8_t *p) {
    if (K4 % 2 == 1) {
#pragma unroll
        for (int q = 0; q < K4; q++) v[q].w = __ldg((const int *)(p + 128 * q));
    } else if (K4 % 4 == 2) {
#pragma unroll
        for (int q = 0; q < K4 / 2; q++) {
            const int2 t = __ldg((const int2 *)(p + 256 * q));
            v[2 * q].w = t.x; v[2 * q + 1].w = t.y;
        }
    } else {
#pragma unroll
        for (int q = 0; q < K4; q += 4) {
            const int4 t = __ldg((const int4 *)(p + 4 * q));
            v[q].w = t.x; v[q + 1].w = t.y; v[q + 2].w = t.z; v[q + 3].w = t.w;
        }
    }
}
template <int K4> __device__ __forceinline__ void st_words(int8_t *p, const w4u (&v)[K4]) {
    if (K4 % 2 == 1) {
#pragma unroll
        for (int q = 0; q < K4; q++) *(int *)(p + 128 * q) = v[q].w;
    } else if (K4 % 4 == 2) {
#pragma unroll
        for (int q = 0; q < K4 / 2; q++) *(int2 *)(p + 256 * q) = make_int2(v[2 * q].w, v[2 * q + 1].w);
    } else {
#pragma unroll
        for (int q = 0; q < K4; q += 4) *(int4 *)(p + 4 * q) = make_int4(v[q].w, v[q + 1].w, v[q + 2].w, v[q + 3].w);
    }
}
/* P member pairs per warp, every load of the P pairs issued before the first use */
template <int K4, int P>
__global__ void ln_vec_kernel(int rows, int nm, const int8_t *X, const int8_t *w, const int8_t *noise, size_t pstride,
                              size_t voff, int pshift, const int8_t *wp, int8_t *Y) {
    constexpr int H = 128 * K4;
    const int wq = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (2 * wq * P >= rows) return;
    const int off = w_off<K4>(lane);
    const bool noisy = noise != NULL;
    w4u x0[P][K4], x1[P][K4], a1[P][K4], a2[P][K4], ww[K4];
    ld_words<K4>(ww, w + off);
#pragma unroll
    for (int pp = 0; pp < P; pp++) {
        const int r0 = 2 * (wq * P + pp);
#pragma unroll
        for (int q = 0; q < K4; q++) x0[pp][q].w = x1[pp][q].w = a1[pp][q].w = a2[pp][q].w = 0;
        if (r0 >= rows) continue;
        ld_words<K4>(x0[pp], X + (size_t)r0 * H + off);
        if (r0 + 1 < rows) ld_words<K4>(x1[pp], X + (size_t)(r0 + 1) * H + off);
        if (wp) { /* the pair's two members' perturbed weights */
            const int8_t *p0 = wp + (size_t)(r0 % nm) * H + off;
            ld_words<K4>(a1[pp], p0);
            ld_words<K4>(a2[pp], p0 + H);
        } else if (noisy) {
            const int8_t *n1 = noise + (size_t)((r0 % nm) >> 1) * pstride + voff + off;
            ld_words<K4>(a1[pp], n1);
            ld_words<K4>(a2[pp], n1 + H);
        }
    }
#pragma unroll
    for (int pp = 0; pp < P; pp++) {
        const int r0 = 2 * (wq * P + pp);
        int s0 = 0, s1 = 0;
#pragma unroll
        for (int q = 0; q < K4; q++) {
            s0 += abs_sum4(x0[pp][q]);
            s1 += abs_sum4(x1[pp][q]);
        }
        for (int o = 16; o; o >>= 1) {
            s0 += __shfl_xor_sync(0xffffffffu, s0, o);
            s1 += __shfl_xor_sync(0xffffffffu, s1, o);
        }
        if (r0 >= rows) continue;
        const int32_t d0 = egg_ln_div(s0, H), d1 = egg_ln_div(s1, H);
        const lnq dv0 = LNQ(d0), dv1 = LNQ(d1); /* d <= 127: |x| <= 127 */
        w4u y0[K4], y1[K4];
#pragma unroll
        for (int q = 0; q < K4; q++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int wi = ww[q].b[e];
                int w0 = wi, w1 = wi;
                if (wp) {
                    w0 = a1[pp][q].b[e];
                    w1 = a2[pp][q].b[e];
                } else if (noisy) {
                    w0 = egg_vec_pert(wi, a1[pp][q].b[e], a2[pp][q].b[e], 1, pshift);
                    w1 = egg_vec_pert(wi, a1[pp][q].b[e], a2[pp][q].b[e], -1, pshift);
                }
                y0[q].b[e] = (signed char)ln_apply(x0[pp][q].b[e], w0, dv0);
                y1[q].b[e] = (signed char)ln_apply(x1[pp][q].b[e], w1, dv1);
            }
        st_words<K4>(Y + (size_t)r0 * H + off, y0);
        if (r0 + 1 < rows) st_words<K4>(Y + (size_t)(r0 + 1) * H + off, y1);
    }
}

/* EGG-LN of a row held by LPR lanes, 16 bytes a lane: the lane's 16 weights of the row's member mem (in: a row of the
 * launch): the members' perturbed ones (wp), else w perturbed here from the pair's n1, n2 (noise), else w */
template <int LPR>
__device__ __forceinline__ int4 ln16_weights(bool in, int mem, int off, const int8_t *w, const int8_t *noise, size_t pstride, size_t voff,
                                             int pshift, const int8_t *wp) {
    constexpr int H = 16 * LPR;
    if (wp) return in ? __ldg((const int4 *)(wp + (size_t)mem * H + off)) : make_int4(0, 0, 0, 0); /* the member's perturbed weights */
    bytes16 wv;
    wv.v = __ldg((const int4 *)(w + off));
    if (noise && in) { /* perturbed here from the pair's n1, n2 (sign by the member's parity) */
        const int8_t *n1 = noise + (size_t)(mem >> 1) * pstride + voff + off;
        bytes16 a1, a2;
        a1.v = __ldg((const int4 *)n1);
        a2.v = __ldg((const int4 *)(n1 + H));
#pragma unroll
        for (int e = 0; e < 16; e++) wv.b[e] = (signed char)egg_vec_pert(wv.b[e], a1.b[e], a2.b[e], (mem & 1) ? -1 : 1, pshift);
    }
    return wv.v;
}
/* the lane's 16 output bytes of that EGG-LN (x: its input bytes; every lane of the warp takes part in the row sum's
 * shuffles, a lane past the launch's rows with zeros) */
template <int LPR>
__device__ __forceinline__ int4 ln16_apply(int4 xv, int4 wl) {
    constexpr int H = 16 * LPR;
    bytes16 x, wv, y;
    x.v = xv; wv.v = wl;
    int sa = 0;
#pragma unroll
    for (int q = 0; q < 4; q++) sa += abs_sum4(w4u{(&x.v.x)[q]});
#pragma unroll
    for (int o = LPR / 2; o; o >>= 1) sa += __shfl_xor_sync(0xffffffffu, sa, o); /* within the row's LPR lanes */
#if defined(__HIPCC__)
    const lnq dv = LNQ(egg_ln_div(sa, H)); /* d <= 127: |x| <= 127 */
#pragma unroll
    for (int e = 0; e < 16; e++) y.b[e] = (signed char)ln_apply(x.b[e], wv.b[e], dv);
#else
    const int mq = LNM(egg_ln_div(sa, H));
#pragma unroll
    for (int q = 0; q < 4; q++) (&y.v.x)[q] = (int)ln_word((unsigned)(&x.v.x)[q], (unsigned)(&wv.v.x)[q], mq);
#endif
    return y.v;
}
/* EGG-LN with H = 16 LPR (128, 256, 512): LPR lanes a row, 16 bytes a lane (32 / LPR rows a warp; ln_vec_kernel's
 * 4 or 8 bytes a lane had left the DRAM-bound kernel with few bytes in flight); the same operations per element */
template <int LPR>
__global__ void ln16_kernel(int rows, int nm, const int8_t *X, const int8_t *w, const int8_t *noise, size_t pstride, size_t voff,
                            int pshift, const int8_t *wp, int8_t *Y) {
    constexpr int H = 16 * LPR;
    const int lane = threadIdx.x & 31, off = (lane % LPR) * 16;
    const int row = (blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * (32 / LPR) + lane / LPR;
    const bool in = row < rows;
    const int4 x = in ? __ldg((const int4 *)(X + (size_t)row * H + off)) : make_int4(0, 0, 0, 0);
    const int4 y = ln16_apply<LPR>(x, ln16_weights<LPR>(in, in ? row % nm : 0, off, w, noise, pstride, voff, pshift, wp));
    if (in) *(int4 *)(Y + (size_t)row * H + off) = y;
}

/* one halving step of a reduce-scatter over lanes o apart: of its 2 nh sums a lane keeps the upper half (up) or the lower
 * and adds its partner's copy of that half (nh shuffles) */
template <typename T, int N> __device__ __forceinline__ void shfl_halve(T (&v)[N], int nh, bool up, int o) {
#pragma unroll
    for (int i = 0; i < nh; i++) v[i] = (up ? v[i + nh] : v[i]) + __shfl_xor_sync(0xffffffffu, up ? v[i] : v[i + nh], o);
}
#ifdef EGG_MMP
/* a walking kernel's row slot (lnxb_kernel, embed_walk_kernel; RPW rows a warp, row rl of the warp's): its pair p of the
 * nm / 2, its first timestep ts (its slice), odd (the pair's second member) and the member 2 p + odd */
template <int RPW> __device__ __forceinline__ int walk_slot(int nm, int rl, int &p, int &ts, int &odd) {
    const int slot = (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5) * RPW + rl, pw = slot >> 1, wrap = nm / 2;
    p = pw % wrap; ts = pw / wrap; odd = slot & 1;
    return 2 * p + odd;
}
#endif
/* EGG-LN at H = 128, 256 and 512 with, at rank R = 2-4, the T rows of the NM GEMMs that read its output (Wf.x and Wh.x
 * after LN1; the head after the output LN): sign * y . B_j of each, as xb_kernel writes them, so that mmx_kernel needs
 * no pass of its own over y. LPR = H / 16 lanes a row, 16 bytes a lane as ln16_kernel; a warp takes 32 / LPR rows (at
 * 512 one, a pair's two rows on adjacent warps), the members' rows of a pair side by side, and walks their timesteps
 * ts, ts + tsl, ..., the pairs' B rows and the members'
 * perturbed LN weights (wp) in registers and the next timestep's x loaded under this one's work. Rows [time][nm
 * members]; bo, bo2: the matrices' B rows in a pair's noise blob; T: [NM][rows][4]. NM = 0 (since v148, any rank): the LN
 * alone, walking the timesteps with the member's weights in registers where ln16_kernel reads them again for every row */
#ifdef EGG_MMP
template <int H, int R, int NM>
__global__ void __launch_bounds__(256, 3) lnxb_kernel(int rows, int nm, const int8_t *X, const int8_t *wp, const int8_t *noise, size_t pstride,
                                                   size_t bo, size_t bo2, int tsl, int8_t *Y, int32_t *T) {
    constexpr int LPR = H / 16, RPW = 32 / LPR, V = 4 * NM; /* lanes a row, rows a warp, sums a row (4 a matrix) */
    constexpr int NB = NM > 0 ? NM : 1, RB = R > 0 ? R : 1; /* Bc's extents (unused at NM = 0) */
    const int lane = threadIdx.x & 31, sub = lane % LPR, off = sub * 16, tc = rows / nm;
    int p, ts, odd;
    const int m = walk_slot<RPW>(nm, lane / LPR, p, ts, odd);
    if (ts >= tsl || ts >= tc) return; /* whole warps (wrap is a multiple of a warp's pairs) */
    const int4 wl = __ldg((const int4 *)(wp + (size_t)m * H + off));
    const int8_t *nb = noise + (size_t)p * pstride;
    int4 Bc[NB][RB];
#pragma unroll
    for (int mt = 0; mt < NM; mt++)
#pragma unroll
        for (int j = 0; j < R; j++) Bc[mt][j] = __ldg((const int4 *)(nb + (mt ? bo2 : bo) + (size_t)j * H + off));
    (void)Bc;
    int4 xn = __ldg((const int4 *)(X + ((size_t)ts * nm + m) * H + off));
    for (int t = ts; t < tc; t += tsl) {
        const size_t row = (size_t)t * nm + m;
        const int4 x = xn;
        if (t + tsl < tc) xn = __ldg((const int4 *)(X + (row + (size_t)tsl * nm) * H + off));
        const int4 y = ln16_apply<LPR>(x, wl);
        *(int4 *)(Y + row * H + off) = y;
        if constexpr (NM > 0) {
            /* the V sums (matrix k / 4, rank k % 4; 0 past R) over the row's LPR lanes by halving: at each of the first
             * log2 V steps a lane keeps half of its values and adds its partner's of that half (V - 1 shuffles), then one
             * plain sum a step (8 shuffles in all at H = 256, NM = 2, where summing each value on its own took 4 V); idx:
             * the sum this lane ends with */
            int v[V];
#pragma unroll
            for (int k = 0; k < V; k++) v[k] = k % 4 < R ? dot16(y, Bc[k / 4][k % 4 < R ? k % 4 : 0]) : 0;
            int idx = 0, nv = V;
            bool wr = true; /* the lane that writes sum idx (the others hold it too) */
#pragma unroll
            for (int o = LPR / 2; o >= 1; o >>= 1) {
                const bool b = sub & o;
                if (nv > 1) {
                    shfl_halve(v, nv / 2, b, o);
                    idx += b ? nv / 2 : 0;
                    nv /= 2;
                } else {
                    v[0] += __shfl_xor_sync(0xffffffffu, v[0], o);
                    wr = wr && !b;
                }
            }
            if (wr) T[(size_t)(idx / 4) * 4 * rows + 4 * row + idx % 4] = odd ? -v[0] : v[0]; /* the odd member's negative */
        }
    }
}
#endif

/* x = perturbed embedding row of the member's input token, for the rows
 * [time t0..][members] of a chunk; rz[row] = (token == 0): the state is reset
 * before that timestep. The chunk's first timestep resets every layer's state
 * here; later ones are reset by the GRU epilogue of the timestep before. */
__global__ void embed_kernel(int rows, int n, int H, int L, int r, int pshift, const int32_t *tokens, int rowlen, int t0,
                             int group, int gbase, int m0, const int8_t *E, const int8_t *noise, size_t pstride, size_t boff,
                             const uint64_t *seedep, const uint64_t *ekeys, int8_t *X, uint8_t *rz, int8_t *Hs, int hsn) {
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (row >= rows) return;
    const int m = row % n, dt = row / n;
    int g = (m0 + m) / group - gbase;
    int tok = tokens[(size_t)g * rowlen + t0 + dt];
    if (lane == 0) rz[row] = tok == 0;
    if (tok == 0 && dt == 0)
        for (int l = 0; l < L; l++)
            for (int i = lane; i < H; i += 32) Hs[((size_t)l * hsn + m) * H + i] = 0;
    const int8_t *e = E + (size_t)tok * H;
    int8_t *x = X + (size_t)row * H;
    if (!noise) {
        for (int i = lane; i < H; i += 32) x[i] = e[i];
        return;
    }
    uint32_t pair = (uint32_t)((m0 + m) >> 1);
    /* seed and epoch come from device memory so a captured graph replays every step */
    uint64_t key = ekeys ? ekeys[m >> 1] : egg_noise_key(seedep[0], (uint32_t)seedep[1], EGG_T_EMB, pair);
    int sign = (m & 1) ? -1 : 1, av[GPU_RMAX];
    for (int j = 0; j < r; j++) av[j] = sign * egg_noise(key, (uint32_t)(tok * r + j));
    const int8_t *B = noise + (size_t)(m >> 1) * pstride + boff;
    for (int i = lane; i < H; i += 32) {
        int32_t p = 0;
        for (int j = 0; j < r; j++) p += av[j] * B[(size_t)j * H + i];
        x[i] = (int8_t)egg_clip8(e[i] + (p >> pshift));
    }
}

/* a row's start in the embedding kernels (lane sub of its LPR): rz[row] = (token == 0), and at the chunk's first timestep
 * (dt 0) a token 0 resets member m's state in every layer */
template <int H, int LPR>
__device__ __forceinline__ void emb_row_start(int tok, int dt, int sub, size_t row, int m, int L, int hsn, uint8_t *rz, int8_t *Hs) {
    if (sub == 0) rz[row] = tok == 0;
    if (tok == 0 && dt == 0)
        for (int l = 0; l < L; l++)
            for (int i = sub * 4; i < H; i += 4 * LPR) *(int *)(Hs + ((size_t)l * hsn + m) * H + i) = 0;
}
/* the embedding's rank-r perturbation of a row's lane words e: p += av b for each rank (emb_acc, av = sign A_j[tok] sc), then
 * e = clip8(e + (p >> pshift)) (emb_apply). sm_90a (lanes, emb_lanes): p 2^(16 - pshift) summed (sc), so that its high half is
 * p >> pshift (|p| <= 16 * 90 * 127 < 2^18 at rank <= 16, noise values in -90..90: the sum stays below 2^30, and p >> pshift
 * fits an int16 lane); two bytes' high halves make a word of int16 lanes (one prmt), which are added to the embedding's bytes
 * and clipped two at a time (about 4 instructions a byte where the bytes one by one took about 9) */
__device__ __forceinline__ bool emb_lanes(int pshift) {
#ifdef MMP_WGMMA
    return pshift <= 16;
#else
    (void)pshift;
    return false;
#endif
}
template <int K4> __device__ __forceinline__ void emb_acc(int (&p)[K4][4], int av, const w4u (&b)[K4]) {
#pragma unroll
    for (int q = 0; q < K4; q++)
#pragma unroll
        for (int c = 0; c < 4; c++) p[q][c] += av * b[q].b[c];
}
template <int K4> __device__ __forceinline__ void emb_apply(w4u (&e)[K4], const int (&p)[K4][4], int pshift, bool lanes) {
#ifdef MMP_WGMMA
    if (lanes) {
#pragma unroll
        for (int q = 0; q < K4; q++) {
            const unsigned ew = (unsigned)e[q].w;
            e[q].w = (int)pack4(clip2_add(lo2(ew), prmt<0x7632>((unsigned)p[q][0], (unsigned)p[q][1])),
                                clip2_add(hi2(ew), prmt<0x7632>((unsigned)p[q][2], (unsigned)p[q][3])));
        }
        return;
    }
#else
    (void)lanes;
#endif
#pragma unroll
    for (int q = 0; q < K4; q++)
#pragma unroll
        for (int c = 0; c < 4; c++) e[q].b[c] = (signed char)egg_clip8(e[q].b[c] + (p[q][c] >> pshift));
}
/* embed_kernel for H = 4 K4 LPR: LPR lanes a row (32 / LPR rows a warp; a row of 128 or 256 bytes had left a
 * warp's lanes moving 4 or 8 bytes each behind a chain of dependent loads), a lane's 4 K4 bytes in word accesses
 * (K4 = 3, 5, 6, 7 only with LPR = 32: ld_words' words or pairs 128 or 256 bytes apart).
 * LN (K4 = 4: ln16_kernel's lanes): also the first layer's EGG-LN1 of the row into XN (ln16_weights' lw, lnz, lvoff,
 * lwp), so that LN does not read X back */
template <int K4, int LPR, bool LN = false>
__global__ void embed_vec_kernel(int rows, int n, int L, int r, int pshift, const int32_t *tokens, int rowlen, int t0, int group,
                                 int gbase, int m0, const int8_t *E, const int8_t *noise, size_t pstride, size_t boff,
                                 const uint64_t *seedep, const uint64_t *ekeys, int8_t *X, uint8_t *rz, int8_t *Hs, int hsn,
                                 const int8_t *lw, const int8_t *lnz, size_t lvoff, const int8_t *lwp, int8_t *XN) {
    constexpr int H = 4 * K4 * LPR;
    static_assert(!LN || K4 == 4, "the fused LN takes ln16_kernel's 16 bytes a lane");
    static_assert(words_consecutive<K4>() || LPR == 32, "K4 = 3, 5, 6, 7: 32 lanes a row");
    const int lane = threadIdx.x & 31, sub = lane % LPR;
    const int row = (blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * (32 / LPR) + lane / LPR;
    const bool in = row < rows; /* LN: the lanes of a row past the end still take part in the row sums' shuffles */
    if (!LN && !in) return;
    const int m = in ? row % n : 0, dt = row / n, off = w_off<K4>(sub);
    w4u e[K4];
    for (int q = 0; q < K4; q++) e[q].w = 0;
    int4 wl = make_int4(0, 0, 0, 0); /* LN: the row's LN1 weights, loaded first (the row's own loads are a dependent chain) */
    if constexpr (LN) wl = ln16_weights<LPR>(in, m, off, lw, lnz, pstride, lvoff, pshift, lwp);
    if (in) {
        const int g = (m0 + m) / group - gbase;
        const int tok = tokens[(size_t)g * rowlen + t0 + dt];
        emb_row_start<H, LPR>(tok, dt, sub, row, m, L, hsn, rz, Hs);
        ld_words<K4>(e, E + (size_t)tok * H + off);
        if (noise) {
            const uint32_t pair = (uint32_t)((m0 + m) >> 1);
            const uint64_t key = ekeys ? ekeys[m >> 1] : egg_noise_key(seedep[0], (uint32_t)seedep[1], EGG_T_EMB, pair);
            const int sign = (m & 1) ? -1 : 1;
            const int8_t *B = noise + (size_t)(m >> 1) * pstride + boff + off;
            const bool lanes = emb_lanes(pshift);
            const int sc = lanes ? 1 << (16 - pshift) : 1;
            int p[K4][4] = {};
            for (int j = 0; j < r; j++) {
                const int av = sign * egg_noise(key, (uint32_t)(tok * r + j)) * sc;
                w4u b[K4];
                ld_words<K4>(b, B + (size_t)j * H);
                emb_acc<K4>(p, av, b);
            }
            emb_apply<K4>(e, p, pshift, lanes);
        }
        st_words<K4>(X + (size_t)row * H + off, e);
    }
    if constexpr (LN) {
        const int4 y = ln16_apply<LPR>(make_int4(e[0].w, e[1].w, e[2].w, e[3].w), wl);
        if (in) *(int4 *)(XN + (size_t)row * H + off) = y;
    }
}

/* embed_vec_kernel<4, LPR, true> (H = 16 LPR: 128, 256, 512) walking each pair's timesteps as lnxb_kernel does: the member's
 * LN1 weights, its pair's B rows and noise key in registers, the next timestep's token and embedding row loaded under this
 * one's work, where embed_vec_kernel loads them all again for every row. Rows [time][n members], n a multiple of 128 (whole
 * warps of pairs); tsl timestep slices (EGG_CUDA_EMBWALK=0: embed_vec_kernel). CUDA only, as lnxb_kernel */
#ifdef EGG_MMP
template <int LPR>
__global__ void __launch_bounds__(256) embed_walk_kernel(int rows, int n, int L, int r, int pshift, const int32_t *tokens, int rowlen, int t0,
                                                       int group, int gbase, int m0, const int8_t *E, const int8_t *noise, size_t pstride,
                                                       size_t boff, const uint64_t *seedep, const uint64_t *ekeys, int8_t *X, uint8_t *rz,
                                                       int8_t *Hs, int hsn, const int8_t *lw, const int8_t *lnz, size_t lvoff,
                                                       const int8_t *lwp, int8_t *XN, int tsl) {
    constexpr int K4 = 4, H = 16 * LPR, RPW = 32 / LPR;
    const int lane = threadIdx.x & 31, sub = lane % LPR, off = sub * 16, tc = rows / n;
    int p, ts, odd;
    const int m = walk_slot<RPW>(n, lane / LPR, p, ts, odd);
    if (ts >= tsl || ts >= tc) return; /* whole warps (wrap is a multiple of a warp's pairs) */
    const int4 wl = ln16_weights<LPR>(true, m, off, lw, lnz, pstride, lvoff, pshift, lwp);
    const int32_t *tk = tokens + (size_t)((m0 + m) / group - gbase) * rowlen + t0;
    const bool lanes = emb_lanes(pshift);
    const int sgs = ((m & 1) ? -1 : 1) * (lanes ? 1 << (16 - pshift) : 1); /* the member's sign times emb_acc's scale */
    uint64_t key = 0;
    w4u b[GPU_RMAX][K4];
    if (noise) {
        key = ekeys ? ekeys[m >> 1] : egg_noise_key(seedep[0], (uint32_t)seedep[1], EGG_T_EMB, (uint32_t)((m0 + m) >> 1));
        const int8_t *B = noise + (size_t)(m >> 1) * pstride + boff + off;
#pragma unroll
        for (int j = 0; j < GPU_RMAX; j++)
            if (j < r) ld_words<K4>(b[j], B + (size_t)j * H);
    }
    int tok = tk[ts];
    w4u en[K4];
    ld_words<K4>(en, E + (size_t)tok * H + off);
    for (int t = ts; t < tc; t += tsl) {
        const size_t row = (size_t)t * n + m;
        const int tk0 = tok;
        w4u e[K4];
#pragma unroll
        for (int q = 0; q < K4; q++) e[q] = en[q];
        if (t + tsl < tc) {
            tok = tk[t + tsl];
            ld_words<K4>(en, E + (size_t)tok * H + off);
        }
        emb_row_start<H, LPR>(tk0, t, sub, row, m, L, hsn, rz, Hs);
        if (noise) {
            int pp[K4][4] = {};
#pragma unroll
            for (int j = 0; j < GPU_RMAX; j++)
                if (j < r) emb_acc<K4>(pp, sgs * egg_noise(key, (uint32_t)(tk0 * r + j)), b[j]);
            emb_apply<K4>(e, pp, pshift, lanes);
        }
        st_words<K4>(X + row * H + off, e);
        *(int4 *)(XN + row * H + off) = ln16_apply<LPR>(make_int4(e[0].w, e[1].w, e[2].w, e[3].w), wl);
    }
}
#endif

/* the embedding noise's key of each local pair p (global pair m0/2 + p), once per step instead of per row */
__global__ void emb_keys_kernel(int np, int m0, const uint64_t *seedep, uint64_t *keys) {
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p < np) keys[p] = egg_noise_key(seedep[0], (uint32_t)seedep[1], EGG_T_EMB, (uint32_t)((m0 >> 1) + p));
}

/* a loss kernel's start (a warp a member): EXP2 into the block's table, then the warp's member m of the part, its lane and
 * its group's token row at t0; false past the last member (after the block's barrier) */
__device__ __forceinline__ bool loss_warp(uint32_t (&exp2s)[256], int n, const int32_t *tokens, int rowlen, int t0, int group, int gbase, int m0,
                                          int &m, int &lane, const int32_t *&tk) {
    for (int i = threadIdx.x; i < 256; i += blockDim.x) exp2s[i] = EGG_EXP2[i];
    __syncthreads();
    m = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    lane = threadIdx.x & 31;
    if (m >= n) return false;
    tk = tokens + (size_t)((m0 + m) / group - gbase) * rowlen + t0;
    return true;
}
/* loss_kernel for V = 128 * K4 <= 4096 (a warp's sum of EXP2 < 2^32): word loads,
 * 32-bit sums, two timesteps per iteration, the target's logit by shuffle, and the
 * log-likelihoods of 32 timesteps computed by the 32 lanes at once */
template <int K4>
__global__ void loss_vec_kernel(int n, int tc, const int8_t *logits, const int32_t *tokens, int rowlen, int t0, int group,
                                int gbase, int m0, int32_t *scores) {
    constexpr int V = 128 * K4;
    static_assert(words_consecutive<K4>(), "a lane's words consecutive");
    __shared__ uint32_t exp2s[256];
    int m, lane;
    const int32_t *tk;
    if (!loss_warp(exp2s, n, tokens, rowlen, t0, group, gbase, m0, m, lane, tk)) return;
    int32_t sc = 0;
    for (int base = 0; base < tc; base += 32) {
        uint32_t myS = 1;
        int myl = 0;
        for (int k = 0; k < 32 && base + k < tc; k += 2) {
            const int dt = base + k;
            const bool two = dt + 1 < tc;
            w4u l0[K4], l1[K4];
            ld_words<K4>(l0, logits + ((size_t)dt * n + m) * V + lane * 4 * K4);
            if (two) ld_words<K4>(l1, logits + ((size_t)(dt + 1) * n + m) * V + lane * 4 * K4);
            const int tg0 = tk[dt + 1], tg1 = two ? tk[dt + 2] : 0;
            uint32_t S0 = 0, S1 = 0;
#pragma unroll
            for (int q = 0; q < K4; q++)
#pragma unroll
                for (int c = 0; c < 4; c++) {
                    S0 += exp2s[l0[q].b[c] + 128];
                    if (two) S1 += exp2s[l1[q].b[c] + 128];
                }
            for (int o = 16; o; o >>= 1) {
                S0 += __shfl_xor_sync(0xffffffffu, S0, o);
                S1 += __shfl_xor_sync(0xffffffffu, S1, o);
            }
            int w0 = 0, w1 = 0; /* the target's word, from the lane that holds it */
#pragma unroll
            for (int q = 0; q < K4; q++) {
                if ((tg0 >> 2) % K4 == q) w0 = l0[q].w;
                if ((tg1 >> 2) % K4 == q) w1 = two ? l1[q].w : 0;
            }
            w0 = __shfl_sync(0xffffffffu, w0, tg0 / (4 * K4));
            w1 = __shfl_sync(0xffffffffu, w1, tg1 / (4 * K4));
            if (lane == k) { myS = S0; myl = (signed char)(w0 >> (8 * (tg0 & 3))); }
            if (lane == k + 1 && two) { myS = S1; myl = (signed char)(w1 >> (8 * (tg1 & 3))); }
        }
        if (base + lane < tc) sc += egg_loglik(myl, myS);
    }
    for (int o = 16; o; o >>= 1) sc += __shfl_xor_sync(0xffffffffu, sc, o);
    if (lane == 0) scores[m] += sc;
}

/* loss_vec_kernel with a lane's partial sums of a batch's 32 timesteps held together (S[k]: timestep base + k, LB
 * timesteps' rows loaded at a time) and summed over the warp by a reduce-scatter, after which lane k holds timestep base + k's
 * sum: 31 shuffles a batch where the butterfly of each timestep took 5 (160), and the target's logit loaded by the lane
 * whose timestep it is (EGG_CUDA_LOSSRS=0: loss_vec_kernel) */
template <int K4> /* 64 registers (4 blocks an SM) and 8 rows in flight: 8 at 3 blocks, 4 rows, and 16 at 2 blocks ran slower (H200:
                   * 152, 136, 178 against 121 us a launch at EGG-256x6), 5-6 blocks or 16 rows at 4 spill */
__global__ void __launch_bounds__(256, 4) loss_rs_kernel(int n, int tc, const int8_t *logits, const int32_t *tokens, int rowlen, int t0, int group,
                                                         int gbase, int m0, int32_t *scores) {
    constexpr int V = 128 * K4, LB = 8;
    static_assert(words_consecutive<K4>(), "a lane's words consecutive");
    __shared__ uint32_t exp2s[256];
    int m, lane;
    const int32_t *tk;
    if (!loss_warp(exp2s, n, tokens, rowlen, t0, group, gbase, m0, m, lane, tk)) return;
    const int8_t *lm = logits + (size_t)m * V;
    const size_t tstride = (size_t)n * V;
    int32_t sc = 0;
    for (int base = 0; base < tc; base += 32) {
        uint32_t S[32];
#pragma unroll
        for (int g = 0; g < 32; g += LB) {
            w4u l[LB][K4];
#pragma unroll
            for (int k = 0; k < LB; k++)
                if (base + g + k < tc) ld_words<K4>(l[k], lm + (size_t)(base + g + k) * tstride + lane * 4 * K4);
#pragma unroll
            for (int k = 0; k < LB; k++) {
                uint32_t v = 0;
                if (base + g + k < tc)
#pragma unroll
                    for (int q = 0; q < K4; q++)
#pragma unroll
                        for (int c = 0; c < 4; c++) v += exp2s[l[k][q].b[c] + 128];
                S[g + k] = v;
            }
        }
        /* reduce-scatter: at step o a lane keeps the half of its 2 o sums whose index bit matches its lane bit o and adds
         * the partner's copy of that half; after o = 1, S[0] is timestep base + lane's sum over the warp */
        shfl_halve(S, 16, lane & 16, 16);
        shfl_halve(S, 8, lane & 8, 8);
        shfl_halve(S, 4, lane & 4, 4);
        shfl_halve(S, 2, lane & 2, 2);
        shfl_halve(S, 1, lane & 1, 1);
        const int dt = base + lane;
        if (dt < tc) sc += egg_loglik(lm[(size_t)dt * tstride + tk[dt + 1]], S[0]);
    }
    for (int o = 16; o; o >>= 1) sc += __shfl_xor_sync(0xffffffffu, sc, o);
    if (lane == 0) scores[m] += sc;
}

/* warp per member: add the log-likelihoods of timesteps t0..t0+tc-1 (logits [time][members][V]) */
__global__ void loss_kernel(int n, int tc, int V, const int8_t *logits, const int32_t *tokens, int rowlen, int t0, int group,
                            int gbase, int m0, int32_t *scores) {
    __shared__ uint32_t exp2s[256];
    for (int i = threadIdx.x; i < 256; i += blockDim.x) exp2s[i] = EGG_EXP2[i];
    __syncthreads();
    int m = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (m >= n) return;
    const int g = (m0 + m) / group - gbase;
    int32_t sc = 0;
    for (int dt = 0; dt < tc; dt++) {
        const int8_t *lg = logits + ((size_t)dt * n + m) * V;
        unsigned long long S = 0;
        for (int v = lane; v < V; v += 32) S += exp2s[lg[v] + 128];
        for (int off = 16; off; off >>= 1) S += __shfl_xor_sync(0xffffffffu, S, off);
        if (lane == 0) sc += egg_loglik(lg[tokens[(size_t)g * rowlen + t0 + dt + 1]], S);
    }
    if (lane == 0) scores[m] += sc;
}

/* this thread's 16 bytes of the [n][H] rows: member m, offset yi; false past the end */
__device__ __forceinline__ bool rec_chunk16(int n, int H, uint32_t &m, size_t &yi, int &o) {
    const uint32_t H16 = (uint32_t)H >> 4, i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (uint32_t)n * H16) return false;
    m = i / H16;
    o = (int)(i - m * H16) * 16;
    yi = (size_t)m * H + o;
    return true;
}
/* clip(y + e + b) of those 16 bytes: the GEMM's output y (at Y + yi), Wf.x or Wh.x e, the member's bias b */
__device__ __forceinline__ void rec_sum16(const int8_t *Y, const int8_t *E, const int8_t *bp, int bstride, uint32_t m, size_t yi, int o,
                                          int (&c)[16]) {
    bytes16 y, e, b;
    y.v = *(const int4 *)(Y + yi);
    e.v = __ldg((const int4 *)(E + yi));
    b.v = __ldg((const int4 *)(bp + (size_t)m * bstride + o));
#pragma unroll
    for (int k = 0; k < 16; k++) c[k] = egg_clip8(y.b[k] + e.b[k] + b.b[k]);
}
/* The recurrence of one timestep where its two GEMMs run as PLAIN GEMMs (EGG_CUDA_RSPLIT; the GEMMs' output y is
 * the int8 MM output clip((acc + pert) >> s), as in every mode): the rest of MODE_BIAS_GATE's and MODE_BIAS_MIX's
 * epilogues, 16 bytes of a member's row a thread. The bias row of member m is bp + m * bstride (bstride H: the
 * members' perturbed copies of the step; 0: the unperturbed vector).
 * Phase 0, in place in F (y = Uf.h there): f = clip(y + Wf.x + bf) into F, g = gate(f, h) into G. */
__global__ void rec_gate_kernel(int n, int H, int8_t *F, const int8_t *E, const int8_t *bp, int bstride, const int8_t *h, int8_t *G) {
    uint32_t m;
    size_t yi;
    int o, fc[16];
    if (!rec_chunk16(n, H, m, yi, o)) return;
    rec_sum16(F, E, bp, bstride, m, yi, o, fc);
    bytes16 hh, f, g;
    hh.v = __ldg((const int4 *)(h + yi));
#pragma unroll
    for (int k = 0; k < 16; k++) {
        const int fv = fc[k];
        f.b[k] = (signed char)fv;
        g.b[k] = (signed char)egg_gru_gate(fv, hh.b[k]);
    }
    *(int4 *)(F + yi) = f.v;
    *(int4 *)(G + yi) = g.v;
}
/* Phase 1, in place in Y (y = Uh.g there, the timestep's rows of R): c = clip(y + Wh.x + bh), h' = mix(f, c, h),
 * the state hs = h' (0 where rz: the next token is 0), Y = clip(h' + x) */
__global__ void rec_mix_kernel(int n, int H, int8_t *Y, const int8_t *E, const int8_t *bp, int bstride, const int8_t *F, int8_t *hs,
                               const int8_t *xres, const uint8_t *rz) {
    uint32_t m;
    size_t yi;
    int o, cc[16];
    if (!rec_chunk16(n, H, m, yi, o)) return;
    rec_sum16(Y, E, bp, bstride, m, yi, o, cc);
    bytes16 ff, hh, xr, out, st;
    ff.v = __ldg((const int4 *)(F + yi));
    hh.v = *(const int4 *)(hs + yi);
    xr.v = __ldg((const int4 *)(xres + yi));
    const bool reset = rz[m];
#pragma unroll
    for (int k = 0; k < 16; k++) {
        const int hp = egg_gru_mix(ff.b[k], cc[k], hh.b[k]);
        st.b[k] = reset ? 0 : (signed char)hp;
        out.b[k] = (signed char)egg_clip8(hp + xr.b[k]);
    }
    *(int4 *)(hs + yi) = st.v;
    *(int4 *)(Y + yi) = out.v;
}

/* the state rows [L][n][H] of the members whose group starts its window afresh, zeroed 16 bytes a thread (layer
 * blockIdx.y; a byte a thread with 64-bit index math had taken 0.2 ms a step at EGG-256x6) */
__global__ void reset_kernel(int n, int H16, const uint8_t *reset, int group, int gbase, int m0, int8_t *Hs) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (uint32_t)n * (uint32_t)H16) return;
    const uint32_t m = i / (uint32_t)H16;
    if (reset[(m0 + (int)m) / group - gbase]) ((int4 *)Hs)[(size_t)blockIdx.y * n * H16 + i] = make_int4(0, 0, 0, 0);
}

#endif /* EGG_ROWS_CUH */

/* egg_update.cuh — the EGGROLL update on the GPU but its vote GEMM (mmw_kernel's
 * MODE_UPDATE): the operands Lm = s A and Rm = B of every matrix from the hash or the
 * step's noise, the vectors' votes, and the threshold steps that move the int8 weights
 * (and keep their permuted copies equal).
 * Part of the CUDA backend: included once by kernels/cuda/egg_cuda.cu (one translation unit). */
#ifndef EGG_UPDATE_CUH
#define EGG_UPDATE_CUH

/* update: apply the thresholded votes Z to n weights, count changes, clear Z */
/* wp: NULL, or the permuted copy of the matrix w (K columns; wperm_dst), kept equal */
/* the step a parameter's votes z call for at threshold thr: +1, -1, or 0 where z is 0 or |z| 16 < thr */
__device__ __forceinline__ int upd_dir(int32_t z, long long thr) {
    const long long az = z < 0 ? -(long long)z : z;
    return z == 0 || az * 16 < thr ? 0 : z > 0 ? 1 : -1;
}
/* one parameter's step: w moves by 1 toward the sign of its votes z (read and zeroed) where |z| 16 >= thr; true when
 * the step happened (its new value in nw; *ch: it changed) */
__device__ __forceinline__ bool upd_step(int32_t *zp, long long thr, int8_t *w, int &nw, unsigned long long *ch) {
    const int32_t z = *zp;
    *zp = 0;
    const int d = upd_dir(z, thr);
    if (!d) return false;
    nw = egg_clip8(*w + d);
    *ch = nw != *w;
    *w = (int8_t)nw;
    return true;
}
/* the warp's changed parameters into the step's count */
__device__ __forceinline__ void upd_count(unsigned long long ch, unsigned long long *changed) {
    for (int off = 16; off; off >>= 1) ch += __shfl_xor_sync(0xffffffffu, ch, off);
    if ((threadIdx.x & 31) == 0 && ch) atomicAdd(changed, ch);
}
__global__ void upd_apply_kernel(size_t n, int32_t *Z, long long thr, int8_t *w, unsigned long long *changed, int8_t *wp, int K,
                                 int8_t *wpu) { /* wpu: NULL, or the matrix's wpermu_row copy, kept equal too */
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    unsigned long long ch = 0;
    int nw;
    if (i < n && upd_step(Z + i, thr, w + i, nw, &ch) && wp) { /* 32-bit index math: a matrix is below 2^31 bytes */
        const uint32_t o = (uint32_t)i / (uint32_t)K, k = (uint32_t)i - o * (uint32_t)K;
        wp[(size_t)wperm_dst((int)o) * K + k] = (int8_t)nw;
        if (wpu) wpu[(size_t)wpermu_dst((int)o) * K + k] = (int8_t)nw;
    }
    upd_count(ch, changed);
}

/* the last entry v of a table ordered by its first block (first(v)) whose first block is <= b: the grouped update
 * kernels' block -> matrix lookup */
template <class F> __device__ __forceinline__ int tab_last(int n, int b, F first) {
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (first(mid) <= b) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* upd_apply_kernel over every matrix at once (a launch per matrix had cost ~5 us each, 38 a step at EGG-256x6):
 * mt[v] = {its first block, its rows, its columns, bit 0: a wperm copy, bit 1: a wpermu_row copy}, ordered by first
 * block; its votes at Z + mz[v], its parameters (and copies) at + mp[v] */
__global__ void upd_mapply_kernel(int nmat, const int4 *mt, const long long *mz, const long long *mp, int32_t *Z, long long thr,
                                  int8_t *params, int8_t *wperm, int8_t *wpu, unsigned long long *changed) {
    const int lo = tab_last(nmat, (int)blockIdx.x, [&](int v) { return mt[v].x; });
    const int4 t = mt[lo];
    const uint32_t i = ((uint32_t)blockIdx.x - (uint32_t)t.x) * blockDim.x + threadIdx.x, K = (uint32_t)t.z;
    unsigned long long ch = 0;
    int nw;
    if (i < (uint32_t)t.y * K && upd_step(Z + mz[lo] + i, thr, params + mp[lo] + i, nw, &ch) && (t.w & 1)) {
        const uint32_t o = i / K, k = i - o * K;
        wperm[mp[lo] + (size_t)wperm_dst((int)o) * K + k] = (int8_t)nw;
        if (t.w & 2) wpu[mp[lo] + (size_t)wpermu_dst((int)o) * K + k] = (int8_t)nw;
    }
    upd_count(ch, changed);
}

/* upd_mapply_kernel four parameters a thread and one atomic a block (EGG_CUDA_MAPPLY4=0: that kernel): a thread takes four
 * adjacent columns of a row (every matrix's columns, offsets and votes' offsets multiples of 4, checked when the table is
 * built), its votes as one 16-byte load, zeroed only where one was set, its weights as one word, stored with the copies'
 * words only where one changed (a copy's word is the parameters' word: the copies are kept equal). mt[v].x counts blocks
 * of 4 * 256 parameters. ncu had the one-a-thread kernel at 232 us for 33 MB (DRAM 4%) */
__global__ void __launch_bounds__(256) upd_mapply4_kernel(int nmat, const int4 *mt, const long long *mz, const long long *mp, int32_t *Z,
                                                          long long thr, int8_t *params, int8_t *wperm, int8_t *wpu,
                                                          unsigned long long *changed) {
    __shared__ unsigned bsum;
    const int lo = tab_last(nmat, (int)blockIdx.x, [&](int v) { return __ldg(&mt[v].x); });
    const int4 t = __ldg(&mt[lo]);
    const uint32_t i = 4 * (((uint32_t)blockIdx.x - (uint32_t)t.x) * 256 + threadIdx.x), K = (uint32_t)t.z;
    unsigned ch = 0;
    if (i < (uint32_t)t.y * K) {
        int4 *zp = (int4 *)(Z + __ldg(&mz[lo]) + i);
        const int4 z = *zp;
        if (z.x | z.y | z.z | z.w) {
            *zp = make_int4(0, 0, 0, 0);
            const long long po = __ldg(&mp[lo]);
            unsigned *wp = (unsigned *)(params + po + i);
            const unsigned w = *wp;
            unsigned nw = w;
#pragma unroll
            for (int q = 0; q < 4; q++) {
                const int d = upd_dir((&z.x)[q], thr);
                if (d) {
                    const int ov = (int)(int8_t)(w >> 8 * q), v = egg_clip8(ov + d);
                    nw = (nw & ~(0xffu << 8 * q)) | ((unsigned)(v & 0xff) << 8 * q);
                    ch += v != ov;
                }
            }
            if (nw != w) {
                *wp = nw;
                if (t.w & 1) {
                    const uint32_t o = i / K, k = i - o * K;
                    *(unsigned *)(wperm + po + (size_t)wperm_dst((int)o) * K + k) = nw;
                    if (t.w & 2) *(unsigned *)(wpu + po + (size_t)wpermu_dst((int)o) * K + k) = nw;
                }
            }
        }
    }
    /* the block's count: 32 lanes' sums by shuffles (on a 64-wide AMD wave two halves), one shared add each, one global add */
    if (threadIdx.x == 0) bsum = 0;
    for (int off = 16; off; off >>= 1) ch += __shfl_xor_sync(0xffffffffu, ch, off);
    __syncthreads();
    if ((threadIdx.x & 31) == 0 && ch) atomicAdd(&bsum, ch);
    __syncthreads();
    if (threadIdx.x == 0 && bsum) atomicAdd(changed, (unsigned long long)bsum);
}

/* the permuted copies of the matrices (wperm_row), from the parameters */
__global__ void wperm_kernel(size_t n, int K, const int8_t *w, int8_t *wp, int up) { /* up: wpermu_row */
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) wp[i] = w[(size_t)(up ? wpermu_row((int)(i / K)) : wperm_row((int)(i / K))) * K + i % K];
}

/* update operands: Lm[o][e*r+j] = s_e * A_e[o][j], Rm[i][e*r+j] = B_e[i][j]; zero padding to Kp. An entry
 * of this rank's own pairs (plo <= pair < phi) is copied from the step's noise blob (blob: its A [r][N], B at
 * + bspan [r][K]; N and K multiples of 16, so a block's 16 rows are one aligned 16-byte load) instead of
 * hashed again; NULL blob: every entry hashed */
#define UPD_ROWS 16 /* operand rows per block */
/* the step's noise keys of every entry and tensor: keys[id * E + e] (three mix64 rounds each, once per step rather
 * than once per 16 operand rows or 32 vector elements) */
__global__ void upd_keys_kernel(int E, uint64_t seed, uint32_t epoch, const int *ek, uint64_t *keys) {
    const int e = blockIdx.x * blockDim.x + threadIdx.x, id = blockIdx.y;
    if (e < E) keys[(size_t)id * E + e] = egg_noise_key(seed, epoch, (uint32_t)id, (uint32_t)ek[e]);
}
/* row block yb of a matrix's operands (the block's 16 rows x 256 columns go out through shared memory, 16 bytes per
 * thread) */
__device__ __forceinline__ void upd_operands_block(int E, int Kp, int N, int K, int r, const uint64_t *keys, const int *ek, const int8_t *es,
                                                   const int8_t *blob, size_t pstride, size_t bspan, int plo, int phi, int8_t *Lm,
                                                   int8_t *Rm, int yb) {
    __shared__ __align__(16) int8_t T[UPD_ROWS][256];
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int e = col / r, j = col % r, r0 = yb * UPD_ROWS, r1 = min(N + K, r0 + UPD_ROWS);
    int8_t v[UPD_ROWS];
    if (e < E) {
        const int p = ek[e], sg = es[e];
        if (blob && p >= plo && p < phi) { /* this rank's pair: 16 bytes of its blob row (16 | N) */
            bytes16 ov;
            const int8_t *own = blob + (size_t)(p - plo) * pstride;
            ov.v = __ldg((const int4 *)(own + (r0 < N ? (size_t)j * N + r0 : bspan + (size_t)j * K + (r0 - N))));
#pragma unroll
            for (int q = 0; q < UPD_ROWS; q++) v[q] = (int8_t)(r0 + q < N ? sg * ov.b[q] : ov.b[q]);
        } else { /* hashed (a branch, not a select: a warp of own entries skips it): row `row` (A rows 0..N-1,
                  * then B rows) is noise index row * r + j, the rows' hash inputs a step of r golden apart */
            uint64_t z = keys[e] + (uint64_t)(r0 * r + j + 1) * EGG_GOLDEN;
            const uint64_t dz = (uint64_t)r * EGG_GOLDEN;
#pragma unroll
            for (int q = 0; q < UPD_ROWS; q++, z += dz) {
                const int nv = egg_noise_at(z);
                v[q] = (int8_t)(r0 + q < N ? sg * nv : nv);
            }
        }
    } else {
#pragma unroll
        for (int q = 0; q < UPD_ROWS; q++) v[q] = 0;
    }
#pragma unroll
    for (int q = 0; q < UPD_ROWS; q++) T[q][threadIdx.x] = r0 + q < r1 ? v[q] : (int8_t)0;
    __syncthreads();
    const int row = r0 + (threadIdx.x >> 4), c = blockIdx.x * blockDim.x + (threadIdx.x & 15) * 16; /* Kp: a multiple of 64 */
    if (row < r1 && c < Kp)
        *(int4 *)((row < N ? Lm + (size_t)row * Kp : Rm + (size_t)(row - N) * Kp) + c) = *(const int4 *)&T[threadIdx.x >> 4][(threadIdx.x & 15) * 16];
}
__global__ void upd_operands_kernel(int E, int Kp, int N, int K, int r, const uint64_t *keys, const int *ek, const int8_t *es,
                                    const int8_t *blob, size_t pstride, size_t bspan, int plo, int phi, int8_t *Lm, int8_t *Rm) {
    upd_operands_block(E, Kp, N, K, r, keys, ek, es, blob, pstride, bspan, plo, phi, Lm, Rm, (int)blockIdx.y);
}
/* every matrix's operands in one launch (a launch per matrix had cost ~2 us of start and tail each, 38 a step at
 * EGG-256x6): row block y belongs to the last matrix v with ot[v].y0 <= y */
struct UpdOpTab {
    int y0, N, K, id;   /* its first row block, shape, tensor id (its keys at keys + id E) */
    int y1;             /* its first tile row (upd_operands_t_kernel: UPD_TROWS rows) */
    long long boff;     /* its A rows in a pair's noise blob (-1: always hashed: the embedding, or N, K not multiples of 16) */
    long long arow, brow; /* its first rows in the stacked Lg, Rg */
    long long bspan;    /* a_span(r, N) */
};
__global__ void upd_operands_all_kernel(int nmat, const UpdOpTab *ot, int E, int Kp, int r, const uint64_t *keys, const int *ek,
                                        const int8_t *es, const int8_t *noise, size_t pstride, int plo, int phi, int8_t *Lg, int8_t *Rg) {
    const UpdOpTab t = ot[tab_last(nmat, (int)blockIdx.y, [&](int v) { return ot[v].y0; })];
    upd_operands_block(E, Kp, t.N, t.K, r, keys + (size_t)t.id * E, ek, es, noise && t.boff >= 0 ? noise + t.boff : NULL, pstride,
                       (size_t)t.bspan, plo, phi, Lg + (size_t)t.arow * Kp, Rg + (size_t)t.brow * Kp, (int)blockIdx.y - t.y0);
}
/* bytewise -x of four int8 lanes (SWAR subtraction from 0: no borrow crosses a byte) */
__device__ __forceinline__ uint32_t neg4(uint32_t x) { return (0x80808080u - (x & 0x7f7f7f7fu)) ^ (~x & 0x80808080u); }
/* the update operands' words of four columns (entry e = col / r, rank j = col % r, col = col0 .. col0 + 3) over 16 rows
 * from rs (< r1), w[u][g] rows 4 g .. 4 g + 3 of column u: an own pair's from its blob row (blob: the rows' start in a
 * pair's row, or NULL; rs .. rs + 15 all A or all B, as N and K are multiples of 16 where it is read), negated bytewise
 * in A rows of sign -1; else hashed. Zero where e >= E */
__device__ __forceinline__ void upd_words16(int col0, int r, int E, const int *ek, const int8_t *es, const uint64_t *kt, const int8_t *blob,
                                            size_t pstride, int plo, int phi, int rs, int r1, int N, int K, uint32_t (&w)[4][4]) {
#pragma unroll
    for (int u = 0; u < 4; u++) {
        const int col = col0 + u, e = col / r, j = col - e * r;
        w[u][0] = w[u][1] = w[u][2] = w[u][3] = 0;
        if (e >= E) continue;
        const int p = ek[e], sg = es[e];
        if (blob && p >= plo && p < phi) { /* rank j's rows j N (j K) on */
            const uint4 v = __ldg((const uint4 *)(blob + (size_t)(p - plo) * pstride + (size_t)j * (rs < N ? N : K)));
            w[u][0] = v.x; w[u][1] = v.y; w[u][2] = v.z; w[u][3] = v.w;
            if (sg < 0 && rs < N)
#pragma unroll
                for (int g = 0; g < 4; g++) w[u][g] = neg4(w[u][g]);
        } else {
            uint64_t z = kt[e] + (uint64_t)(rs * r + j + 1) * EGG_GOLDEN; /* row `row` is noise index row r + j */
            const uint64_t dz = (uint64_t)r * EGG_GOLDEN;
#pragma unroll
            for (int g = 0; g < 4; g++) {
                int v[4];
#pragma unroll
                for (int q = 0; q < 4; q++, z += dz) {
                    const int row = rs + 4 * g + q, nv = egg_noise_at(z);
                    v[q] = row < r1 ? (row < N ? sg * nv : nv) : 0;
                }
                w[u][g] = low_bytes4(v[0], v[1], v[2], v[3]);
            }
        }
    }
}
/* those words as the 16 rows' words of the four columns (4 x 4 byte transposes): row q at T[q * ld] */
__device__ __forceinline__ void upd_transpose16(const uint32_t (&w)[4][4], uint32_t *T, int ld) {
#pragma unroll
    for (int g = 0; g < 4; g++) { /* rows 4 g .. 4 g + 3 */
        const uint32_t t0 = __byte_perm(w[0][g], w[1][g], 0x5140u), t1 = __byte_perm(w[2][g], w[3][g], 0x5140u);
        const uint32_t t2 = __byte_perm(w[0][g], w[1][g], 0x7362u), t3 = __byte_perm(w[2][g], w[3][g], 0x7362u);
        T[(4 * g + 0) * ld] = __byte_perm(t0, t1, 0x5410u);
        T[(4 * g + 1) * ld] = __byte_perm(t0, t1, 0x7632u);
        T[(4 * g + 2) * ld] = __byte_perm(t2, t3, 0x5410u);
        T[(4 * g + 3) * ld] = __byte_perm(t2, t3, 0x7632u);
    }
}
/* upd_operands_all_kernel with four columns a thread (column c: entry c / r, rank c % r; RR > 0: r = RR, else rr): their
 * 16 rows each as four words (an own pair's from its blob, negated bytewise for A rows of sign -1; else hashed),
 * transposed by byte permutes into 16 words of four columns, stored to shared memory as words and written out 16 bytes
 * a thread (the one-column kernel's 16 byte stores to shared memory and per-byte sign were most of its instructions);
 * 1024 columns a block */
template <int RR>
__global__ void upd_operands4_kernel(int nmat, const UpdOpTab *ot, int E, int Kp, int rr, const uint64_t *keys, const int *ek, const int8_t *es,
                                     const int8_t *noise, size_t pstride, int plo, int phi, int8_t *Lg, int8_t *Rg) {
    const int r = RR > 0 ? RR : rr;
    __shared__ __align__(16) uint32_t T[UPD_ROWS][256];
    const UpdOpTab t = ot[tab_last(nmat, (int)blockIdx.y, [&](int v) { return ot[v].y0; })];
    const int r0 = ((int)blockIdx.y - t.y0) * UPD_ROWS, N = t.N, r1 = min(N + t.K, r0 + UPD_ROWS);
    const int8_t *blob = noise && t.boff >= 0 ? noise + t.boff + (r0 < N ? (size_t)r0 : (size_t)t.bspan + (size_t)(r0 - N)) : NULL;
    const uint64_t *kt = keys + (size_t)t.id * E;
    uint32_t w[4][4]; /* [column][word: rows 4 g .. 4 g + 3] */
    upd_words16(4 * ((int)blockIdx.x * blockDim.x + (int)threadIdx.x), r, E, ek, es, kt, blob, pstride, plo, phi, r0, r1, N, t.K, w);
    upd_transpose16(w, &T[0][threadIdx.x], 256);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 4; k++) { /* 16 rows x 64 chunks of 16 bytes */
        const int idx = k * (int)blockDim.x + (int)threadIdx.x, q = idx >> 6, c = (int)blockIdx.x * 1024 + (idx & 63) * 16, row = r0 + q;
        if (row < r1 && c < Kp)
            *(uint4 *)((row < N ? Lg + (size_t)(t.arow + row) * Kp : Rg + (size_t)(t.brow + row - N) * Kp) + c) = *(const uint4 *)&T[q][(idx & 63) * 4];
    }
}

/* upd_operands4_kernel's work in tiles of 128 operand rows x 128 columns (UPD_TROWS; the default, EGG_CUDA_OPS4=1: the
 * 16-row blocks above), so that a pair's rows are read 128 bytes at a time and the operands written 128 at a time,
 * where the 16-row blocks read 16 bytes of a pair's row apart and its 1024 columns spread a block's reads over 1024
 * pairs' rows (at rank 4 the 16-row kernel moved its 3.7 GB at ~1.9 TB/s). Warp w takes rows 16 w .. 16 w + 15 of the
 * tile (all A or all B where the blob is read: N is a multiple of 16), lane l columns 4 l .. 4 l + 3, with
 * upd_operands4_kernel's words and transposes (upd_words16, upd_transpose16); ot[].y1: a matrix's first tile row */
#define UPD_TROWS 128
template <int RR>
__global__ void __launch_bounds__(256) upd_operands_t_kernel(int nmat, const UpdOpTab *ot, int E, int Kp, int rr, const uint64_t *keys,
                                                              const int *ek, const int8_t *es, const int8_t *noise, size_t pstride, int plo,
                                                              int phi, int8_t *Lg, int8_t *Rg) {
    const int r = RR > 0 ? RR : rr;
    __shared__ __align__(16) uint32_t T[UPD_TROWS][32]; /* [row][four columns] */
    const UpdOpTab t = ot[tab_last(nmat, (int)blockIdx.y, [&](int v) { return ot[v].y1; })];
    const int N = t.N, r0 = ((int)blockIdx.y - t.y1) * UPD_TROWS, r1 = min(N + t.K, r0 + UPD_TROWS);
    const int lane = (int)threadIdx.x & 31, rs = r0 + 16 * ((int)threadIdx.x >> 5); /* the warp's first row */
    const int8_t *blob = noise && t.boff >= 0 && rs < r1 ? noise + t.boff + (rs < N ? (size_t)rs : (size_t)t.bspan + (size_t)(rs - N)) : NULL;
    const uint64_t *kt = keys + (size_t)t.id * E;
    uint32_t w[4][4]; /* [column][word: rows 4 g .. 4 g + 3 of the warp's 16] */
    if (rs < r1) upd_words16((int)blockIdx.x * 128 + 4 * lane, r, E, ek, es, kt, blob, pstride, plo, phi, rs, r1, N, t.K, w);
    else
#pragma unroll
        for (int u = 0; u < 4; u++) w[u][0] = w[u][1] = w[u][2] = w[u][3] = 0;
    upd_transpose16(w, &T[16 * ((int)threadIdx.x >> 5)][lane], 32);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < UPD_TROWS * 8 / 256; k++) { /* 128 rows x 8 chunks of 16 bytes */
        const int idx = k * 256 + (int)threadIdx.x, q = idx >> 3, c = (int)blockIdx.x * 128 + (idx & 7) * 16, row = r0 + q;
        if (row < r1 && c < Kp)
            *(uint4 *)((row < N ? Lg + (size_t)(t.arow + row) * Kp : Rg + (size_t)(t.brow + row - N) * Kp) + c) = *(const uint4 *)&T[q][(idx & 7) * 4];
    }
}

#define UPD_VEC_E 32 /* entries per block of the update's vector kernel */
#define VEC4_THREADS 64 /* upd_vecs_kernel<4>'s threads a block: 256 elements a block row, a vector at hidden 256 */
/* a vector's votes: elements i .. i + V - 1 (< n) of the block's slice of UPD_VEC_E entries (blockIdx.x) added into Z. vb:
 * NULL, or the vector's noise in the step's blob (pair p - plo's row, pstride apart): an own pair's two values are read
 * there (blob[i], blob[n + i], as noise_kernel wrote them) instead of hashed. V = 4 (upd_vecs_kernel<4>, since v147): an
 * own pair's four values of each as one word (blob rows, vector offsets and lengths multiples of 4), where a byte load an
 * element and value took 202 us a step at EGG-256x6 (ncu, H200; 141 with words) */
template <int V = 1>
__device__ __forceinline__ void upd_vec_votes(int E, int n, int i, const uint64_t *ekeys, const int8_t *es, int32_t *Z, const int *ek = NULL,
                                              const int8_t *vb = NULL, size_t pstride = 0, int plo = 0, int phi = 0) {
    const int e0 = blockIdx.x * UPD_VEC_E, e1 = min(E, e0 + UPD_VEC_E);
    __shared__ uint64_t keys[UPD_VEC_E]; /* the slice's keys, once per block */
    __shared__ int sgs[UPD_VEC_E];
    __shared__ long long own[UPD_VEC_E]; /* an own pair's row in vb, else -1 */
    for (int q = threadIdx.x; q < e1 - e0; q += blockDim.x) {
        keys[q] = ekeys[e0 + q];
        sgs[q] = es[e0 + q];
        const int p = vb ? ek[e0 + q] : -1;
        own[q] = vb && p >= plo && p < phi ? (long long)(p - plo) * (long long)pstride : -1;
    }
    __syncthreads();
    if (i >= n) return;
    int32_t z[V] = {};
    for (int e = e0; e < e1; e++) {
        const long long o = own[e - e0]; /* the same for the block's threads: no divergence */
        const int sg = sgs[e - e0];
        if (o >= 0) {
            if constexpr (V == 4) {
                const unsigned a = *(const unsigned *)(vb + o + i), b = *(const unsigned *)(vb + o + n + i);
#pragma unroll
                for (int q = 0; q < 4; q++) z[q] += sg * ((int)(int8_t)(a >> 8 * q) * (int)(int8_t)(b >> 8 * q));
            } else z[0] += sg * (int)vb[o + i] * (int)vb[o + n + i];
        } else {
            const uint64_t key = keys[e - e0];
#pragma unroll
            for (int q = 0; q < V; q++) z[q] += sg * egg_noise(key, (uint32_t)(i + q)) * egg_noise(key, (uint32_t)(n + i + q));
        }
    }
#pragma unroll
    for (int q = 0; q < V; q++)
        if (z[q]) atomicAdd(&Z[i + q], z[q]);
}
__global__ void upd_vec_kernel(int E, int n, const uint64_t *ekeys, const int8_t *es, int32_t *Z) {
    /* block (e-chunk, i-chunk): each thread one element i, a slice of UPD_VEC_E entries (entries on x: y is limited
     * to 65535); slices short enough that 16384 entries fill the GPU */
    upd_vec_votes(E, n, blockIdx.y * blockDim.x + threadIdx.x, ekeys, es, Z);
}

/* every vector tensor's update in one launch (a launch per vector had taken ~28 us each, 25 of them a step at
 * EGG-256x6, mostly launch and tail): vt[v] = {its votes' offset in Z, its length, its first block row, its tensor
 * id}, ordered by block row; block row y (V * blockDim.x elements) belongs to the last v with vt[v].z <= y. Same sums as
 * upd_vec_kernel, V elements a thread. noise: NULL, or the step's blob, vector v's noise at + vnoff[v] in a pair's row (own
 * pairs read, not hashed) */
template <int V>
__global__ void upd_vecs_kernel(int E, int nv, const int4 *vt, const uint64_t *ukeys, const int8_t *es, int32_t *Z,
                                const long long *zoff, /* zoff: NULL, or vector v's votes at Z + zoff[v] (--update allreduce) */
                                const int *ek, const int8_t *noise, const long long *vnoff, size_t pstride, int plo, int phi) {
    int v = 0;
    while (v + 1 < nv && vt[v + 1].z <= (int)blockIdx.y) v++;
    const int4 t = vt[v];
    upd_vec_votes<V>(E, t.y, V * (((int)blockIdx.y - t.z) * (int)blockDim.x + (int)threadIdx.x), ukeys + (size_t)t.w * E, es,
                     Z + (zoff ? zoff[v] : t.x), ek, noise ? noise + vnoff[v] : NULL, pstride, plo, phi);
}
/* upd_apply_kernel over every vector tensor at once: element j of the concatenation (vector v from vt[v].x) is
 * parameter voff[v] + j - vt[v].x; its vote Z[j], or with zpar (--update allreduce: Z indexed as the parameters)
 * Z[voff[v] + j - vt[v].x] */
__global__ void upd_vapply_kernel(int total, int nv, const int4 *vt, const long long *voff, int32_t *Z, long long thr, int8_t *params,
                                  unsigned long long *changed, int zpar) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long ch = 0;
    if (j < total) {
        int v = 0, nw;
        while (v + 1 < nv && vt[v + 1].x <= j) v++;
        const long long pi = voff[v] + (j - vt[v].x);
        upd_step(Z + (zpar ? pi : j), thr, params + pi, nw, &ch);
    }
    upd_count(ch, changed);
}

#endif /* EGG_UPDATE_CUH */

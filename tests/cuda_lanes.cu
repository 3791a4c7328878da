/* make test-gpu: the chunk recurrence's gate and mix on four members' bytes (rec_gate4, rec_mix4, and rec_gate4s,
 * rec_mix4s from e + b added beforehand as int16 lanes by eb_lanes, in
 * kernels/cuda/egg_lanes.cuh, int16-lane arithmetic and the products taken from packed words) against the CPU
 * reference (egg_clip8, egg_gru_gate, egg_gru_mix of src/egg_math.h), exhaustively: every int8 input of every lane;
 * the residual's clipped add on int16 lanes (add_clip4_lanes) against egg_clip8; EGG-LN's word helpers
 * (kernels/cuda/egg_ln.cuh): ln_word against egg_ln_apply for every divisor 1..127 and every pair of int8 in every
 * byte, abs_sum4w against the sum of the bytes' absolute values for every 32-bit word; the GEMMs' rank-1 epilogue
 * (kernels/cuda/egg_epi.cuh) against egg_mm_out: epi_pair_w (t A in 64 bits) for every A in -127..127 with t and the
 * accumulator spread over, and at the ends of, K = 4096's ranges, epi_pair<1> (t A in 32 bits) over K = 2048's
 * (|x| <= 127, |noise| <= 90), output shifts 7..10, perturbation shifts 4..18; the rank-4 epilogue epi_quad_r
 * (kernels/cuda/egg_lanes.cuh: p = sum_j t_j A_j) in 64 bits over K = 4096's ranges and in 32 bits over K = 512's, the
 * largest K it takes, where four equal extreme terms bring |p| nearest 2^31; epi_quad_r<2> in 32 bits over K = 1024's
 * (the fused MLP's down at hidden 256, rank 2: two extreme terms); its form at s = ps = 8 (256 v + p in 32 bits)
 * over K = 256's; and its form at s = 9, ps = 8 (epi_quad_r9: t split at 512) over K = 1024's for every int8 operand.
 * Exit 0: all equal; 1: mismatches (the first printed); 77: no sm_90 GPU to run on. */
#include <cstdio>
#include <cstdint>
#include "egg_math.h"
#include "cuda/egg_lanes.cuh"
#include "cuda/egg_ln.cuh"
#include "cuda/egg_epi.cuh"

struct Bad { unsigned long long n; int what, a, b, c, d; };

__device__ void report(Bad *bad, int what, int a, int b, int c, int d) {
    if (atomicAdd(&bad->n, 1ull) == 0) { bad->what = what; bad->a = a; bad->b = b; bad->c = c; bad->d = d; }
}
__device__ unsigned pack(const int (&v)[4]) {
    unsigned w = 0;
    for (int k = 0; k < 4; k++) w |= (unsigned)(v[k] & 0xff) << (8 * k);
    return w;
}
__device__ int byte_of(unsigned w, int k) { return (int)(signed char)(w >> (8 * k)); }
__device__ int lane_of(unsigned l, unsigned u, int k) { return (int)(short)((k < 2 ? l : u) >> (16 * (k & 1))); }

/* block (i, j), thread k, inner loop m: four values in -127..127 (i, j, k and m index them); lane q of the words gets
 * the four rotated by q, so every lane sees every combination */
__global__ void check(Bad *bad) {
    const int A = (int)blockIdx.x - 127, B = (int)blockIdx.y - 127;
    for (int C = (int)threadIdx.x - 127; C <= 127; C += blockDim.x)
        for (int D = -127; D <= 127; D++) {
            const int in[4] = {A, B, C, D};
            int v0[4], v1[4], v2[4], v3[4];
            for (int q = 0; q < 4; q++) v0[q] = in[q & 3], v1[q] = in[(q + 1) & 3], v2[q] = in[(q + 2) & 3], v3[q] = in[(q + 3) & 3];
            /* gate: y = v0 (an MM output, int16 lanes), e = v1, b = v2, h = v3 */
            const unsigned yw = pack(v0);
            unsigned p;
            const unsigned g = rec_gate4(lo2(yw), hi2(yw), pack(v1), pack(v2), pack(v3), p);
            for (int q = 0; q < 4; q++) {
                const int f = egg_clip8(v0[q] + v1[q] + v2[q]);
                if (byte_of(p, q) != (int)(signed char)(f + 127) || byte_of(g, q) != egg_gru_gate(f, v3[q])) report(bad, 0, v0[q], v1[q], v2[q], v3[q]);
            }
            /* the same from e + b + 127 as lanes (rreg_kernel at hidden 256, rank <= 1) */
            unsigned ps;
            const unsigned gs = rec_gate4s(lo2(yw), hi2(yw), eb_lanes<127, true>(pack(v1), pack(v2)), pack(v3), ps);
            for (int q = 0; q < 4; q++) {
                const int f = egg_clip8(v0[q] + v1[q] + v2[q]);
                if (byte_of(ps, q) != (int)(signed char)(f + 127) || byte_of(gs, q) != egg_gru_gate(f, v3[q]))
                    report(bad, 13, v0[q], v1[q], v2[q], v3[q]);
            }
            /* mix: c = y = v0 (e = b = 0), f = v1 (p = f + 127), h = v2, x = v3 */
            int pf[4];
            for (int q = 0; q < 4; q++) pf[q] = v1[q] + 127;
            unsigned hl, hu, r;
            rec_mix4(lo2(yw), hi2(yw), 0u, 0u, pack(pf), pack(v2), pack(v3), hl, hu, r);
            for (int q = 0; q < 4; q++) {
                const int h1 = egg_gru_mix(v1[q], v0[q], v2[q]);
                if (lane_of(hl, hu, q) != h1 || byte_of(r, q) != egg_clip8(h1 + v3[q])) report(bad, 1, v0[q], v1[q], v2[q], v3[q]);
            }
            /* the residual's add: clip8(v0 + v1) */
            const unsigned ra = add_clip4_lanes(yw, pack(v1));
            for (int q = 0; q < 4; q++)
                if (byte_of(ra, q) != egg_clip8(v0[q] + v1[q])) report(bad, 3, v0[q], v1[q], 0, 0);
            /* mix with e and b: c = clip(y + e + b) (y = v0, e = v3, b = v1), f = v2, h = v1, x = v0 */
            int pf2[4];
            for (int q = 0; q < 4; q++) pf2[q] = v2[q] + 127;
            rec_mix4(lo2(yw), hi2(yw), pack(v3), pack(v1), pack(pf2), pack(v1), yw, hl, hu, r);
            for (int q = 0; q < 4; q++) {
                const int c = egg_clip8(v0[q] + v3[q] + v1[q]), h1 = egg_gru_mix(v2[q], c, v1[q]);
                if (lane_of(hl, hu, q) != h1 || byte_of(r, q) != egg_clip8(h1 + v0[q])) report(bad, 2, v0[q], v1[q], v2[q], v3[q]);
            }
            rec_mix4s(lo2(yw), hi2(yw), eb_lanes<0, true>(pack(v3), pack(v1)), pack(pf2), pack(v1), yw, hl, hu, r);
            for (int q = 0; q < 4; q++) {
                const int c = egg_clip8(v0[q] + v3[q] + v1[q]), h1 = egg_gru_mix(v2[q], c, v1[q]);
                if (lane_of(hl, hu, q) != h1 || byte_of(r, q) != egg_clip8(h1 + v0[q])) report(bad, 14, v0[q], v1[q], v2[q], v3[q]);
            }
        }
}

/* block (d - 1, x + 128), thread w + 128: byte q of the words holds x + 64 q (wrapped to int8) and w */
__global__ void check_ln(Bad *bad) {
    const int d = (int)blockIdx.x + 1, x = (int)blockIdx.y - 128, w = (int)threadIdx.x - 128;
    int xs[4], ws[4];
    for (int q = 0; q < 4; q++) xs[q] = (int)(signed char)(x + 64 * q), ws[q] = w;
    const unsigned y = ln_word(pack(xs), pack(ws), ln_mq(d));
    for (int q = 0; q < 4; q++)
        if (byte_of(y, q) != egg_ln_apply(xs[q], ws[q], d)) report(bad, 4, xs[q], ws[q], d, byte_of(y, q));
}
/* every 32-bit word */
__global__ void check_abs(Bad *bad) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < (1ull << 32); i += (unsigned long long)gridDim.x * blockDim.x) {
        const unsigned v = (unsigned)i;
        int s = 0;
        for (int q = 0; q < 4; q++) s += abs(byte_of(v, q));
        if (abs_sum4w(v) != s) report(bad, 5, (int)v, s, abs_sum4w(v), 0);
    }
}
/* block (A + 127, shifts), thread i: t and acc at point i of 4096 across [-T, T] and [-V, V] (both ends included;
 * acc spread by a multiplicative hash), T = 127 * 90 * K and V = 127 * 127 * K, with K = 4096 for epi_pair_w and,
 * where |A| <= 90, K = 2048 for epi_pair<1>; both outputs of a pair (the second with -A and -acc) */
__global__ void check_epi(Bad *bad) {
    const int A = (int)blockIdx.x - 127, s = 7 + (int)blockIdx.y % 4, ps = 4 + (int)blockIdx.y / 4;
    const unsigned short Aw = (unsigned short)((A & 0xff) | (((-A) & 0xff) << 8));
    for (int i = (int)threadIdx.x; i < 4096; i += (int)blockDim.x)
        for (int k = 0; k < 2; k++) {
            const long long K = k ? 2048 : 4096, T = 127 * 90 * K, V = 127 * 127 * K;
            if (k && (A < -90 || A > 90)) continue;
            const int t = (int)(-T + 2 * T * i / 4095), acc = (int)((long long)((unsigned)i * 2654435761u % (unsigned)(2 * V + 1)) - V);
            const unsigned short y = k ? epi_pair<1>(acc, -acc, Aw, t, s, ps) : epi_pair_w(acc, -acc, Aw, t, s, ps);
            if ((int)(signed char)(y & 0xff) != egg_mm_out(acc, (int64_t)t * A, ps, s) ||
                (int)(signed char)(y >> 8) != egg_mm_out(-acc, (int64_t)t * -A, ps, s))
                report(bad, 6 + k, A, t, acc, 100 * s + ps);
        }
}

/* the A bytes of block a + 127 in the rank-R epilogue checks: output k of four has A_jk = a, -a, a spread over the
 * ranks, and a or 0 by rank (Aw[j]: rank j's four bytes) */
__device__ void quad_a(int a, int (&A)[4][4], unsigned (&Aw)[4]) {
    for (int j = 0; j < 4; j++) {
        A[j][0] = a;
        A[j][1] = -a;
        A[j][2] = (a * (2 * j - 3)) / 3;
        A[j][3] = j & 1 ? a : 0;
        Aw[j] = pack(A[j]);
    }
}
/* thread point i's t_j across [-T, T] (for i < 64 one t for every rank: the extreme |p| = R T |a| at both ends) */
__device__ int quad_tj(int i, int j, long long T) {
    const unsigned h = i < 64 ? (unsigned)i * 65u : ((unsigned)i * (2654435761u + 40503u * (unsigned)j)) >> 20;
    return (int)(-T + 2 * T * (long long)(h > 4095 ? 4095 : h) / 4095);
}
/* its accumulator, spread over [-V, V] by a multiplicative hash (ends: V and -V at points 1 and 2) */
__device__ int quad_acc(int i, long long V, bool ends) {
    if (ends && (i == 1 || i == 2)) return i == 1 ? (int)V : (int)-V;
    return (int)((long long)((unsigned)i * 2654435761u % (unsigned)(2 * V + 1)) - V);
}

/* epi_quad_r<4, W64>, block (a + 127, shifts), thread i: the A bytes of quad_a, t_j across [-T, T], accumulators
 * spread over [-V, V]; W64 with K = 4096 for every a, 32 bits with K = 512 where |a| <= 90, and epi_quad_r<2> in 32
 * bits with K = 1024 (the fused MLP's down at hidden 256, rank 2) where |a| <= 90 */
template <bool R9> __device__ void check_split(Bad *bad, int a, const int (&A)[4][4], const unsigned (&Aw)[4]);
__global__ void check_epi_r(Bad *bad) {
    const int a = (int)blockIdx.x - 127, s = 7 + (int)blockIdx.y % 4, ps = 4 + (int)blockIdx.y / 4;
    int A[4][4];
    unsigned Aw[4];
    quad_a(a, A, Aw);
    for (int i = (int)threadIdx.x; i < 4096; i += (int)blockDim.x)
        for (int k = 0; k < 3; k++) {
            const long long K = k == 2 ? 1024 : k ? 512 : 4096, T = 127 * 90 * K, V = 127 * 127 * K;
            const int R = k == 2 ? 2 : 4;
            if (k && (a < -90 || a > 90)) continue;
            int t[4];
            for (int j = 0; j < 4; j++) t[j] = quad_tj(i, j, T);
            const int acc = quad_acc(i, V, false);
            const int v[4] = {acc, -acc, acc / 2, -acc / 3};
            const unsigned y = k == 2 ? epi_quad_r<2, false>(v[0], v[1], v[2], v[3], {Aw[0], Aw[1]}, {t[0], t[1]}, s, ps)
                               : k    ? epi_quad_r<4, false>(v[0], v[1], v[2], v[3], Aw, t, s, ps)
                                      : epi_quad_r<4, true>(v[0], v[1], v[2], v[3], Aw, t, s, ps);
            for (int q = 0; q < 4; q++) {
                long long p = 0;
                for (int j = 0; j < R; j++) p += (long long)t[j] * A[j][q];
                if (byte_of(y, q) != egg_mm_out(v[q], p, ps, s)) report(bad, k == 2 ? 11 : 8 + k, a, t[0], acc, 1000 * (100 * s + ps) + q);
            }
        }
    if (s == 8 && ps == 8 && a >= -90 && a <= 90) check_split<false>(bad, a, A, Aw);
}
/* the dp2a forms at ranks 2-4 (ranks 0 .. R - 1 of quad_a's bytes), accumulators over [-V, V] and at both ends:
 * epi_quad_r8 (s = ps = 8) over K = 256's ranges (|t_j| <= 127 * 90 K, |a| <= 90), and epi_quad_r9 (s = 9, ps = 8)
 * over K = 1024's for any int8 operands (|t_j| <= 127 * 127 K: th_j = t_j >> 9 at its int16 extremes, every a) */
template <bool R9> __device__ void check_split(Bad *bad, int a, const int (&A)[4][4], const unsigned (&Aw)[4]) {
    const long long K = R9 ? 1024 : 256, T = 127 * (R9 ? 127 : 90) * K, V = 127 * 127 * K;
    for (int i = (int)threadIdx.x; i < 4096; i += (int)blockDim.x) {
        int t[4];
        for (int j = 0; j < 4; j++) t[j] = quad_tj(i, j, T);
        const int acc = quad_acc(i, V, true);
        const int v[4] = {acc, -acc, acc / 2, -acc / 3};
        const int4 t4 = make_int4(t[0], t[1], t[2], t[3]), ts = R9 ? t_split9(t4) : t_split(t4);
        for (int R = 2; R <= 4; R++) {
            const unsigned y = R9 ? (R == 2   ? epi_quad_r9<2>(v[0], v[1], v[2], v[3], {Aw[0], Aw[1]}, ts)
                                     : R == 3 ? epi_quad_r9<3>(v[0], v[1], v[2], v[3], {Aw[0], Aw[1], Aw[2]}, ts)
                                              : epi_quad_r9<4>(v[0], v[1], v[2], v[3], Aw, ts))
                                  : (R == 2   ? epi_quad_r8<2>(v[0], v[1], v[2], v[3], {Aw[0], Aw[1]}, ts)
                                     : R == 3 ? epi_quad_r8<3>(v[0], v[1], v[2], v[3], {Aw[0], Aw[1], Aw[2]}, ts)
                                              : epi_quad_r8<4>(v[0], v[1], v[2], v[3], Aw, ts));
            for (int q = 0; q < 4; q++) {
                long long p = 0;
                for (int j = 0; j < R; j++) p += (long long)t[j] * A[j][q];
                if (byte_of(y, q) != egg_mm_out(v[q], p, 8, R9 ? 9 : 8)) report(bad, R9 ? 12 : 10, a, t[0], acc, 10 * R + q);
            }
        }
    }
}
/* epi_quad_r9<2..4>, block a + 127: every a in -127..127 */
__global__ void check_epi_r9(Bad *bad) {
    const int a = (int)blockIdx.x - 127;
    int A[4][4];
    unsigned Aw[4];
    quad_a(a, A, Aw);
    check_split<true>(bad, a, A, Aw);
}

int main() {
    int dev = 0, n = 0;
    cudaDeviceProp prop;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0 || cudaGetDeviceProperties(&prop, dev) != cudaSuccess || prop.major != 9) {
        printf("cuda_lanes: no sm_90 GPU (the lane helpers are sm_90a code): skipped\n");
        return 77;
    }
    Bad *d, h;
    if (cudaMalloc(&d, sizeof(Bad)) != cudaSuccess) return 1;
    cudaMemset(d, 0, sizeof(Bad));
    check<<<dim3(255, 255), 256>>>(d);
    check_ln<<<dim3(127, 256), 256>>>(d);
    check_abs<<<4 * prop.multiProcessorCount, 1024>>>(d);
    check_epi<<<dim3(255, 4 * 15), 256>>>(d);
    check_epi_r<<<dim3(255, 4 * 15), 256>>>(d);
    check_epi_r9<<<255, 256>>>(d);
    const cudaError_t e = cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        printf("cuda_lanes: %s\n", cudaGetErrorString(e));
        return 1;
    }
    static const char *what[15] = {"rec_gate4", "rec_mix4", "rec_mix4 (with e, b)", "add_clip4_lanes", "ln_word (x, w, d, got)", "abs_sum4w",
                                   "epi_pair_w (A, t, acc, 100 s + ps)", "epi_pair<1> (A, t, acc, 100 s + ps)",
                                   "epi_quad_r<4> in 64 bits (a, t0, acc, 1000 (100 s + ps) + output)",
                                   "epi_quad_r<4> in 32 bits (a, t0, acc, 1000 (100 s + ps) + output)", "epi_quad_r8<R> (a, t0, acc, 10 R + output)",
                                   "epi_quad_r<2> in 32 bits at K = 1024 (a, t0, acc, 1000 (100 s + ps) + output)",
                                   "epi_quad_r9<R> (a, t0, acc, 10 R + output)", "rec_gate4s (from eb_lanes<127>)",
                                   "rec_mix4s (from eb_lanes<0>)"};
    if (h.n) {
        printf("cuda_lanes: %llu mismatches; first %s at inputs %d %d %d %d\n", h.n, what[h.what], h.a, h.b, h.c, h.d);
        return 1;
    }
    printf("cuda_lanes: rec_gate4, rec_mix4, their forms from eb_lanes (rec_gate4s, rec_mix4s), add_clip4_lanes and ln_word equal the CPU reference on every int8 input of every lane "
           "(ln_word: every divisor 1..127), abs_sum4w on every word, epi_pair_w and epi_pair<1> equal egg_mm_out over K = 4096's "
           "and K = 2048's ranges, epi_quad_r<4> over K = 4096's (64 bits) and K = 512's (32 bits), epi_quad_r<2> over K = 1024's (32 bits), "
           "epi_quad_r8<2..4> over K = 256's, epi_quad_r9<2..4> over K = 1024's (every int8 operand)\n");
    return 0;
}

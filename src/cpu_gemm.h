/* cpu_gemm.h — exact int8 GEMM for the CPU backend: out = X . W^T in int32.
 *
 * Three paths with identical results (tests hold them equal): a portable
 * scalar loop, AVX2 (vpmaddubsw on |x| and sign(w, x): products <= 127*127,
 * pair sums <= 32258, so no int16 saturation), and AVX-512 VNNI (vpdpbusd on
 * x + 128, minus 128 * column sums). The SIMD paths read W packed as
 * [N/16][K/4][16][4] so one 64-byte load feeds 16 outputs x 4 k. */
#ifndef EGG_CPU_GEMM_H
#define EGG_CPU_GEMM_H
#include <stdint.h>

typedef struct egg_packed {
    int N, K;            /* logical shape of W (N x K); K % 4 == 0 */
    int Np;              /* N rounded up to 16 */
    int8_t *w;           /* packed, 64-byte aligned */
    int32_t *colsum128;  /* 128 * sum_k W[n][k], n < Np */
    const int8_t *src;   /* row-major W (scalar path) */
} egg_packed;

/* Resolve EGG_SIMD_AUTO to the best path this CPU has; report unsupported requests. */
int egg_simd_resolve(int requested, int *resolved);
const char *egg_simd_name(int simd);

void egg_pack_init(egg_packed *p, int N, int K);
void egg_pack_fill(egg_packed *p, const int8_t *W); /* W: N x K row-major, kept as src */
void egg_pack_free(egg_packed *p);

/* out[m*ldo + n] = sum_k X[m*ldx + k] * W[n][k], for m < M, n < N (N..Np-1 may be
 * written too: ldo >= Np). X values must be in -127..127. */
void egg_gemm_s8(int simd, int M, const int8_t *X, int ldx, const egg_packed *W, int32_t *out, int ldo);

/* One perturbed (or clean) MM over M rows, fused where the path allows:
 *   acc[m][o] = X[m] . W[o]
 *   t[m][j]   = sign[m] * (X[m] . B_m[j])             (r terms; none when r == 0)
 *   p         = sum_j t[m][j] * A_m[j][o]
 *   Y[m][o]   = clip((acc + (p >> pshift)) >> s)
 * B_m: [r][K] and A_m: [r][N] int8 (the member's pair noise). */
typedef struct egg_mm_args {
    int M;
    const int8_t *X;
    int ldx;
    const egg_packed *W;
    int s, pshift, r;
    const int8_t *const *Brow;
    const int8_t *const *Arow;
    const int8_t *sign;
    int8_t *Y;
    int ldy;
    int32_t *scratch;    /* >= roundup(M,4) * Np int32 */
} egg_mm_args;
void egg_mm_s8(int simd, const egg_mm_args *a);

/* dot of two int8 vectors (length n % 32 == 0 not required). */
int32_t egg_dot_s8(const int8_t *a, const int8_t *b, int n);

#endif

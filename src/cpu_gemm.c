#define _POSIX_C_SOURCE 200809L
#include "cpu_gemm.h"
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "util.h"

const char *egg_simd_name(int simd) {
    switch (simd) {
    case EGG_SIMD_SCALAR: return "scalar";
    case EGG_SIMD_AVX2: return "avx2";
    case EGG_SIMD_AVX512: return "avx512-vnni";
    default: return "auto";
    }
}

static int have_avx2(void) { return __builtin_cpu_supports("avx2"); }
static int have_vnni(void) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512vnni");
}

int egg_simd_resolve(int req, int *out) {
    if (req == EGG_SIMD_AUTO) { *out = have_vnni() ? EGG_SIMD_AVX512 : have_avx2() ? EGG_SIMD_AVX2 : EGG_SIMD_SCALAR; return 0; }
    if (req == EGG_SIMD_AVX512 && !have_vnni()) return -1;
    if (req == EGG_SIMD_AVX2 && !have_avx2()) return -1;
    *out = req;
    return 0;
}

void egg_pack_init(egg_packed *p, int N, int K) {
    memset(p, 0, sizeof *p);
    p->N = N; p->K = K; p->Np = (N + 15) / 16 * 16;
    p->w = egg_xaligned(64, (size_t)p->Np * K);
    p->colsum128 = egg_xaligned(64, sizeof(int32_t) * p->Np);
}

void egg_pack_fill(egg_packed *p, const int8_t *W) {
    const int N = p->N, K = p->K, Q = K / 4;
    p->src = W;
    for (int nb = 0; nb < p->Np / 16; nb++)
        for (int q = 0; q < Q; q++) {
            int8_t *dst = p->w + ((size_t)nb * Q + q) * 64;
            for (int j = 0; j < 16; j++) {
                int n = nb * 16 + j;
                for (int t = 0; t < 4; t++) dst[j * 4 + t] = n < N ? W[(size_t)n * K + q * 4 + t] : 0;
            }
        }
    for (int n = 0; n < p->Np; n++) {
        int32_t s = 0;
        if (n < N) for (int k = 0; k < K; k++) s += W[(size_t)n * K + k];
        p->colsum128[n] = 128 * s;
    }
}

void egg_pack_free(egg_packed *p) {
    free(p->w);
    free(p->colsum128);
    memset(p, 0, sizeof *p);
}

/* ------------------------------------------------------------- scalar */

int32_t egg_dot_s8(const int8_t *a, const int8_t *b, int n) {
    int32_t s = 0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

static void gemm_scalar(int M, const int8_t *X, int ldx, const egg_packed *W, int32_t *out, int ldo) {
    for (int m = 0; m < M; m++)
        for (int n = 0; n < W->N; n++) out[(size_t)m * ldo + n] = egg_dot_s8(X + (size_t)m * ldx, W->src + (size_t)n * W->K, W->K);
}

/* Per-thread staging buffer: X rows padded to a multiple of 4 (zeros). */
static _Thread_local int8_t *stage_buf;
static _Thread_local size_t stage_cap;
static int8_t *stage(size_t n) {
    if (n > stage_cap) {
        free(stage_buf);
        stage_cap = n + 4096;
        stage_buf = egg_xaligned(64, stage_cap);
    }
    return stage_buf;
}

/* ------------------------------------------------------------- AVX-512 VNNI */

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
static inline void vnni_tile(int nb, const uint8_t *U, int K, const int8_t *wp, size_t wstride,
                             const int32_t *cs, int32_t *out, int ldo) {
    /* 4 rows x nb (1..4) blocks of 16 outputs. */
    __m512i acc[4][4];
    for (int i = 0; i < 4; i++)
        for (int b = 0; b < 4; b++) acc[i][b] = _mm512_setzero_si512();
    const int Q = K / 4;
    for (int q = 0; q < Q; q++) {
        __m512i w[4];
        for (int b = 0; b < nb; b++) w[b] = _mm512_load_si512((const void *)(wp + b * wstride + (size_t)q * 64));
        for (int i = 0; i < 4; i++) {
            int32_t xv;
            memcpy(&xv, U + (size_t)i * K + q * 4, 4);
            __m512i x = _mm512_set1_epi32(xv);
            for (int b = 0; b < nb; b++) acc[i][b] = _mm512_dpbusd_epi32(acc[i][b], x, w[b]);
        }
    }
    for (int b = 0; b < nb; b++) {
        __m512i c = _mm512_loadu_si512((const void *)(cs + b * 16));
        for (int i = 0; i < 4; i++) _mm512_storeu_si512((void *)(out + (size_t)i * ldo + b * 16), _mm512_sub_epi32(acc[i][b], c));
    }
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
static void gemm_vnni(int M, const int8_t *X, int ldx, const egg_packed *W, int32_t *out, int ldo) {
    const int K = W->K, NB = W->Np / 16, Mp = (M + 3) / 4 * 4;
    uint8_t *U = (uint8_t *)stage((size_t)Mp * K);
    for (int m = 0; m < Mp; m++)
        for (int k = 0; k < K; k++) U[(size_t)m * K + k] = (uint8_t)((m < M ? X[(size_t)m * ldx + k] : 0) + 128);
    const size_t wstride = (size_t)(K / 4) * 64;
    int32_t tmp[4 * 64];
    for (int nb0 = 0; nb0 < NB; nb0 += 4) {
        int nb = NB - nb0 < 4 ? NB - nb0 : 4;
        for (int m = 0; m < Mp; m += 4) {
            int rows = M - m < 4 ? M - m : 4;
            if (rows == 4) {
                /* the epilogue of some blocks reaches up to Np: ldo >= Np by contract */
                vnni_tile(nb, U + (size_t)m * K, K, W->w + nb0 * wstride, wstride, W->colsum128 + nb0 * 16,
                          out + (size_t)m * ldo + nb0 * 16, ldo);
            } else {
                vnni_tile(nb, U + (size_t)m * K, K, W->w + nb0 * wstride, wstride, W->colsum128 + nb0 * 16, tmp, 64);
                for (int i = 0; i < rows; i++) memcpy(out + (size_t)(m + i) * ldo + nb0 * 16, tmp + i * 64, sizeof(int32_t) * 16 * nb);
            }
        }
    }
}

/* ------------------------------------------------------------- AVX2 */

__attribute__((target("avx2")))
static void gemm_avx2(int M, const int8_t *X, int ldx, const egg_packed *W, int32_t *out, int ldo) {
    const int K = W->K, Q = K / 4, NB = W->Np / 16;
    const size_t wstride = (size_t)Q * 64;
    const __m256i ones = _mm256_set1_epi16(1);
    for (int nb = 0; nb < NB; nb++) {
        const int8_t *wp = W->w + nb * wstride;
        int m = 0;
        for (; m < M; m += 2) {
            int two = m + 1 < M;
            const int8_t *x0 = X + (size_t)m * ldx, *x1 = two ? x0 + ldx : x0;
            __m256i a00 = _mm256_setzero_si256(), a01 = a00, a10 = a00, a11 = a00;
            for (int q = 0; q < Q; q++) {
                __m256i wlo = _mm256_load_si256((const __m256i *)(wp + (size_t)q * 64));
                __m256i whi = _mm256_load_si256((const __m256i *)(wp + (size_t)q * 64 + 32));
                int32_t v0, v1;
                memcpy(&v0, x0 + q * 4, 4);
                memcpy(&v1, x1 + q * 4, 4);
                __m256i xb0 = _mm256_set1_epi32(v0), xb1 = _mm256_set1_epi32(v1);
                __m256i ax0 = _mm256_abs_epi8(xb0), ax1 = _mm256_abs_epi8(xb1);
                a00 = _mm256_add_epi32(a00, _mm256_madd_epi16(_mm256_maddubs_epi16(ax0, _mm256_sign_epi8(wlo, xb0)), ones));
                a01 = _mm256_add_epi32(a01, _mm256_madd_epi16(_mm256_maddubs_epi16(ax0, _mm256_sign_epi8(whi, xb0)), ones));
                a10 = _mm256_add_epi32(a10, _mm256_madd_epi16(_mm256_maddubs_epi16(ax1, _mm256_sign_epi8(wlo, xb1)), ones));
                a11 = _mm256_add_epi32(a11, _mm256_madd_epi16(_mm256_maddubs_epi16(ax1, _mm256_sign_epi8(whi, xb1)), ones));
            }
            int32_t *o0 = out + (size_t)m * ldo + nb * 16;
            _mm256_storeu_si256((__m256i *)o0, a00);
            _mm256_storeu_si256((__m256i *)(o0 + 8), a01);
            if (two) {
                _mm256_storeu_si256((__m256i *)(o0 + ldo), a10);
                _mm256_storeu_si256((__m256i *)(o0 + ldo + 8), a11);
            }
        }
    }
}

void egg_gemm_s8(int simd, int M, const int8_t *X, int ldx, const egg_packed *W, int32_t *out, int ldo) {
    if (M <= 0) return;
    switch (simd) {
    case EGG_SIMD_AVX512: gemm_vnni(M, X, ldx, W, out, ldo); break;
    case EGG_SIMD_AVX2: gemm_avx2(M, X, ldx, W, out, ldo); break;
    default: gemm_scalar(M, X, ldx, W, out, ldo); break;
    }
}

/* ------------------------------------------------- MM with epilogue */

#define HOT __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))

HOT static int32_t dot_hot(const int8_t *a, const int8_t *b, int n) {
    int32_t s = 0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}
HOT static void epi_clean(const int32_t *acc, int8_t *y, int N, int s) {
    for (int o = 0; o < N; o++) { int32_t v = acc[o] >> s; y[o] = (int8_t)(v < -127 ? -127 : v > 127 ? 127 : v); }
}
HOT static void epi_r1_32(const int32_t *acc, int8_t *y, int N, int s, int32_t t, const int8_t *A, int pshift) {
    for (int o = 0; o < N; o++) {
        int32_t v = (acc[o] + ((t * A[o]) >> pshift)) >> s;
        y[o] = (int8_t)(v < -127 ? -127 : v > 127 ? 127 : v);
    }
}
HOT static void epi_general(const int32_t *acc, int8_t *y, int N, int s, const int32_t *t, int r, const int8_t *A, int pshift) {
    for (int o = 0; o < N; o++) {
        int64_t p = 0;
        for (int j = 0; j < r; j++) p += (int64_t)t[j] * A[(size_t)j * N + o];
        int64_t v = ((int64_t)acc[o] + (p >> pshift)) >> s;
        y[o] = (int8_t)(v < -127 ? -127 : v > 127 ? 127 : v);
    }
}

/* The reference composition: GEMM to int32, then the epilogue in C. */
static void mm_generic(int simd, const egg_mm_args *a) {
    const egg_packed *W = a->W;
    const int N = W->N, K = W->K, Np = W->Np;
    egg_gemm_s8(simd, a->M, a->X, a->ldx, W, a->scratch, Np);
    for (int m = 0; m < a->M; m++) {
        const int32_t *acc = a->scratch + (size_t)m * Np;
        int8_t *y = a->Y + (size_t)m * a->ldy;
        if (a->r == 0) { epi_clean(acc, y, N, a->s); continue; }
        const int8_t *x = a->X + (size_t)m * a->ldx;
        int32_t t[16];
        for (int j = 0; j < a->r; j++) t[j] = a->sign[m] * dot_hot(x, a->Brow[m] + (size_t)j * K, K);
        if (a->r == 1 && K <= 2048) epi_r1_32(acc, y, N, a->s, t[0], a->Arow[m], a->pshift);
        else epi_general(acc, y, N, a->s, t, a->r, a->Arow[m], a->pshift);
    }
}

/* Fused AVX-512 VNNI: 4 rows x NB blocks of 16 outputs, epilogue in registers.
 * Valid when r * K <= 2048 (then p fits int32 exactly). */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"), always_inline))
static inline void vnni_mm_tile(const int NB, const uint8_t *U, int K, const int8_t *wp, size_t wstride, const int32_t *cs,
                                int rows, int s, int pshift, int r, const int32_t *t /*[4][r]*/, const int8_t *const *A,
                                int N, int o0, int8_t *Y, int ldy) {
    __m512i acc[4][4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++)
#pragma GCC unroll 4
        for (int b = 0; b < NB; b++) acc[i][b] = _mm512_setzero_si512();
    const int Q = K / 4;
    for (int q = 0; q < Q; q++) {
        __m512i w[4];
#pragma GCC unroll 4
        for (int b = 0; b < NB; b++) w[b] = _mm512_load_si512((const void *)(wp + b * wstride + (size_t)q * 64));
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            int32_t xv;
            memcpy(&xv, U + (size_t)i * K + q * 4, 4);
            __m512i x = _mm512_set1_epi32(xv);
#pragma GCC unroll 4
            for (int b = 0; b < NB; b++) acc[i][b] = _mm512_dpbusd_epi32(acc[i][b], x, w[b]);
        }
    }
    const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127);
#pragma GCC unroll 4
    for (int b = 0; b < NB; b++) {
        const int o = o0 + b * 16;
        __m512i c = _mm512_loadu_si512((const void *)(cs + b * 16));
        __mmask16 km = o + 16 <= N ? (__mmask16)0xffff : (__mmask16)((1u << (N - o)) - 1);
        for (int i = 0; i < rows; i++) {
            __m512i v = _mm512_sub_epi32(acc[i][b], c);
            if (r) {
                __m512i p = _mm512_setzero_si512();
                for (int j = 0; j < r; j++) {
                    __m128i a8 = _mm_maskz_loadu_epi8(km, A[i] + (size_t)j * N + o);
                    p = _mm512_add_epi32(p, _mm512_mullo_epi32(_mm512_cvtepi8_epi32(a8), _mm512_set1_epi32(t[i * r + j])));
                }
                v = _mm512_add_epi32(v, _mm512_srai_epi32(p, (unsigned)pshift));
            }
            v = _mm512_srai_epi32(v, (unsigned)s);
            v = _mm512_min_epi32(_mm512_max_epi32(v, lo), hi);
            _mm_mask_storeu_epi8(Y + (size_t)i * ldy + o, km, _mm512_cvtepi32_epi8(v));
        }
    }
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
static int32_t vnni_dot_u8(const uint8_t *u, const int8_t *b, int K) {
    /* sum (u - 128) * b  =  sum u*b - 128 * sum b */
    __m512i acc = _mm512_setzero_si512(), sb = _mm512_setzero_si512();
    const __m512i ones = _mm512_set1_epi8(1);
    int k = 0;
    for (; k + 64 <= K; k += 64) {
        __m512i bv = _mm512_loadu_si512((const void *)(b + k));
        acc = _mm512_dpbusd_epi32(acc, _mm512_loadu_si512((const void *)(u + k)), bv);
        sb = _mm512_dpbusd_epi32(sb, ones, bv);
    }
    int32_t s = _mm512_reduce_add_epi32(acc) - 128 * _mm512_reduce_add_epi32(sb);
    for (; k < K; k++) s += ((int32_t)u[k] - 128) * b[k];
    return s;
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
static void mm_vnni(const egg_mm_args *a) {
    const egg_packed *W = a->W;
    const int K = W->K, NB = W->Np / 16, M = a->M, Mp = (M + 3) / 4 * 4, r = a->r;
    uint8_t *U = (uint8_t *)stage((size_t)Mp * K);
    for (int m = 0; m < Mp; m++) {
        const int8_t *x = a->X + (size_t)m * a->ldx;
        uint8_t *u = U + (size_t)m * K;
        if (m >= M) { memset(u, 128, (size_t)K); continue; }
        int k = 0;
        const __m512i off = _mm512_set1_epi8((char)0x80);
        for (; k + 64 <= K; k += 64) _mm512_storeu_si512((void *)(u + k), _mm512_xor_si512(_mm512_loadu_si512((const void *)(x + k)), off));
        for (; k < K; k++) u[k] = (uint8_t)(x[k] + 128);
    }
    int32_t t[4 * 16];
    const int8_t *A[4];
    const size_t wstride = (size_t)(K / 4) * 64;
    for (int m = 0; m < M; m += 4) {
        int rows = M - m < 4 ? M - m : 4;
        for (int i = 0; i < rows; i++) {
            A[i] = r ? a->Arow[m + i] : NULL;
            for (int j = 0; j < r; j++)
                t[i * r + j] = a->sign[m + i] * vnni_dot_u8(U + (size_t)(m + i) * K, a->Brow[m + i] + (size_t)j * K, K);
        }
        int nb0 = 0;
        for (; nb0 + 4 <= NB; nb0 += 4)
            vnni_mm_tile(4, U + (size_t)m * K, K, W->w + nb0 * wstride, wstride, W->colsum128 + nb0 * 16, rows, a->s, a->pshift,
                         r, t, A, W->N, nb0 * 16, a->Y + (size_t)m * a->ldy, a->ldy);
        switch (NB - nb0) {
        case 3: vnni_mm_tile(3, U + (size_t)m * K, K, W->w + nb0 * wstride, wstride, W->colsum128 + nb0 * 16, rows, a->s, a->pshift, r, t, A, W->N, nb0 * 16, a->Y + (size_t)m * a->ldy, a->ldy); break;
        case 2: vnni_mm_tile(2, U + (size_t)m * K, K, W->w + nb0 * wstride, wstride, W->colsum128 + nb0 * 16, rows, a->s, a->pshift, r, t, A, W->N, nb0 * 16, a->Y + (size_t)m * a->ldy, a->ldy); break;
        case 1: vnni_mm_tile(1, U + (size_t)m * K, K, W->w + nb0 * wstride, wstride, W->colsum128 + nb0 * 16, rows, a->s, a->pshift, r, t, A, W->N, nb0 * 16, a->Y + (size_t)m * a->ldy, a->ldy); break;
        default: break;
        }
    }
}

void egg_mm_s8(int simd, const egg_mm_args *a) {
    if (a->M <= 0) return;
    if (simd == EGG_SIMD_AVX512 && a->r * a->W->K <= 2048 && a->r <= 16) mm_vnni(a);
    else mm_generic(simd, a);
}

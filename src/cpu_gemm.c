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
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
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

__attribute__((target("avx512f,avx512bw,avx512vnni")))
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

__attribute__((target("avx512f,avx512bw,avx512vnni")))
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

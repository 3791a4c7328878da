/* backend_cpu.c — the reference backend: exact integer EGG forward for a
 * population, and the EGGROLL update, on CPU threads (OpenMP) with SIMD GEMMs.
 *
 * Members are evaluated in tiles of whole antithetic pairs; a tile runs its
 * whole window (all timesteps, all layers) on one thread, so each weight row
 * loaded is reused by every member of the tile and no thread ever waits on
 * another. A member's result does not depend on its tile, thread or SIMD path. */
#define _GNU_SOURCE
#include <immintrin.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "backend.h"
#include "cpu_gemm.h"
#include "egg_math.h"
#include "es.h"

#define HOT __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))

typedef struct cpu_impl {
    const egg_model *m;
    int V, H, L, r, pshift, simd, threads, tile, pop, group;
    int m0, m1;
    egg_packed *pk;          /* per tensor (matrices) */
    size_t *noff, pstride;   /* per-pair noise blob layout */
    int8_t *state;           /* [(m1-m0)][L][H] */
    int8_t *sstate;          /* sampling state [L][H] */
    int maxN;                /* widest matrix output (padded) */
    int32_t *zall;           /* --update allreduce: every parameter's votes (allocated at its first step) */
} cpu_impl;

typedef egg_div16 div16;
#define div16_make egg_div16_make

/* EGG-LN over one vector (egg_ln_div / egg_ln_apply, vectorised). */
HOT static void ln_row(const int8_t *restrict x, const int8_t *restrict w, int8_t *restrict y, int H) {
    int32_t s = 0;
    for (int i = 0; i < H; i++) s += x[i] < 0 ? -x[i] : x[i];
    int32_t d = egg_ln_div(s, H);
    if (d == 1) {
        for (int i = 0; i < H; i++) { int16_t v = (int16_t)(x[i] * w[i]); y[i] = (int8_t)(v < -127 ? -127 : v > 127 ? 127 : v); }
        return;
    }
    div16 dv = div16_make(d);
    const uint16_t M = dv.M;
    const int j = dv.j;
    for (int i = 0; i < H; i++) {
        int16_t p = (int16_t)(x[i] * w[i]);
        uint16_t a = (uint16_t)(p < 0 ? -p : p);
        uint16_t q = (uint16_t)((uint16_t)(((uint32_t)a * M) >> 16) >> j);
        int16_t v = (int16_t)(q > 127 ? 127 : q);
        y[i] = (int8_t)(p < 0 ? -v : v);
    }
}

/* Noise blob of one pair: per tensor, matrices hold A as [r][out] then B as
 * [r][in] (the embedding holds only B: its A rows are drawn per token);
 * vectors hold n1[n] then n2[n]. */
static void layout_noise(cpu_impl *c) {
    const egg_model *m = c->m;
    c->noff = egg_xcalloc((size_t)m->ntensors, sizeof(size_t));
    size_t off = 0;
    for (int id = 0; id < m->ntensors; id++) {
        const egg_tensor *t = &m->t[id];
        c->noff[id] = off;
        if (t->kind == EGG_T_VEC) off += 2 * (size_t)t->rows;
        else if (id == EGG_T_EMB) off += (size_t)c->r * t->cols;
        else off += (size_t)c->r * (t->rows + t->cols);
        off = (off + 63) & ~(size_t)63;
    }
    c->pstride = off;
}

static void gen_pair_noise(const cpu_impl *c, uint64_t seed, uint32_t epoch, uint32_t pair, int8_t *blob) {
    const egg_model *m = c->m;
    const int r = c->r;
    for (int id = 0; id < m->ntensors; id++) {
        const egg_tensor *t = &m->t[id];
        uint64_t key = egg_noise_key(seed, epoch, (uint32_t)id, pair);
        int8_t *p = blob + c->noff[id];
        if (t->kind == EGG_T_VEC) {
            int n = t->rows;
            for (int i = 0; i < 2 * n; i++) p[i] = (int8_t)egg_noise(key, (uint32_t)i);
            continue;
        }
        int N = t->rows, K = t->cols;
        int8_t *A = p, *B = p + (size_t)r * N;
        if (id == EGG_T_EMB) B = p;
        else
            for (int o = 0; o < N; o++)
                for (int j = 0; j < r; j++) A[(size_t)j * N + o] = (int8_t)egg_noise(key, (uint32_t)(o * r + j));
        for (int i = 0; i < K; i++)
            for (int j = 0; j < r; j++) B[(size_t)j * K + i] = (int8_t)egg_noise(key, (uint32_t)(N * r + i * r + j));
    }
}

/* Scratch of one tile. */
typedef struct tile_buf {
    int8_t *X, *R, *XN, *F, *G, *C, *U, *T1, *T2, *logits;
    int32_t *acc;
    int8_t *noise;   /* [pairs][pstride] */
    int8_t *vecs;    /* [members][nvec][H] perturbed vectors */
} tile_buf;

static void tile_alloc(const cpu_impl *c, tile_buf *b, int nm, int noisy) {
    int H = c->H, nmp = (nm + 3) / 4 * 4;
    size_t h = (size_t)nmp * H;
    b->X = egg_xaligned(64, h); b->R = egg_xaligned(64, h); b->XN = egg_xaligned(64, h);
    b->F = egg_xaligned(64, h); b->G = egg_xaligned(64, h); b->C = egg_xaligned(64, h);
    b->T1 = egg_xaligned(64, h); b->T2 = egg_xaligned(64, h);
    b->U = egg_xaligned(64, 4 * h);
    b->logits = egg_xaligned(64, (size_t)nmp * (c->V + 16));
    b->acc = egg_xaligned(64, sizeof(int32_t) * nmp * (size_t)c->maxN);
    b->noise = noisy ? egg_xaligned(64, (size_t)((nm + 1) / 2) * c->pstride) : NULL;
    b->vecs = noisy ? egg_xaligned(64, (size_t)nm * (4 * c->L + 1) * H) : NULL;
}
static void tile_free(tile_buf *b) {
    free(b->X); free(b->R); free(b->XN); free(b->F); free(b->G); free(b->C);
    free(b->T1); free(b->T2); free(b->U); free(b->logits); free(b->acc); free(b->noise); free(b->vecs);
}

/* Vector slot of tensor id within a member's perturbed-vector block. */
static int vec_slot(const cpu_impl *c, int id) {
    if (id == EGG_T_LNOUT(c->L)) return 4 * c->L;
    int l = (id - 1) / EGG_L_N, k = (id - 1) % EGG_L_N;
    int s = k == EGG_L_LN1 ? 0 : k == EGG_L_BF ? 1 : k == EGG_L_BH ? 2 : 3;
    return 4 * l + s;
}

static const int8_t *vec_of(const cpu_impl *c, const tile_buf *b, int noisy, int mi, int id) {
    if (!noisy) return egg_tensor_ptr(c->m, id);
    return b->vecs + ((size_t)mi * (4 * c->L + 1) + vec_slot(c, id)) * c->H;
}

/* Y[nm][N] = MM_id(X[nm][K]) with each member's perturbation when noisy. */
static void mm(const cpu_impl *c, tile_buf *b, int id, int nm, const int8_t *X, int8_t *Y, int noisy) {
    const egg_tensor *t = &c->m->t[id];
    const int N = t->rows, K = t->cols;
    const int8_t *Arow[64], *Brow[64];
    int8_t sign[64];
    if (noisy)
        for (int mi = 0; mi < nm; mi++) {
            Arow[mi] = b->noise + (size_t)(mi / 2) * c->pstride + c->noff[id];
            Brow[mi] = Arow[mi] + (size_t)c->r * N;
            sign[mi] = (int8_t)((mi & 1) ? -1 : 1);
        }
    egg_mm_args a = {nm, X, K, &c->pk[id], egg_mm_shift((uint32_t)K), c->pshift, noisy ? c->r : 0,
                     Brow, Arow, sign, Y, N, b->acc};
    egg_mm_s8(c->simd, &a);
}

HOT static void add3_clip(const int8_t *restrict a, const int8_t *restrict b, const int8_t *restrict bias, int8_t *restrict y, int n) {
    for (int i = 0; i < n; i++) { int16_t v = (int16_t)(a[i] + b[i] + bias[i]); y[i] = (int8_t)(v < -127 ? -127 : v > 127 ? 127 : v); }
}
HOT static void add2_clip(const int8_t *restrict a, const int8_t *restrict b, int8_t *restrict y, int n) {
    for (int i = 0; i < n; i++) { int16_t v = (int16_t)(a[i] + b[i]); y[i] = (int8_t)(v < -127 ? -127 : v > 127 ? 127 : v); }
}
/* egg_gru_gate / egg_gru_mix, vectorised in 16-bit lanes (|products| < 2^16 fit int32 only
 * for mix: (f+127)*(c-h) <= 254*254, so mix widens to int32). */
HOT static void gate(const int8_t *restrict f, const int8_t *restrict h, int8_t *restrict g, int n) {
    for (int i = 0; i < n; i++) g[i] = (int8_t)(((int16_t)(f[i] + 127) * h[i]) >> 8);
}
HOT static void mix(const int8_t *restrict f, const int8_t *restrict cc, const int8_t *restrict h, int8_t *restrict y, int n) {
    for (int i = 0; i < n; i++) {
        int32_t v = h[i] + (((f[i] + 127) * (cc[i] - h[i])) >> 8);
        y[i] = (int8_t)(v < -127 ? -127 : v > 127 ? 127 : v);
    }
}

/* AVX-512BW versions of the element-wise ops (H % 32 == 0), 32 lanes of int16.
 * Same integer results as the loops above; tests compare the paths. */
#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
AVX512 static inline __m512i ld16(const int8_t *p) { return _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)p)); }
AVX512 static inline void st16(int8_t *p, __m512i v) {
    v = _mm512_min_epi16(_mm512_max_epi16(v, _mm512_set1_epi16(-127)), _mm512_set1_epi16(127));
    _mm256_storeu_si256((__m256i *)p, _mm512_cvtepi16_epi8(v));
}
AVX512 static void ln_row_512(const int8_t *x, const int8_t *w, int8_t *y, int H) {
    __m256i acc = _mm256_setzero_si256();
    for (int i = 0; i < H; i += 32)
        acc = _mm256_add_epi64(acc, _mm256_sad_epu8(_mm256_abs_epi8(_mm256_loadu_si256((const __m256i *)(x + i))), _mm256_setzero_si256()));
    int64_t t[4];
    _mm256_storeu_si256((__m256i *)t, acc);
    int32_t d = egg_ln_div((int32_t)(t[0] + t[1] + t[2] + t[3]), H);
    if (d == 1) {
        for (int i = 0; i < H; i += 32) st16(y + i, _mm512_mullo_epi16(ld16(x + i), ld16(w + i)));
        return;
    }
    div16 dv = div16_make(d);
    const __m512i M = _mm512_set1_epi16((short)dv.M);
    const __m128i j = _mm_cvtsi32_si128(dv.j);
    for (int i = 0; i < H; i += 32) {
        __m512i p = _mm512_mullo_epi16(ld16(x + i), ld16(w + i));
        __m512i q = _mm512_srl_epi16(_mm512_mulhi_epu16(_mm512_abs_epi16(p), M), j);
        __mmask32 neg = _mm512_cmplt_epi16_mask(p, _mm512_setzero_si512());
        st16(y + i, _mm512_mask_sub_epi16(q, neg, _mm512_setzero_si512(), q));
    }
}
AVX512 static void add3_512(const int8_t *a, const int8_t *b, const int8_t *c, int8_t *y, int n) {
    for (int i = 0; i < n; i += 32) st16(y + i, _mm512_add_epi16(_mm512_add_epi16(ld16(a + i), ld16(b + i)), ld16(c + i)));
}
AVX512 static void add2_512(const int8_t *a, const int8_t *b, int8_t *y, int n) {
    for (int i = 0; i < n; i += 32) st16(y + i, _mm512_add_epi16(ld16(a + i), ld16(b + i)));
}
AVX512 static void gate_512(const int8_t *f, const int8_t *h, int8_t *g, int n) {
    const __m512i k = _mm512_set1_epi16(127);
    for (int i = 0; i < n; i += 32)
        st16(g + i, _mm512_srai_epi16(_mm512_mullo_epi16(_mm512_add_epi16(ld16(f + i), k), ld16(h + i)), 8));
}
AVX512 static void mix_512(const int8_t *f, const int8_t *cc, const int8_t *h, int8_t *y, int n) {
    const __m512i k = _mm512_set1_epi16(127);
    for (int i = 0; i < n; i += 32) {
        __m512i hv = ld16(h + i), a = _mm512_add_epi16(ld16(f + i), k), b = _mm512_sub_epi16(ld16(cc + i), hv);
        /* (a*b) >> 8 of the 32-bit product, from its high and low 16-bit halves */
        __m512i r = _mm512_or_si512(_mm512_slli_epi16(_mm512_mulhi_epi16(a, b), 8), _mm512_srli_epi16(_mm512_mullo_epi16(a, b), 8));
        st16(y + i, _mm512_add_epi16(hv, r));
    }
}
#define LN_ROW(c, x, w, y, H) ((c)->simd == EGG_SIMD_AVX512 ? ln_row_512(x, w, y, H) : ln_row(x, w, y, H))
#define ADD3(c, a, b, d, y, n) ((c)->simd == EGG_SIMD_AVX512 ? add3_512(a, b, d, y, n) : add3_clip(a, b, d, y, n))
#define ADD2(c, a, b, y, n) ((c)->simd == EGG_SIMD_AVX512 ? add2_512(a, b, y, n) : add2_clip(a, b, y, n))
#define GATE(c, f, h, g, n) ((c)->simd == EGG_SIMD_AVX512 ? gate_512(f, h, g, n) : gate(f, h, g, n))
#define MIX(c, f, cc, h, y, n) ((c)->simd == EGG_SIMD_AVX512 ? mix_512(f, cc, h, y, n) : mix(f, cc, h, y, n))

/* Log-likelihood of target under int8 logits. */
static int32_t loglik(const int8_t *lg, int V, int target) {
    uint64_t S = 0;
    for (int v = 0; v < V; v++) S += EGG_EXP2[lg[v] + 128];
    return egg_loglik(lg[target], S);
}

/* Embedding row of token tok for member mi (perturbed if noisy). */
static void embed(const cpu_impl *c, const tile_buf *b, int noisy, int mi, uint64_t seed, uint32_t epoch, uint32_t pair,
                  int tok, int8_t *x) {
    const int H = c->H, r = c->r;
    const int8_t *E = egg_tensor_ptr(c->m, EGG_T_EMB) + (size_t)tok * H;
    if (!noisy) { memcpy(x, E, (size_t)H); return; }
    uint64_t key = egg_noise_key(seed, epoch, EGG_T_EMB, pair);
    const int8_t *B = b->noise + (size_t)(mi / 2) * c->pstride + c->noff[EGG_T_EMB];
    int sign = (mi & 1) ? -1 : 1;
    int32_t a[16];
    for (int j = 0; j < r; j++) a[j] = sign * egg_noise(key, (uint32_t)(tok * r + j));
    for (int i = 0; i < H; i++) {
        int32_t p = 0;
        for (int j = 0; j < r; j++) p += a[j] * B[(size_t)j * H + i];
        x[i] = (int8_t)egg_clip8(E[i] + (p >> c->pshift));
    }
}

/* Run nm members (first global member gm0, even) over T timesteps.
 * tok(mi, t) gives inputs; targets at t+1. state: [nm][L][H]. */
typedef struct tile_job {
    int nm, gm0, T, noisy;
    uint64_t seed;
    uint32_t epoch;
    const int32_t *tokens;  /* row per member: via rowof */
    const int32_t *const *rows; /* rows[mi] -> T+1 tokens */
    int8_t *state;
    int32_t *scores;
} tile_job;

static void run_tile(const cpu_impl *c, tile_buf *b, const tile_job *j) {
    const egg_model *m = c->m;
    const int H = c->H, L = c->L, V = c->V, nm = j->nm;
    if (j->noisy) {
        for (int p = 0; p < (nm + 1) / 2; p++) gen_pair_noise(c, j->seed, j->epoch, (uint32_t)(j->gm0 / 2 + p), b->noise + (size_t)p * c->pstride);
        /* perturbed vectors per member */
        for (int mi = 0; mi < nm; mi++) {
            int sign = (mi & 1) ? -1 : 1;
            for (int id = 1; id < m->ntensors; id++) {
                if (m->t[id].kind != EGG_T_VEC) continue;
                const int8_t *w = egg_tensor_ptr(m, id);
                const int8_t *n1 = b->noise + (size_t)(mi / 2) * c->pstride + c->noff[id], *n2 = n1 + H;
                int8_t *dst = b->vecs + ((size_t)mi * (4 * L + 1) + vec_slot(c, id)) * H;
                for (int i = 0; i < H; i++) dst[i] = (int8_t)egg_vec_pert(w[i], n1[i], n2[i], sign, c->pshift);
            }
        }
    }
    for (int mi = 0; mi < nm; mi++) j->scores[mi] = 0;
    for (int t = 0; t < j->T; t++) {
        for (int mi = 0; mi < nm; mi++) {
            int tok = j->rows[mi][t];
            if (tok == 0) memset(j->state + (size_t)mi * L * H, 0, (size_t)L * H);
            embed(c, b, j->noisy, mi, j->seed, j->epoch, (uint32_t)((j->gm0 + mi) / 2), tok, b->X + (size_t)mi * H);
        }
        for (int l = 0; l < L; l++) {
            const int id0 = EGG_T_LAYER(l, 0);
            /* T2 = this layer's state h; XN = LN1(x); x itself is the residual */
            for (int mi = 0; mi < nm; mi++) {
                memcpy(b->T2 + (size_t)mi * H, j->state + ((size_t)mi * L + l) * H, (size_t)H);
                LN_ROW(c, b->X + (size_t)mi * H, vec_of(c, b, j->noisy, mi, id0 + EGG_L_LN1), b->XN + (size_t)mi * H, H);
            }
            mm(c, b, id0 + EGG_L_WF, nm, b->XN, b->T1, j->noisy);
            mm(c, b, id0 + EGG_L_UF, nm, b->T2, b->C, j->noisy);
            for (int mi = 0; mi < nm; mi++) {
                size_t o = (size_t)mi * H;
                ADD3(c, b->T1 + o, b->C + o, vec_of(c, b, j->noisy, mi, id0 + EGG_L_BF), b->F + o, H); /* f */
                GATE(c, b->F + o, b->T2 + o, b->G + o, H);                                                 /* g */
            }
            mm(c, b, id0 + EGG_L_WH, nm, b->XN, b->T1, j->noisy);
            mm(c, b, id0 + EGG_L_UH, nm, b->G, b->C, j->noisy);
            for (int mi = 0; mi < nm; mi++) {
                size_t o = (size_t)mi * H;
                ADD3(c, b->T1 + o, b->C + o, vec_of(c, b, j->noisy, mi, id0 + EGG_L_BH), b->G + o, H); /* c */
                MIX(c, b->F + o, b->G + o, b->T2 + o, b->XN + o, H);                                       /* h' */
                memcpy(j->state + ((size_t)mi * L + l) * H, b->XN + o, (size_t)H);
                ADD2(c, b->XN + o, b->X + o, b->R + o, H);                                            /* x = h' + r */
                LN_ROW(c, b->R + o, vec_of(c, b, j->noisy, mi, id0 + EGG_L_LN2), b->XN + o, H);
            }
            mm(c, b, id0 + EGG_L_UP, nm, b->XN, b->U, j->noisy);
            mm(c, b, id0 + EGG_L_DOWN, nm, b->U, b->C, j->noisy);
            for (int mi = 0; mi < nm; mi++) {
                size_t o = (size_t)mi * H;
                ADD2(c, b->C + o, b->R + o, b->X + o, H);                                             /* x = mlp + r */
            }
        }
        for (int mi = 0; mi < nm; mi++)
            LN_ROW(c, b->X + (size_t)mi * H, vec_of(c, b, j->noisy, mi, EGG_T_LNOUT(L)), b->XN + (size_t)mi * H, H);
        mm(c, b, EGG_T_HEAD(L), nm, b->XN, b->logits, j->noisy);
        for (int mi = 0; mi < nm; mi++) j->scores[mi] += loglik(b->logits + (size_t)mi * V, V, j->rows[mi][t + 1]);
    }
}

static int cpu_eval(egg_backend *be, const egg_step_ctx *ctx, int32_t *scores, egg_err *err) {
    (void)err;
    cpu_impl *c = be->impl;
    const int n = ctx->m1 - ctx->m0, T = ctx->seq, L = c->L, H = c->H;
    /* reset flags apply to whole groups at the window start */
    for (int mi = 0; mi < n; mi++) {
        int g = (ctx->m0 + mi) / ctx->group - ctx->g0;
        if (ctx->reset[g]) memset(c->state + (size_t)mi * L * H, 0, (size_t)L * H);
    }
    const int ntiles = (n + c->tile - 1) / c->tile;
#pragma omp parallel num_threads(c->threads)
    {
        tile_buf b;
        tile_alloc(c, &b, c->tile, 1);
        const int32_t **rows = egg_xmalloc(sizeof(int32_t *) * (size_t)c->tile);
#pragma omp for schedule(dynamic, 1)
        for (int ti = 0; ti < ntiles; ti++) {
            int a = ti * c->tile, nm = n - a < c->tile ? n - a : c->tile;
            for (int mi = 0; mi < nm; mi++) {
                int g = (ctx->m0 + a + mi) / ctx->group - ctx->g0;
                rows[mi] = ctx->tokens + (size_t)g * (T + 1);
            }
            tile_job j = {nm, ctx->m0 + a, T, 1, ctx->seed, ctx->epoch, ctx->tokens, rows,
                          c->state + (size_t)a * L * H, scores + a};
            run_tile(c, &b, &j);
        }
        free(rows);
        tile_free(&b);
    }
    return 0;
}

static int cpu_eval_clean(egg_backend *be, int n, int len, const int32_t *tokens, int32_t *scores, egg_err *err) {
    (void)err;
    cpu_impl *c = be->impl;
    const int L = c->L, H = c->H;
    const int ntiles = (n + c->tile - 1) / c->tile;
#pragma omp parallel num_threads(c->threads)
    {
        tile_buf b;
        tile_alloc(c, &b, c->tile, 0);
        const int32_t **rows = egg_xmalloc(sizeof(int32_t *) * (size_t)c->tile);
        int8_t *st = egg_xaligned(64, (size_t)c->tile * L * H);
#pragma omp for schedule(dynamic, 1)
        for (int ti = 0; ti < ntiles; ti++) {
            int a = ti * c->tile, nm = n - a < c->tile ? n - a : c->tile;
            for (int mi = 0; mi < nm; mi++) rows[mi] = tokens + (size_t)(a + mi) * (len + 1);
            memset(st, 0, (size_t)c->tile * L * H);
            tile_job j = {nm, 0, len, 0, 0, 0, tokens, rows, st, scores + a};
            run_tile(c, &b, &j);
        }
        free(st);
        free(rows);
        tile_free(&b);
    }
    return 0;
}

static int cpu_sample_step(egg_backend *be, int token, int reset, int8_t *logits, egg_err *err) {
    (void)err;
    cpu_impl *c = be->impl;
    if (reset) memset(c->sstate, 0, (size_t)c->L * c->H);
    tile_buf b;
    tile_alloc(c, &b, 1, 0);
    int32_t row[2] = {token, 0}, score;
    const int32_t *rows[1] = {row};
    tile_job j = {1, 0, 1, 0, 0, 0, row, rows, c->sstate, &score};
    run_tile(c, &b, &j);
    memcpy(logits, b.logits, (size_t)c->V);
    tile_free(&b);
    return 0;
}

/* ------------------------------------------------------------- update */

/* the smallest |z| that moves a weight: z != 0 and 16 |z| >= thr (thr >= 0) */
static uint64_t vote_min(int64_t thr) {
    const int64_t t = (thr + 15) / 16;
    return t < 1 ? 1 : (uint64_t)t;
}
/* n parameters' EGGROLL step from their vote sums: w moves by sign(z), then clips, where |z| >= zmin (vote_min);
 * returns how many changed. Branch-free, so the compiler vectorises it. */
HOT static int64_t apply_votes(int8_t *restrict w, const int32_t *restrict z, size_t n, uint64_t zmin) {
    if (zmin > 0x80000000ull) return 0; /* no int32 reaches it */
    const uint32_t t = (uint32_t)zmin;
    int ch = 0; /* n < 2^31: a tensor or a row */
#pragma omp simd reduction(+ : ch)
    for (size_t i = 0; i < n; i++) {
        const int32_t v = z[i];
        const uint32_t a = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
        const int mv = a >= t ? (v > 0 ? 1 : -1) : 0, o = w[i];
        int nw = o + mv;
        nw = mv == 0 ? o : nw > 127 ? 127 : nw < -127 ? -127 : nw;
        ch += nw != o;
        w[i] = (int8_t)nw;
    }
    return ch;
}

/* Z = sum_e s_e * A_{k_e} B_{k_e}^T per matrix (an int8 GEMM over the entries), sum_e s_e * n1 * n2 per vector.
 * Replicated (vs NULL): each 32-row block of Z is applied as it is made. --update allreduce: every parameter's Z
 * goes into one array, summed over the ranks (vs->sum), then applied. */
static int cpu_update(egg_backend *be, egg_model *m, uint64_t seed, uint32_t epoch, const int8_t *fit, int tau,
                      const egg_vote_sum *vs, egg_update_stats *st, egg_err *err) {
    cpu_impl *c = be->impl;
    const int P = c->pop / 2, r = c->r;
    /* one entry per unit of |f|: Z = sum_e s_e * A_{k_e} B_{k_e}^T */
    int *ek = egg_xmalloc(sizeof(int) * (size_t)(2 * P + 1));
    int8_t *es = egg_xmalloc((size_t)(2 * P + 1));
    const int E = egg_update_entries(fit, P, ek, es);
    const uint64_t zmin = vote_min(egg_vote_threshold(tau, P));
    int64_t changed = 0;
    if (vs && !c->zall) c->zall = egg_xaligned(64, sizeof(int32_t) * (m->nparams ? m->nparams : 1));
    int32_t *Zall = vs ? c->zall : NULL; /* every parameter's votes (--update allreduce) */
    const int Kp = (E * r + 3) / 4 * 4 > 0 ? (E * r + 3) / 4 * 4 : 4;
    for (int id = 0; id < m->ntensors; id++) {
        const egg_tensor *t = &m->t[id];
        int8_t *w = egg_tensor_ptr(m, id);
        int32_t *Zt = Zall ? Zall + t->off : NULL;
        if (t->kind == EGG_T_VEC) {
            const int n = t->rows;
            int64_t ch = 0;
#pragma omp parallel for num_threads(c->threads) reduction(+ : ch) schedule(static)
            for (int i = 0; i < n; i++) {
                int32_t z = 0;
                for (int e = 0; e < E; e++) {
                    uint64_t key = egg_noise_key(seed, epoch, (uint32_t)id, (uint32_t)ek[e]);
                    z += es[e] * egg_noise(key, (uint32_t)i) * egg_noise(key, (uint32_t)(n + i));
                }
                if (Zt) Zt[i] = z;
                else ch += apply_votes(&w[i], &z, 1, zmin);
            }
            changed += ch;
            continue;
        }
        if (Zt && E == 0) { /* no votes of this rank's */
            memset(Zt, 0, sizeof(int32_t) * t->size);
            continue;
        }
        const int N = t->rows, K = t->cols;
        /* Lm[o][e*r+j] = s_e * A_e[o][j];  Rm[i][e*r+j] = B_e[i][j] */
        int8_t *Lm = egg_xaligned(64, (size_t)N * Kp), *Rm = egg_xaligned(64, (size_t)K * Kp);
#pragma omp parallel for num_threads(c->threads) schedule(static)
        for (int e = 0; e < E; e++) {
            uint64_t key = egg_noise_key(seed, epoch, (uint32_t)id, (uint32_t)ek[e]);
            for (int o = 0; o < N; o++)
                for (int j = 0; j < r; j++) Lm[(size_t)o * Kp + e * r + j] = (int8_t)(es[e] * egg_noise(key, (uint32_t)(o * r + j)));
            for (int i = 0; i < K; i++)
                for (int j = 0; j < r; j++) Rm[(size_t)i * Kp + e * r + j] = (int8_t)egg_noise(key, (uint32_t)(N * r + i * r + j));
        }
        egg_packed pr;
        egg_pack_init(&pr, K, Kp);
        egg_pack_fill(&pr, Rm);
        const int CH = 32, nch = (N + CH - 1) / CH;
        int64_t ch = 0;
#pragma omp parallel num_threads(c->threads) reduction(+ : ch)
        {
            int32_t *Z = egg_xaligned(64, sizeof(int32_t) * (CH + 3) * (size_t)pr.Np);
#pragma omp for schedule(dynamic, 1)
            for (int cI = 0; cI < nch; cI++) {
                int o0 = cI * CH, rows = N - o0 < CH ? N - o0 : CH;
                egg_gemm_s8(c->simd, rows, Lm + (size_t)o0 * Kp, Kp, &pr, Z, pr.Np);
                for (int oo = 0; oo < rows; oo++) {
                    const int32_t *zr = Z + (size_t)oo * pr.Np;
                    if (Zt) {
                        memcpy(Zt + (size_t)(o0 + oo) * K, zr, sizeof(int32_t) * (size_t)K);
                        continue;
                    }
                    ch += apply_votes(w + (size_t)(o0 + oo) * K, zr, (size_t)K, zmin);
                }
            }
            free(Z);
        }
        changed += ch;
        egg_pack_free(&pr);
        free(Lm);
        free(Rm);
        if (!Zt && c->pk[id].w) egg_pack_fill(&c->pk[id], w);
    }
    free(ek);
    free(es);
    if (Zall) {
        int rc = vs->ranks > 1 ? vs->sum(vs->ctx, Zall, m->nparams, err) : 0;
        if (rc) return rc;
        for (int id = 0; id < m->ntensors; id++) {
            const egg_tensor *t = &m->t[id];
            int8_t *w = egg_tensor_ptr(m, id);
            const int32_t *Zt = Zall + t->off;
            const long long n = (long long)t->size, B = 4096; /* blocks of B parameters over the threads */
            int64_t ch = 0;
#pragma omp parallel for num_threads(c->threads) reduction(+ : ch) schedule(static)
            for (long long b = 0; b < n; b += B) ch += apply_votes(w + b, Zt + b, (size_t)(n - b < B ? n - b : B), zmin);
            changed += ch;
            if (c->pk[id].w) egg_pack_fill(&c->pk[id], w);
        }
    }
    st->changed = changed;
    return 0;
}

static int cpu_get_state(egg_backend *be, int8_t *dst, egg_err *err) {
    (void)err;
    cpu_impl *c = be->impl;
    memcpy(dst, c->state, (size_t)(c->m1 - c->m0) * c->L * c->H);
    return 0;
}
static int cpu_set_state(egg_backend *be, const int8_t *src, egg_err *err) {
    (void)err;
    cpu_impl *c = be->impl;
    memcpy(c->state, src, (size_t)(c->m1 - c->m0) * c->L * c->H);
    return 0;
}
static int cpu_set_params(egg_backend *be, const egg_model *m, egg_err *err) {
    (void)err;
    cpu_impl *c = be->impl;
    for (int id = 0; id < m->ntensors; id++)
        if (c->pk[id].w) egg_pack_fill(&c->pk[id], egg_tensor_ptr(m, id));
    return 0;
}
static void cpu_destroy(egg_backend *be) {
    cpu_impl *c = be->impl;
    if (!c) return;
    for (int id = 0; id < c->m->ntensors; id++) egg_pack_free(&c->pk[id]);
    free(c->pk); free(c->noff); free(c->state); free(c->sstate); free(c->zall);
    free(c);
    be->impl = NULL;
}

int egg_backend_cpu_create(egg_backend *be, const egg_config *cfg, const egg_model *m, int m0, int m1, egg_err *err) {
    int simd;
    if (egg_simd_resolve(cfg->simd, &simd))
        return egg_fail(err, EGG_EINPUT, "--simd %s: this CPU does not support it (use --simd auto)", egg_simd_name(cfg->simd));
    cpu_impl *c = egg_xcalloc(1, sizeof *c);
    c->m = m;
    c->V = m->V; c->H = m->H; c->L = m->L; c->r = cfg->rank;
    c->pshift = 4 + cfg->sigma_shift;
    c->simd = simd;
    c->threads = cfg->threads > 0 ? cfg->threads : omp_get_max_threads(); /* OMP_NUM_THREADS, else the cores this rank may use */
    c->pop = cfg->pop; c->group = cfg->group;
    c->m0 = m0; c->m1 = m1;
    int n = m1 - m0;
    /* tile: whole pairs, at most 32 members, enough tiles to feed every thread */
    int per = (n + c->threads - 1) / c->threads;
    per = (per + 1) / 2 * 2;
    c->tile = per < 2 ? 2 : per > 32 ? 32 : per;
    c->pk = egg_xcalloc((size_t)m->ntensors, sizeof(egg_packed));
    c->maxN = 16;
    for (int id = 1; id < m->ntensors; id++) {
        const egg_tensor *t = &m->t[id];
        if (t->kind != EGG_T_MAT) continue;
        egg_pack_init(&c->pk[id], t->rows, t->cols);
        egg_pack_fill(&c->pk[id], egg_tensor_ptr(m, id));
        if (c->pk[id].Np > c->maxN) c->maxN = c->pk[id].Np;
    }
    layout_noise(c);
    c->state = egg_xaligned(64, (size_t)(n > 0 ? n : 1) * c->L * c->H);
    c->sstate = egg_xaligned(64, (size_t)c->L * c->H);
    be->name = "cpu";
    be->device_id = -1;
    snprintf(be->device_desc, sizeof be->device_desc, "cpu (%d threads, %s)", c->threads, egg_simd_name(simd));
    be->impl = c;
    be->eval = cpu_eval;
    be->update = cpu_update;
    be->eval_clean = cpu_eval_clean;
    be->sample_step = cpu_sample_step;
    be->get_state = cpu_get_state;
    be->set_state = cpu_set_state;
    be->set_params = cpu_set_params;
    be->destroy = cpu_destroy;
    return 0;
}

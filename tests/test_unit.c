/* test_unit.c — unit tests of egg's integer math, kernels and host rules.
 *
 * Every golden value comes from an independent computation in this file:
 * exact big-integer arithmetic (floor(16*log2 s) is the bit length of s^16
 * minus one), float64 models with stated tolerances, naive triple loops, or
 * quantiles from a normal table. Prints one line per check, "PASS <name>",
 * "FAIL <name>: <why>" or "SKIP <name>: <why>"; exits 1 iff a check failed.
 * Built by `make test` (build/test_unit) from this file and every src object
 * except main.o. */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint.h"
#include "config.h"
#include "cpu_gemm.h"
#include "egg_math.h"
#include "es.h"
#include "model.h"
#include "util.h"

static int g_fail;

/* One result line. why == NULL: PASS. */
static void result(const char *name, const char *why) {
    if (why) { printf("FAIL %s: %s\n", name, why); g_fail++; }
    else printf("PASS %s\n", name);
    fflush(stdout);
}
static void skip(const char *name, const char *why) { printf("SKIP %s: %s\n", name, why); fflush(stdout); }

/* Collects the first failure of a check: bad(&ck, fmt, ...) keeps only the first message. */
typedef struct { char why[512]; int n; } check;
static void bad(check *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bad(check *c, const char *fmt, ...) {
    if (c->n++) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why, sizeof c->why, fmt, ap);
    va_end(ap);
}
static void done(const char *name, check *c) {
    if (c->n > 1) {
        size_t l = strlen(c->why);
        snprintf(c->why + l, sizeof c->why - l, " (and %d more)", c->n - 1);
    }
    result(name, c->n ? c->why : NULL);
}

/* xorshift64* test RNG (independent of the code under test). */
static uint64_t g_rng = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void) {
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return g_rng * 0x2545f4914f6cdd1dull;
}
static int rnd_in(int lo, int hi) { return lo + (int)(rnd() % (uint64_t)(hi - lo + 1)); }

/* floor(a / 2^k) for any sign, computed without ">>" on a negative value. */
static int64_t floor_div_pow2(int64_t a, int k) {
    int64_t d = (int64_t)1 << k;
    int64_t q = a / d;
    if ((a % d) != 0 && a < 0) q--;
    return q;
}
static int64_t clip127(int64_t v) { return v < -127 ? -127 : v > 127 ? 127 : v; }

/* ------------------------------------------------------------ big integers */

#define BN_LIMBS 40 /* 1280 bits: enough for (2^64)^16 */
typedef struct { uint32_t l[BN_LIMBS]; int n; } bn;

static void bn_set(bn *a, uint64_t v) {
    memset(a, 0, sizeof *a);
    a->l[0] = (uint32_t)v;
    a->l[1] = (uint32_t)(v >> 32);
    a->n = a->l[1] ? 2 : a->l[0] ? 1 : 0;
}
static void bn_mul(bn *r, const bn *a, const bn *b) {
    uint32_t t[2 * BN_LIMBS];
    memset(t, 0, sizeof t);
    for (int i = 0; i < a->n; i++) {
        uint64_t carry = 0;
        for (int j = 0; j < b->n; j++) {
            uint64_t cur = (uint64_t)a->l[i] * b->l[j] + t[i + j] + carry;
            t[i + j] = (uint32_t)cur;
            carry = cur >> 32;
        }
        t[i + b->n] = (uint32_t)carry;
    }
    int n = a->n + b->n;
    while (n > 0 && !t[n - 1]) n--;
    if (n > BN_LIMBS) { fprintf(stderr, "test_unit: bignum overflow\n"); exit(1); }
    memset(r, 0, sizeof *r);
    memcpy(r->l, t, sizeof(uint32_t) * (size_t)n);
    r->n = n;
}
static int bn_bitlen(const bn *a) {
    if (!a->n) return 0;
    return 32 * (a->n - 1) + (32 - __builtin_clz(a->l[a->n - 1]));
}
static int bn_is_pow2(const bn *a) {
    if (!a->n) return 0;
    for (int i = 0; i < a->n - 1; i++) if (a->l[i]) return 0;
    return __builtin_popcount(a->l[a->n - 1]) == 1;
}
/* v^16 by four squarings */
static void bn_pow16(bn *r, uint64_t v) {
    bn a, b;
    bn_set(&a, v);
    bn_mul(&b, &a, &a);
    bn_mul(&a, &b, &b);
    bn_mul(&b, &a, &a);
    bn_mul(r, &b, &b);
}
/* floor(16 * log2 s) exactly: floor(log2(s^16)) = bitlen(s^16) - 1. */
static int32_t exact_floor16_log2(uint64_t s) {
    bn p;
    bn_pow16(&p, s);
    return bn_bitlen(&p) - 1;
}
/* v^16 <= 2^n ? */
static int pow16_le_pow2(uint64_t v, int n) {
    bn p;
    bn_pow16(&p, v);
    int b = bn_bitlen(&p);
    return b <= n || (b == n + 1 && bn_is_pow2(&p));
}

/* ------------------------------------------------------------------ noise */

static double corr(const int *a, const int *b, int n) {
    double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
    for (int i = 0; i < n; i++) {
        sa += a[i]; sb += b[i];
        saa += (double)a[i] * a[i]; sbb += (double)b[i] * b[i]; sab += (double)a[i] * b[i];
    }
    double ca = saa - sa * sa / n, cb = sbb - sb * sb / n, cab = sab - sa * sb / n;
    return cab / sqrt(ca * cb);
}
static double frac_equal(const int *a, const int *b, int n) {
    int e = 0;
    for (int i = 0; i < n; i++) e += a[i] == b[i];
    return (double)e / n;
}
static void fill_noise(int *v, int n, uint64_t key) {
    for (int i = 0; i < n; i++) v[i] = egg_noise(key, (uint32_t)i);
}

/* Exact distribution of the sum of twelve uniform 0..15 values, minus 90. */
static void exact_noise_pmf(double *pmf /* [181], index v + 90 */) {
    double cur[181] = {0}, nxt[181];
    cur[0] = 1;
    for (int k = 0; k < 12; k++) {
        memset(nxt, 0, sizeof nxt);
        for (int s = 0; s <= 15 * k; s++)
            for (int u = 0; u < 16; u++) nxt[s + u] += cur[s] / 16.0;
        memcpy(cur, nxt, sizeof cur);
    }
    memcpy(pmf, cur, sizeof cur);
}

/* the noise value as docs/ALGORITHM.md writes it: 64-bit masks and one 64-bit multiply */
static int noise_spec(uint64_t key, uint32_t idx) {
    uint64_t h = egg_mix64(key + (uint64_t)(idx + 1) * EGG_GOLDEN) & 0x0000ffffffffffffull;
    uint64_t s = (h & 0x0f0f0f0f0f0full) + ((h >> 4) & 0x0f0f0f0f0f0full);
    return (int)(((s * 0x010101010101ull) >> 40) & 0xff) - 90;
}
static void test_noise(void) {
    enum { N = 1 << 20 };
    int *a = malloc(sizeof(int) * N), *b = malloc(sizeof(int) * N);
    check c = {0};

    /* determinism: same (seed, epoch, tensor, pair, idx) -> same value, any call order */
    {
        uint64_t k1 = egg_noise_key(7, 3, 5, 11), k2 = egg_noise_key(7, 3, 5, 11);
        if (k1 != k2) bad(&c, "egg_noise_key not deterministic");
        for (int i = 999; i >= 0; i--) a[i] = egg_noise(k1, (uint32_t)i);
        for (int i = 0; i < 1000; i++)
            if (egg_noise(k2, (uint32_t)i) != a[i]) { bad(&c, "egg_noise(key, %d) differs between calls", i); break; }
        if (egg_noise_key(7, 3, 5, 11) == egg_noise_key(8, 3, 5, 11)) bad(&c, "seed does not change the key");
        done("noise_deterministic", &c);
    }

    /* egg_noise (32-bit words) equals the 64-bit form of docs/ALGORITHM.md on 4 M (key, idx) */
    {
        memset(&c, 0, sizeof c);
        uint64_t z = 12345;
        for (int i = 0; i < 4 * N; i++) {
            z = egg_mix64(z + EGG_GOLDEN);
            const uint64_t key = z;
            const uint32_t idx = (uint32_t)(egg_mix64(z ^ 0x5bd1e995u) >> (i & 31));
            if (egg_noise(key, idx) != noise_spec(key, idx)) {
                bad(&c, "egg_noise(%llx, %u) = %d, spec %d", (unsigned long long)key, idx, egg_noise(key, idx), noise_spec(key, idx));
                break;
            }
        }
        done("noise_matches_spec", &c);
    }

    /* moments over many keys and indices */
    {
        memset(&c, 0, sizeof c);
        double s1 = 0, s2 = 0, s4 = 0;
        long hist[181] = {0};
        int lo = 1000, hi = -1000;
        const int keys = 16, per = N / 4;
        for (int k = 0; k < keys; k++) {
            uint64_t key = egg_noise_key(1 + (uint64_t)k, (uint32_t)(k * 3), (uint32_t)k, (uint32_t)(k * 7));
            for (int i = 0; i < per; i++) {
                int v = egg_noise(key, (uint32_t)i);
                if (v < lo) lo = v;
                if (v > hi) hi = v;
                if (v >= -90 && v <= 90) hist[v + 90]++;
                s1 += v;
            }
        }
        const double n = (double)keys * per, mean = s1 / n;
        for (int v = -90; v <= 90; v++) {
            double d = v - mean;
            s2 += hist[v + 90] * d * d;
            s4 += hist[v + 90] * d * d * d * d;
        }
        double var = s2 / n, kurt = (s4 / n) / (var * var);
        /* sd of the mean: 15.97 / sqrt(n); allow 5 sd */
        if (fabs(mean) > 5 * 15.97 / sqrt(n)) bad(&c, "mean %.5f, want |mean| < %.5f", mean, 5 * 15.97 / sqrt(n));
        /* variance: 255 exactly in distribution; sd of the sample variance ~ 255*sqrt((kurt-1)/n) < 0.3 */
        if (fabs(var - 255.0) > 1.5) bad(&c, "variance %.3f, want 255 +- 1.5 (sd %.3f)", var, sqrt(var));
        if (lo < -90 || hi > 90) bad(&c, "range %d..%d outside -90..90", lo, hi);
        /* sum of 12 uniform 0..15: kurtosis 3 + (-6(16^2+1)/(5(16^2-1)))/12 = 2.8992; N(0,1) has 3 */
        const double kexp = 3.0 - 6.0 * 257.0 / (5.0 * 255.0) / 12.0;
        if (fabs(kurt - kexp) > 0.02 || fabs(kurt - 3.0) > 0.15)
            bad(&c, "kurtosis %.4f, want %.4f +- 0.02 (and 3 +- 0.15)", kurt, kexp);
        done("noise_moments", &c);
        printf("# noise: n=%.0f mean=%.5f var=%.3f sd=%.3f kurtosis=%.4f range=%d..%d\n", n, mean, var, sqrt(var), kurt, lo, hi);

        /* chi-square against the exact distribution (bins with expectation < 20 merged into the tails) */
        memset(&c, 0, sizeof c);
        double pmf[181];
        exact_noise_pmf(pmf);
        double chi = 0, eacc = 0, oacc = 0;
        int df = -1;
        for (int v = 0; v < 181; v++) {
            eacc += pmf[v] * n;
            oacc += (double)hist[v];
            if (eacc >= 20 || v == 180) {
                chi += (oacc - eacc) * (oacc - eacc) / eacc;
                df++;
                eacc = oacc = 0;
            }
        }
        /* chi^2(df): mean df, sd sqrt(2 df); allow 6 sd */
        if (chi > df + 6 * sqrt(2.0 * df)) bad(&c, "chi2 %.1f with %d df (limit %.1f)", chi, df, df + 6 * sqrt(2.0 * df));
        done("noise_distribution_chi2", &c);
    }

    /* independence: long vectors of neighbouring keys are uncorrelated and agree
     * as often as two independent draws would (sum_v p_v^2) */
    {
        double pmf[181], peq = 0;
        exact_noise_pmf(pmf);
        for (int v = 0; v < 181; v++) peq += pmf[v] * pmf[v];
        const double rlim = 5.0 / sqrt((double)N), elim = 5.0 * sqrt(peq * (1 - peq) / N);
        struct { const char *name; uint64_t k1, k2; } cases[] = {
            {"noise_independent_epoch", egg_noise_key(1, 10, 3, 5), egg_noise_key(1, 11, 3, 5)},
            {"noise_independent_tensor", egg_noise_key(1, 10, 3, 5), egg_noise_key(1, 10, 4, 5)},
            {"noise_independent_pair", egg_noise_key(1, 10, 3, 5), egg_noise_key(1, 10, 3, 6)},
            {"noise_independent_seed", egg_noise_key(1, 10, 3, 5), egg_noise_key(2, 10, 3, 5)},
            {"noise_independent_tensor_pair_swap", egg_noise_key(1, 0, 1, 2), egg_noise_key(1, 0, 2, 1)},
        };
        for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
            memset(&c, 0, sizeof c);
            fill_noise(a, N, cases[t].k1);
            fill_noise(b, N, cases[t].k2);
            double r = corr(a, b, N), fe = frac_equal(a, b, N);
            if (fabs(r) > rlim) bad(&c, "correlation %.5f, want |r| < %.5f", r, rlim);
            if (fabs(fe - peq) > elim) bad(&c, "equal fraction %.5f, want %.5f +- %.5f", fe, peq, elim);
            done(cases[t].name, &c);
        }
        /* within one vector: lag-1 and lag-16 correlation */
        memset(&c, 0, sizeof c);
        fill_noise(a, N, egg_noise_key(3, 1, 2, 3));
        double r1 = corr(a, a + 1, N - 1), r16 = corr(a, a + 16, N - 16);
        if (fabs(r1) > rlim || fabs(r16) > rlim) bad(&c, "lag-1 r=%.5f lag-16 r=%.5f, want |r| < %.5f", r1, r16, rlim);
        done("noise_independent_index", &c);
        /* many consecutive pairs at one index: the column is uncorrelated too */
        memset(&c, 0, sizeof c);
        for (int p = 0; p < N; p++) a[p] = egg_noise(egg_noise_key(5, 2, 1, (uint32_t)p), 0);
        for (int p = 0; p < N; p++) b[p] = egg_noise(egg_noise_key(5, 3, 1, (uint32_t)p), 0);
        double rc = corr(a, b, N), rp = corr(a, a + 1, N - 1);
        if (fabs(rc) > rlim || fabs(rp) > rlim) bad(&c, "across pairs r=%.5f, across epochs r=%.5f (limit %.5f)", rp, rc, rlim);
        done("noise_independent_across_pairs_same_index", &c);
    }
    free(a);
    free(b);
}

/* ------------------------------------------------------- integer primitives */

static void test_mm_shift(void) {
    check c = {0};
    /* 2^s approximates 16*sqrt(in) from above: 0 <= s - log2(16 sqrt in) < 1 for every in;
     * for powers of two it is within 0.5, and exact (0) for powers of four. */
    for (uint32_t in = 1; in <= (1u << 20); in++) {
        double d = egg_mm_shift(in) - log2(16.0 * sqrt((double)in));
        if (d < -1e-12 || d >= 1.0) { bad(&c, "in=%u: shift %d vs log2(16 sqrt in) = %.4f", in, egg_mm_shift(in), egg_mm_shift(in) - d); break; }
    }
    for (int e = 0; e <= 20; e++) {
        uint32_t in = 1u << e;
        double d = egg_mm_shift(in) - log2(16.0 * sqrt((double)in));
        if (fabs(d) > 0.5 + 1e-12) bad(&c, "in=2^%d: |shift - log2(16 sqrt in)| = %.3f > 0.5", e, d);
        if (e % 2 == 0 && fabs(d) > 1e-12) bad(&c, "in=4^%d: shift %d not exact", e / 2, egg_mm_shift(in));
    }
    if (egg_mm_shift(256) != 8 || egg_mm_shift(1024) != 9 || egg_mm_shift(4096) != 10)
        bad(&c, "shift(256,1024,4096) = %d,%d,%d, want 8,9,10", egg_mm_shift(256), egg_mm_shift(1024), egg_mm_shift(4096));
    done("mm_shift_vs_log2_16sqrt", &c);

    /* egg_mm_out == clip(floor((acc + floor(p / 2^ps)) / 2^s)) */
    memset(&c, 0, sizeof c);
    for (int i = 0; i < 2000000; i++) {
        int32_t acc = (int32_t)(rnd() % 4000001) - 2000000;
        int64_t p = (int64_t)(rnd() % 4000000001ull) - 2000000000;
        int ps = rnd_in(4, 20), s = rnd_in(4, 12);
        int64_t want = clip127(floor_div_pow2((int64_t)acc + floor_div_pow2(p, ps), s));
        if (egg_mm_out(acc, p, ps, s) != want) { bad(&c, "acc=%d p=%lld ps=%d s=%d: %d, want %lld", acc, (long long)p, ps, s, egg_mm_out(acc, p, ps, s), (long long)want); break; }
    }
    done("mm_out_epilogue_exact", &c);
}

static void test_ln(void) {
    check c = {0};
    int x[1024], w[1024];
    double maxerr = 0;
    for (int rep = 0; rep < 4000; rep++) {
        int n = 32 * rnd_in(1, 32);
        int scale = rnd_in(0, 3);   /* small and large activations */
        int wmode = rnd_in(0, 1);   /* init weights (16) or random */
        int32_t sa = 0;
        for (int i = 0; i < n; i++) {
            int lim = scale == 0 ? 1 : scale == 1 ? 8 : scale == 2 ? 40 : 127;
            x[i] = rnd_in(-lim, lim);
            w[i] = wmode ? rnd_in(-127, 127) : 16;
            sa += abs(x[i]);
        }
        int32_t d = egg_ln_div(sa, n);
        /* exact: d = max(1, floor(mean|x|)); y = clip(trunc(x w / d)) */
        int32_t dref = (int32_t)floor((double)sa / n);
        if (dref < 1) dref = 1;
        if (d != dref) { bad(&c, "n=%d sum=%d: d=%d, want %d", n, sa, d, dref); continue; }
        double mean = (double)sa / n;
        for (int i = 0; i < n; i++) {
            int y = egg_ln_apply(x[i], w[i], d);
            int yref = (int)clip127((int64_t)trunc((double)x[i] * w[i] / d));
            if (y != yref) { bad(&c, "x=%d w=%d d=%d: %d, want %d", x[i], w[i], d, y, yref); break; }
            /* float64 model: y = clip(x w / max(1, mean|x|)); integer d = floor(mean) and
             * truncation give |err| <= 1 + |x w| (mean - d) / (d mean) < 1 + |x w| / (d max(1,mean)) */
            double yf = fmax(-127.0, fmin(127.0, x[i] * (double)w[i] / fmax(1.0, mean)));
            double tol = 1.0 + fabs((double)x[i] * w[i]) / (d * fmax(1.0, mean));
            double e = fabs(y - yf);
            if (e > tol + 1e-9) { bad(&c, "x=%d w=%d mean=%.3f: %d vs float %.3f (tol %.3f)", x[i], w[i], mean, y, yf, tol); break; }
            if (mean >= 16 && e > maxerr) maxerr = e;
        }
    }
    done("ln_vs_float64", &c);
    printf("# ln: max |int - float| with mean|x| >= 16: %.3f\n", maxerr);
}

static void test_div16(void) {
    check c = {0};
    for (int d = 2; d <= 255; d++) {
        egg_div16 v = egg_div16_make(d);
        for (uint32_t a = 0; a < 16384; a++)
            if (egg_div16_apply(a, v) != a / (uint32_t)d) {
                bad(&c, "a=%u d=%d: %u, want %u", a, d, egg_div16_apply(a, v), a / (uint32_t)d);
                break;
            }
    }
    done("div16_exhaustive", &c);
}

static void test_gru(void) {
    check c = {0};
    for (int f = -127; f <= 127 && !c.n; f++)
        for (int h = -127; h <= 127; h++) {
            int64_t want = floor_div_pow2((int64_t)(f + 127) * h, 8);
            if (egg_gru_gate(f, h) != want) { bad(&c, "gate(%d,%d)=%d, want %lld", f, h, egg_gru_gate(f, h), (long long)want); break; }
            for (int cc = -127; cc <= 127; cc += 3) {
                int64_t m = clip127(h + floor_div_pow2((int64_t)(f + 127) * (cc - h), 8));
                if (egg_gru_mix(f, cc, h) != m) { bad(&c, "mix(%d,%d,%d)=%d, want %lld", f, cc, h, egg_gru_mix(f, cc, h), (long long)m); break; }
            }
        }
    /* vector perturbation: clip(w + floor(sign n1 n2 / 2^ps)) */
    for (int i = 0; i < 200000 && !c.n; i++) {
        int w = rnd_in(-127, 127), n1 = rnd_in(-90, 90), n2 = rnd_in(-90, 90), sg = rnd_in(0, 1) ? 1 : -1, ps = rnd_in(4, 12);
        int64_t want = clip127(w + floor_div_pow2((int64_t)sg * n1 * n2, ps));
        if (egg_vec_pert(w, n1, n2, sg, ps) != want) bad(&c, "vec_pert(%d,%d,%d,%d,%d)=%d, want %lld", w, n1, n2, sg, ps, egg_vec_pert(w, n1, n2, sg, ps), (long long)want);
    }
    done("gru_gate_mix_vecpert_exact", &c);
}

/* ------------------------------------------------------------------- loss */

static void test_loss(void) {
    check c = {0};
    /* every s in 1..2^20 */
    for (uint64_t s = 1; s <= (1u << 20); s++) {
        int32_t want = exact_floor16_log2(s);
        if (egg_floor16_log2(s) != want) { bad(&c, "s=%llu: %d, want %d", (unsigned long long)s, egg_floor16_log2(s), want); break; }
    }
    done("floor16_log2_all_to_2^20", &c);

    /* random large s, and s at and next to every threshold 2^(k + m/16) */
    memset(&c, 0, sizeof c);
    for (int i = 0; i < 200000; i++) {
        uint64_t s = rnd() >> (rnd() % 44);
        if (!s) s = 1;
        int32_t want = exact_floor16_log2(s);
        if (egg_floor16_log2(s) != want) { bad(&c, "s=%llu: %d, want %d", (unsigned long long)s, egg_floor16_log2(s), want); break; }
    }
    for (int k = 20; k < 64; k++)
        for (int m = 0; m < 16; m++) {
            /* smallest s with s^16 >= 2^(16k+m), found by exact bisection */
            uint64_t lo = (uint64_t)1 << k, hi = k == 63 ? UINT64_MAX : ((uint64_t)1 << (k + 1)) - 1;
            while (lo < hi) {
                uint64_t mid = lo + (hi - lo) / 2;
                bn p;
                bn_pow16(&p, mid);
                if (bn_bitlen(&p) - 1 >= 16 * k + m) hi = mid; else lo = mid + 1;
            }
            for (int dlt = -1; dlt <= 1; dlt++) {
                uint64_t s = lo + (uint64_t)(int64_t)dlt;
                if (s < 1) continue;
                int32_t want = exact_floor16_log2(s);
                if (egg_floor16_log2(s) != want) bad(&c, "s=%llu (threshold k=%d m=%d): %d, want %d", (unsigned long long)s, k, m, egg_floor16_log2(s), want);
            }
        }
    if (egg_floor16_log2(UINT64_MAX) != exact_floor16_log2(UINT64_MAX)) bad(&c, "s=2^64-1");
    done("floor16_log2_large_and_thresholds", &c);

    /* EXP2[i] = floor(16 * 2^(i/16)): the largest e with e^16 <= 2^(64 + i) */
    memset(&c, 0, sizeof c);
    for (int i = 0; i < 256; i++) {
        uint64_t e = EGG_EXP2[i];
        if (!pow16_le_pow2(e, 64 + i) || pow16_le_pow2(e + 1, 64 + i)) {
            bad(&c, "EXP2[%d]=%llu, want floor(16*2^(%d/16)) = %.4f", i, (unsigned long long)e, i, 16 * exp2(i / 16.0));
        }
    }
    done("exp2_table_exact", &c);

    /* loglik vs the float64 log2-softmax of int8 logits (1/16 bits): flooring in EXP2
     * only shrinks S and the final log2 is floored, both making ll larger, by
     * < 16 log2(16.70/16) + 1 < 2: so 0 <= ll_int - ll_float < 2 (1/8 bit). */
    memset(&c, 0, sizeof c);
    double dmin = 1e9, dmax = -1e9, dsum = 0;
    long cnt = 0;
    static int8_t lg[65536];
    const int vocabs[] = {2, 3, 16, 256, 1000, 4096, 65536};
    for (int vi = 0; vi < (int)(sizeof vocabs / sizeof vocabs[0]); vi++) {
        int V = vocabs[vi];
        int reps = V >= 4096 ? 40 : 2000;
        for (int rep = 0; rep < reps; rep++) {
            int mode = rep % 4;
            for (int v = 0; v < V; v++) {
                int x = mode == 0 ? rnd_in(-127, 127) : mode == 1 ? rnd_in(-20, 20) : mode == 2 ? -127 : rnd_in(100, 127);
                lg[v] = (int8_t)x;
            }
            if (mode == 2) lg[rnd() % (unsigned)V] = 127;
            uint64_t S = 0;
            long double Sf = 0;
            for (int v = 0; v < V; v++) { S += EGG_EXP2[lg[v] + 128]; Sf += exp2l(lg[v] / 16.0L); }
            for (int t = 0; t < 4; t++) {
                int tgt = (int)(rnd() % (unsigned)V);
                int32_t ll = egg_loglik(lg[tgt], S);
                double llf = (double)(16.0L * (lg[tgt] / 16.0L - log2l(Sf)));
                double d = ll - llf;
                if (d < -1e-9 || d >= 2.0) bad(&c, "V=%d target logit %d: ll=%d float=%.4f diff %.4f not in [0,2)", V, lg[tgt], ll, llf, d);
                if (d < dmin) dmin = d;
                if (d > dmax) dmax = d;
                dsum += d;
                cnt++;
            }
        }
    }
    done("loglik_vs_float_log2_softmax", &c);
    printf("# loglik: ll_int - ll_float over %ld tokens: min %.3f max %.3f mean %.3f (1/16 bit)\n", cnt, dmin, dmax, dsum / cnt);
}

/* ------------------------------------------------------------------- GEMM */

static void naive_gemm(int M, int N, int K, const int8_t *X, int ldx, const int8_t *W, int32_t *out) {
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            int32_t s = 0;
            for (int k = 0; k < K; k++) s += (int32_t)X[(size_t)m * ldx + k] * W[(size_t)n * K + k];
            out[(size_t)m * N + n] = s;
        }
}

static void test_gemm(void) {
    const int paths[3] = {EGG_SIMD_SCALAR, EGG_SIMD_AVX2, EGG_SIMD_AVX512};
    const char *pname[3] = {"scalar", "avx2", "avx512"};
    int have[3];
    for (int p = 0; p < 3; p++) {
        int res;
        have[p] = egg_simd_resolve(paths[p], &res) == 0 && res == paths[p];
    }
    const int Ms[] = {1, 2, 3, 4, 5, 7, 9, 13, 17, 33};
    const int Ns[] = {1, 5, 15, 16, 17, 31, 33, 48, 100, 130};
    const int Ks[] = {4, 8, 12, 32, 36, 64, 100, 128, 260, 1028, 2052};
    check cg[3] = {{{0}, 0}}, cm[3] = {{{0}, 0}};
    int ncases = 0;
    long nout = 0, unsat = 0;
    for (int rep = 0; rep < 120; rep++) {
        int M = Ms[rnd() % 10], N = Ns[rnd() % 10], K = Ks[rnd() % 11];
        if (K > 1000 && M * N > 600) M = 3;
        int ldx = K + 4 * rnd_in(0, 2);
        int8_t *X = malloc((size_t)M * ldx), *W = malloc((size_t)N * K);
        /* full-range values, or model-like magnitudes so that most MM outputs do not saturate */
        const int xl = rep % 3 ? 24 : 127, wl = rep % 3 ? 40 : 127;
        for (size_t i = 0; i < (size_t)M * ldx; i++) X[i] = (int8_t)rnd_in(-xl, xl);
        for (size_t i = 0; i < (size_t)N * K; i++) W[i] = (int8_t)rnd_in(-wl, wl);
        if (rep < 4) { /* extremes */
            for (size_t i = 0; i < (size_t)M * ldx; i++) X[i] = rep & 1 ? 127 : -127;
            for (size_t i = 0; i < (size_t)N * K; i++) W[i] = rep & 2 ? 127 : -127;
        }
        int32_t *ref = malloc(sizeof(int32_t) * (size_t)M * N);
        naive_gemm(M, N, K, X, ldx, W, ref);
        egg_packed pk;
        egg_pack_init(&pk, N, K);
        egg_pack_fill(&pk, W);
        int ldo = pk.Np + 16 * rnd_in(0, 1);
        const int Mp = (M + 3) / 4 * 4 + 4;
        int32_t *out = malloc(sizeof(int32_t) * (size_t)Mp * ldo);

        /* egg_mm_s8 inputs: rank r noise in -90..90 (the contract), signs +-1 */
        int r = rnd_in(0, 4);
        int s = egg_mm_shift((uint32_t)K), ps = 4 + rnd_in(0, 6);
        int8_t *B = malloc((size_t)M * (r ? r : 1) * K), *A = malloc((size_t)M * (r ? r : 1) * N), *sg = malloc((size_t)M);
        const int8_t **Brow = malloc(sizeof(int8_t *) * (size_t)M), **Arow = malloc(sizeof(int8_t *) * (size_t)M);
        for (size_t i = 0; i < (size_t)M * (r ? r : 1) * K; i++) B[i] = (int8_t)rnd_in(-90, 90);
        for (size_t i = 0; i < (size_t)M * (r ? r : 1) * N; i++) A[i] = (int8_t)rnd_in(-90, 90);
        for (int m = 0; m < M; m++) {
            sg[m] = rnd_in(0, 1) ? 1 : -1;
            Brow[m] = B + (size_t)m * r * K;
            Arow[m] = A + (size_t)m * r * N;
        }
        int ldy = N + rnd_in(0, 5);
        int8_t *Yref = malloc((size_t)M * N), *Y = malloc((size_t)Mp * ldy);
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                int64_t p = 0;
                for (int j = 0; j < r; j++) {
                    int64_t t = 0;
                    for (int k = 0; k < K; k++) t += (int64_t)X[(size_t)m * ldx + k] * Brow[m][(size_t)j * K + k];
                    p += sg[m] * t * Arow[m][(size_t)j * N + n];
                }
                Yref[(size_t)m * N + n] = (int8_t)clip127(floor_div_pow2(ref[(size_t)m * N + n] + floor_div_pow2(p, ps), s));
                nout++;
                unsat += abs(Yref[(size_t)m * N + n]) < 127;
            }
        int32_t *scratch = malloc(sizeof(int32_t) * (size_t)Mp * pk.Np);
        for (int p = 0; p < 3; p++) {
            if (!have[p]) continue;
            /* int32 GEMM; canary beyond the rows and beyond Np */
            for (size_t i = 0; i < (size_t)Mp * ldo; i++) out[i] = 0x5a5a5a5a;
            egg_gemm_s8(paths[p], M, X, ldx, &pk, out, ldo);
            for (int m = 0; m < Mp && !cg[p].n; m++)
                for (int n = 0; n < ldo; n++) {
                    int32_t v = out[(size_t)m * ldo + n];
                    if (m < M && n < N && v != ref[(size_t)m * N + n]) {
                        bad(&cg[p], "M=%d N=%d K=%d: out[%d][%d]=%d, naive %d", M, N, K, m, n, v, ref[(size_t)m * N + n]);
                        break;
                    }
                    if ((m >= M || n >= pk.Np) && v != 0x5a5a5a5a) {
                        bad(&cg[p], "M=%d N=%d K=%d ldo=%d: wrote out[%d][%d] outside M x Np", M, N, K, ldo, m, n);
                        break;
                    }
                }
            /* fused MM with epilogue; canary beyond N and beyond M */
            memset(Y, 0x77, (size_t)Mp * ldy);
            egg_mm_args a = {M, X, ldx, &pk, s, ps, r, (const int8_t *const *)Brow, (const int8_t *const *)Arow, sg, Y, ldy, scratch};
            egg_mm_s8(paths[p], &a);
            for (int m = 0; m < Mp && !cm[p].n; m++)
                for (int n = 0; n < ldy; n++) {
                    int8_t v = Y[(size_t)m * ldy + n];
                    if (m < M && n < N && v != Yref[(size_t)m * N + n]) {
                        bad(&cm[p], "M=%d N=%d K=%d r=%d s=%d ps=%d: Y[%d][%d]=%d, naive %d", M, N, K, r, s, ps, m, n, v, Yref[(size_t)m * N + n]);
                        break;
                    }
                    if ((m >= M || n >= N) && v != 0x77) {
                        bad(&cm[p], "M=%d N=%d K=%d r=%d: wrote Y[%d][%d] outside M x N", M, N, K, r, m, n);
                        break;
                    }
                }
        }
        ncases++;
        free(scratch); free(Y); free(Yref); free(Brow); free(Arow); free(B); free(A); free(sg);
        free(out); free(ref); free(X); free(W);
        egg_pack_free(&pk);
    }
    char nm[64];
    for (int p = 0; p < 3; p++) {
        snprintf(nm, sizeof nm, "gemm_s8_%s_vs_naive", pname[p]);
        if (!have[p]) skip(nm, "this CPU lacks the instructions");
        else done(nm, &cg[p]);
        snprintf(nm, sizeof nm, "mm_s8_%s_vs_naive", pname[p]);
        if (!have[p]) skip(nm, "this CPU lacks the instructions");
        else done(nm, &cm[p]);
    }
    printf("# gemm: %d random shapes (M 1..33, N 1..130, K 4..2052, rank 0..4) per path; %.0f%% of MM outputs unsaturated\n",
           ncases, 100.0 * unsat / (nout ? nout : 1));

    /* auto resolves to a supported path, and a path the CPU lacks is refused */
    check c = {0};
    int res = -1;
    if (egg_simd_resolve(EGG_SIMD_AUTO, &res) || res < EGG_SIMD_SCALAR || res > EGG_SIMD_AVX512) bad(&c, "auto resolved to %d", res);
    else if ((res == EGG_SIMD_AVX512 && !have[2]) || (res == EGG_SIMD_AVX2 && !have[1])) bad(&c, "auto picked an unsupported path");
    else if (have[2] && res != EGG_SIMD_AVX512) bad(&c, "auto did not pick avx512 on a VNNI CPU");
    if (egg_simd_resolve(EGG_SIMD_SCALAR, &res) || res != EGG_SIMD_SCALAR) bad(&c, "scalar refused");
    done("simd_resolve", &c);
}

/* ---------------------------------------------------------------- es rules */

static void test_fitness(void) {
    check c = {0};
    struct { int n; int32_t d[6]; int8_t sign[6], norm[6]; } cases[] = {
        /* sum|d| = 208, mean 41: 2*5/41 = .24, 2*3/41 = .15, 2*100/41 = 4.9 -> 2 */
        {5, {5, -3, 0, 100, -100}, {1, -1, 0, 1, -1}, {0, 0, 0, 2, -2}},
        /* mean 25: .8 -> 1, 1.6 -> 2, 2.4 -> 2, 3.2 -> 2 */
        {4, {10, -20, 30, -40}, {1, -1, 1, -1}, {1, -2, 2, -2}},
        /* mean 4: 2*1/4 = 0.5 rounds away from zero -> 1; 3.5 -> 2 */
        {2, {1, 7}, {1, 1}, {1, 2}},
        {2, {-1, -7}, {-1, -1}, {-1, -2}},
        /* all equal: 2a/a = 2 */
        {3, {6, -6, 6}, {1, -1, 1}, {2, -2, 2}},
        /* all zero: no vote */
        {3, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}},
        /* mean 100: 2*10/100 = .2 -> 0, 2*60/100 = 1.2 -> 1, 2*230/100 = 4.6 -> 2 */
        {3, {10, -60, 230}, {1, -1, 1}, {0, -1, 2}},
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        int8_t f[6];
        egg_fitness(cases[t].d, cases[t].n, EGG_FIT_SIGN, f);
        for (int k = 0; k < cases[t].n; k++)
            if (f[k] != cases[t].sign[k]) bad(&c, "case %zu sign[%d] = %d, want %d", t, k, f[k], cases[t].sign[k]);
        egg_fitness(cases[t].d, cases[t].n, EGG_FIT_NORM, f);
        for (int k = 0; k < cases[t].n; k++)
            if (f[k] != cases[t].norm[k]) bad(&c, "case %zu norm[%d] = %d, want %d", t, k, f[k], cases[t].norm[k]);
    }
    /* extremes: no overflow with int32 differences */
    int32_t big[2] = {2147483647, -2147483647};
    int8_t f[2];
    egg_fitness(big, 2, EGG_FIT_NORM, f);
    if (f[0] != 2 || f[1] != -2) bad(&c, "norm of +-2^31-1 = %d,%d, want 2,-2", f[0], f[1]);
    done("fitness_sign_norm", &c);
}

/* Phi^-1 by bisection on erfc (independent of es.c's rational approximation). */
static double ppf_bisect(double p) {
    double lo = -40, hi = 40;
    for (int i = 0; i < 200; i++) {
        double mid = (lo + hi) / 2;
        if (0.5 * erfc(-mid / sqrt(2.0)) < p) lo = mid; else hi = mid;
    }
    return (lo + hi) / 2;
}

static void test_tau(void) {
    check c = {0};
    egg_config cf;
    egg_config_defaults(&cf);
    /* known quantiles z(1 - a/2) from normal tables: tau = floor(16 z) */
    struct { double alpha; int tau; } known[] = {
        {0.05, 31},   /* 1.959964 * 16 = 31.36 */
        {0.01, 41},   /* 2.575829 * 16 = 41.21 */
        {0.10, 26},   /* 1.644854 * 16 = 26.32 */
        {0.20, 20},   /* 1.281552 * 16 = 20.50 */
        {0.50, 10},   /* 0.674490 * 16 = 10.79 */
        {0.001, 52},  /* 3.290527 * 16 = 52.65 */
        {1.00, 0},    /* z(0.5) = 0 */
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        cf.alpha = known[i].alpha;
        for (int64_t st = 0; st <= 5000; st += 1000) {
            int t = egg_tau(&cf, st);
            if (t != known[i].tau) { bad(&c, "alpha=%g step %lld: tau %d, want %d", cf.alpha, (long long)st, t, known[i].tau); break; }
        }
    }
    /* alpha <= 1 constant against the bisection quantile */
    for (int i = 0; i < 2000; i++) {
        cf.alpha = 0.0005 + 0.9995 * (double)(rnd() % 1000000) / 1e6;
        double z = 16.0 * ppf_bisect(1.0 - cf.alpha / 2);
        if (fabs(z - floor(z) - 0.5) > 0.4999) continue; /* too close to an integer to call */
        int want = (int)floor(z);
        if (egg_tau(&cf, 0) != want || egg_tau(&cf, 123456) != want)
            bad(&c, "alpha=%.6f: tau %d/%d, want floor(%.6f) = %d", cf.alpha, egg_tau(&cf, 0), egg_tau(&cf, 123456), z, want);
    }
    /* alpha > 1 decays: alpha_e = 1 / ((2^a - 1) e / 1000 + 1): 1 at 0, 2^-a at 1000 */
    cf.alpha = 4;
    if (egg_tau(&cf, 0) != 0) bad(&c, "alpha=4 step 0: tau %d, want 0 (alpha_e = 1)", egg_tau(&cf, 0));
    {
        double z = 16.0 * ppf_bisect(1.0 - exp2(-4.0) / 2); /* 1.8627 * 16 = 29.80 */
        if (egg_tau(&cf, 1000) != (int)floor(z)) bad(&c, "alpha=4 step 1000: tau %d, want %d", egg_tau(&cf, 1000), (int)floor(z));
        if (fabs(egg_alpha_at(&cf, 1000) - 0.0625) > 1e-12) bad(&c, "alpha_at(4, 1000) = %g, want 0.0625", egg_alpha_at(&cf, 1000));
    }
    int prev = -1;
    double pa = 2;
    for (int64_t st = 0; st <= 20000; st += 7) {
        int t = egg_tau(&cf, st);
        double a = egg_alpha_at(&cf, st);
        if (t < prev || a > pa) { bad(&c, "alpha=4: not monotone at step %lld (tau %d after %d)", (long long)st, t, prev); break; }
        prev = t;
        pa = a;
    }
    if (egg_tau(&cf, 20000) <= egg_tau(&cf, 100)) bad(&c, "alpha=4: tau does not grow (%d at 100, %d at 20000)", egg_tau(&cf, 100), egg_tau(&cf, 20000));
    /* --threshold overrides */
    cf.threshold = 17;
    if (egg_tau(&cf, 0) != 17 || egg_tau(&cf, 99999) != 17) bad(&c, "--threshold 17 ignored");
    done("tau_schedule_and_quantiles", &c);
}

static void test_stream_window(void) {
    check c = {0};
    egg_config cf;
    egg_config_defaults(&cf);
    struct { int pop, group, seq; uint64_t n; } cases[] = {
        {16, 2, 16, 100000}, {32, 4, 32, 50001}, {8, 2, 7, 8 * 7 / 2 + 1}, {64, 2, 100, 1000000},
        {16, 16, 16, 17 * 5}, {16, 2, 16, 200}, {32, 2, 32, 33}, {12, 6, 5, 31},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        cf.pop = cases[ci].pop; cf.group = cases[ci].group; cf.seq = cases[ci].seq;
        const uint64_t n = cases[ci].n, T = (uint64_t)cf.seq;
        const int G = cf.pop / cf.group;
        /* nano-egg layout when every group gets a row of at least one segment */
        const int big = n - 1 >= (uint64_t)G * T;
        const uint64_t S = big ? (n - 1) / ((uint64_t)G * T) : 0;
        uint64_t *prev = calloc((size_t)G, sizeof(uint64_t));
        for (int64_t st = 0; st < 200; st++) {
            uint64_t *now = calloc((size_t)G, sizeof(uint64_t));
            for (int g = 0; g < G; g++) {
                uint64_t s1, s2;
                int r1, r2;
                egg_stream_window(&cf, n, st, g, &s1, &r1);
                egg_stream_window(&cf, n, st, g, &s2, &r2);
                if (s1 != s2 || r1 != r2) bad(&c, "case %zu: not a pure function at step %lld group %d", ci, (long long)st, g);
                if (s1 + T > n - 1) bad(&c, "case %zu step %lld group %d: window [%llu, %llu] beyond the split (n=%llu)", ci, (long long)st, g, (unsigned long long)s1, (unsigned long long)(s1 + T), (unsigned long long)n);
                if (big) {
                    int want_reset = st % (int64_t)S == 0;
                    if (r1 != want_reset) bad(&c, "case %zu step %lld group %d: reset %d, want %d (segments %llu)", ci, (long long)st, g, r1, want_reset, (unsigned long long)S);
                    if (!r1 && s1 != prev[g] + T) bad(&c, "case %zu step %lld group %d: start %llu, want %llu (contiguous)", ci, (long long)st, g, (unsigned long long)s1, (unsigned long long)(prev[g] + T));
                } else if (!r1) {
                    bad(&c, "case %zu: small corpus window without reset", ci);
                }
                now[g] = s1;
            }
            if (big) /* groups read disjoint windows [start, start + T) */
                for (int g = 0; g < G; g++)
                    for (int h = g + 1; h < G; h++) {
                        uint64_t a = now[g], b = now[h];
                        if ((a < b ? b - a : a - b) < T) bad(&c, "case %zu step %lld: groups %d and %d overlap", ci, (long long)st, g, h);
                    }
            memcpy(prev, now, sizeof(uint64_t) * (size_t)G);
            free(now);
        }
        free(prev);
    }
    /* the seed changes the data order; the step changes the window */
    cf.pop = 16; cf.group = 2; cf.seq = 16;
    uint64_t a, b;
    int r;
    int same = 0;
    for (int g = 0; g < 8; g++) {
        cf.seed = 1; egg_stream_window(&cf, 1000000, 0, g, &a, &r);
        cf.seed = 2; egg_stream_window(&cf, 1000000, 0, g, &b, &r);
        same += a == b;
    }
    if (same == 8) bad(&c, "seed 1 and 2 give the same windows");
    done("stream_window", &c);
}

static void test_shard(void) {
    check c = {0};
    const int pairs_list[] = {0, 1, 2, 3, 5, 7, 8, 13, 16, 100, 1001, 32768};
    for (int world = 1; world <= 9; world++)
        for (size_t pi = 0; pi < sizeof pairs_list / sizeof pairs_list[0]; pi++) {
            int P = pairs_list[pi];
            for (int weighted = 0; weighted < 3; weighted++) {
                double w[9];
                for (int r = 0; r < world; r++)
                    w[r] = weighted == 0 ? 1 : weighted == 1 ? (r == 0 ? 2.0 : 1.0) : 0.25 + (double)(rnd() % 1000) / 100.0;
                double tot = 0;
                for (int r = 0; r < world; r++) tot += w[r];
                int *cover = calloc((size_t)P + 1, sizeof(int));
                int prev1 = 0;
                for (int r = 0; r < world; r++) {
                    int p0, p1;
                    egg_shard(P, world, weighted ? w : NULL, r, &p0, &p1);
                    if (p0 != prev1 || p1 < p0 || p1 > P) { bad(&c, "P=%d world=%d w%d rank %d: [%d,%d) after %d", P, world, weighted, r, p0, p1, prev1); break; }
                    for (int k = p0; k < p1; k++) cover[k]++;
                    double want = weighted ? P * w[r] / tot : (double)P / world;
                    if (fabs((p1 - p0) - want) > 1.0 + 1e-9) bad(&c, "P=%d world=%d w%d rank %d: %d pairs, want %.2f +- 1", P, world, weighted, r, p1 - p0, want);
                    prev1 = p1;
                }
                if (prev1 != P) bad(&c, "P=%d world=%d w%d: last shard ends at %d", P, world, weighted, prev1);
                for (int k = 0; k < P; k++)
                    if (cover[k] != 1) { bad(&c, "P=%d world=%d w%d: pair %d covered %d times", P, world, weighted, k, cover[k]); break; }
                free(cover);
            }
        }
    done("shard_covers_exactly_once", &c);
}

/* ------------------------------------------------------- model, checkpoint */

static void test_model(void) {
    check c = {0};
    const int Vs[] = {256, 7}, Hs[] = {32, 64}, Ls[] = {1, 3};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 2; k++) {
                egg_model m;
                int V = Vs[i], H = Hs[j], L = Ls[k];
                egg_model_layout(&m, V, H, L);
                /* emb + head: 2VH; per layer 4 HxH + up + down (8H^2) + 4 vectors; ln_out H */
                size_t want = 2 * (size_t)V * H + (size_t)L * (12 * (size_t)H * H + 4 * (size_t)H) + (size_t)H;
                if (m.nparams != want) bad(&c, "V=%d H=%d L=%d: %zu params, want %zu", V, H, L, m.nparams, want);
                if (m.ntensors != 3 + 10 * L) bad(&c, "ntensors %d", m.ntensors);
                size_t off = 0;
                for (int t = 0; t < m.ntensors; t++) {
                    if (m.t[t].off != off) bad(&c, "tensor %s at %zu, want %zu", m.t[t].name, m.t[t].off, off);
                    off += m.t[t].size;
                }
                egg_model_init(&m, 5);
                for (int t = 0; t < m.ntensors; t++) {
                    const int8_t *p = egg_tensor_ptr(&m, t);
                    int is_ln = strstr(m.t[t].name, "ln") != NULL;
                    for (size_t q = 0; q < m.t[t].size; q++) {
                        if (m.t[t].kind == EGG_T_VEC && p[q] != (is_ln ? 16 : 0)) { bad(&c, "%s[%zu] = %d", m.t[t].name, q, p[q]); break; }
                        if (m.t[t].kind == EGG_T_MAT && (p[q] < -90 || p[q] > 90)) { bad(&c, "%s[%zu] = %d outside noise range", m.t[t].name, q, p[q]); break; }
                    }
                }
                uint64_t h1 = egg_model_checksum(&m, 3);
                if (h1 != egg_model_checksum(&m, 3) || h1 == egg_model_checksum(&m, 4)) bad(&c, "checksum not a function of params and step");
                m.params[m.nparams / 2] ^= 1;
                if (h1 == egg_model_checksum(&m, 3)) bad(&c, "checksum blind to a flipped bit");
                egg_model_free(&m);
            }
    if (EGG_T_LAYER(0, EGG_L_LN1) != 1 || EGG_T_LNOUT(2) != 21 || EGG_T_HEAD(2) != 22) bad(&c, "tensor id macros");
    done("model_layout_init_checksum", &c);
}

static void test_checkpoint(void) {
    check c = {0};
    char dir[] = "/tmp/egg_unit_ckpt.XXXXXX";
    if (!mkdtemp(dir)) { result("checkpoint_roundtrip", "mkdtemp failed"); return; }
    egg_config cf;
    egg_config_defaults(&cf);
    cf.hidden = 32; cf.layers = 1; cf.pop = 4; cf.vocab = 256;
    egg_model m;
    egg_model_layout(&m, 256, 32, 1);
    egg_model_init(&m, 9);
    uint64_t sb = (uint64_t)cf.pop * m.L * m.H;
    int8_t *st = malloc(sb);
    for (uint64_t i = 0; i < sb; i++) st[i] = (int8_t)rnd_in(-127, 127);
    char path[2048];
    egg_err err = {0};
    if (egg_ckpt_write(dir, &cf, &m, 1000, 42, st, sb, path, sizeof path, &err)) bad(&c, "write: %s", err.msg);
    egg_ckpt ck;
    if (!c.n) {
        if (egg_ckpt_read("latest", dir, &cf, &m, 1000, &ck, NULL, 0, &err)) bad(&c, "read: %s", err.msg);
        else {
            if (ck.step != 42 || ck.nparams != m.nparams || memcmp(ck.params, m.params, m.nparams) || memcmp(ck.state, st, sb))
                bad(&c, "round trip differs");
            egg_ckpt_free(&ck);
        }
        /* another config, other training tokens */
        egg_config c2 = cf;
        c2.seed = 2;
        if (!egg_ckpt_read(path, "", &c2, &m, 1000, &ck, NULL, 0, &err)) { bad(&c, "accepted another seed"); egg_ckpt_free(&ck); }
        if (!egg_ckpt_read(path, "", &cf, &m, 999, &ck, NULL, 0, &err)) { bad(&c, "accepted other training tokens"); egg_ckpt_free(&ck); }
        /* flipped byte, truncation */
        uint8_t *buf;
        size_t len;
        if (egg_ckpt_load_file(path, &buf, &len, &err)) bad(&c, "load: %s", err.msg);
        else {
            for (size_t pos = 8; pos < len; pos += len / 7 + 1) {
                buf[pos] ^= 0x10;
                if (!egg_ckpt_parse(buf, len, path, &cf, &m, 1000, &ck, &err)) { bad(&c, "accepted a flipped byte at %zu", pos); egg_ckpt_free(&ck); }
                buf[pos] ^= 0x10;
            }
            for (size_t l = 0; l < len; l += len / 9 + 1)
                if (!egg_ckpt_parse(buf, l, path, &cf, &m, 1000, &ck, &err)) { bad(&c, "accepted a file truncated to %zu bytes", l); egg_ckpt_free(&ck); }
            if (egg_ckpt_parse(buf, len, path, &cf, &m, 1000, &ck, &err)) bad(&c, "intact buffer refused: %s", err.msg);
            else egg_ckpt_free(&ck);
            free(buf);
        }
    }
    /* cleanup */
    char cmd[2100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) bad(&c, "cleanup failed");
    free(st);
    egg_model_free(&m);
    done("checkpoint_roundtrip_and_rejects", &c);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    double t0 = egg_now();
    test_noise();
    test_mm_shift();
    test_ln();
    test_div16();
    test_gru();
    test_loss();
    test_gemm();
    test_fitness();
    test_tau();
    test_stream_window();
    test_shard();
    test_model();
    test_checkpoint();
    printf("# test_unit: %d failed, %.1fs\n", g_fail, egg_now() - t0);
    return g_fail ? 1 : 0;
}

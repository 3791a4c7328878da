#include "es.h"
#include <math.h>
#include "egg_math.h"

void egg_fitness(const int32_t *d, int pairs, int kind, int8_t *fit) {
    if (kind == EGG_FIT_SIGN) {
        for (int k = 0; k < pairs; k++) fit[k] = (int8_t)egg_sign32(d[k]);
        return;
    }
    int64_t sum = 0;
    for (int k = 0; k < pairs; k++) sum += d[k] < 0 ? -(int64_t)d[k] : d[k];
    int64_t m = sum / pairs;
    if (m < 1) m = 1;
    for (int k = 0; k < pairs; k++) {
        int64_t a = d[k] < 0 ? -(int64_t)d[k] : d[k];
        int64_t q = (4 * a + m) / (2 * m); /* round(2a/m), halves away from zero */
        if (q > 2) q = 2;
        fit[k] = (int8_t)(d[k] < 0 ? -q : q);
    }
}

int egg_update_entries(const int8_t *fit, int pairs, int *ek, int8_t *es) {
    int E = 0;
    for (int k = 0; k < pairs; k++)
        for (int u = 0; u < (fit[k] < 0 ? -fit[k] : fit[k]); u++) {
            ek[E] = k;
            es[E] = (int8_t)(fit[k] > 0 ? 1 : -1);
            E++;
        }
    return E;
}

/* Inverse of the standard normal CDF for p in (0.5, 1): Acklam's rational
 * approximation refined by one Halley step on erfc (|error| < 1e-15). */
static double norm_ppf(double p) {
    if (p <= 0.5) return 0.0;
    if (p >= 1.0) return 40.0;
    static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                               1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                               6.680131188771972e+01, -1.328068155288572e+01};
    static const double cc[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00};
    static const double dd[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                3.754408661907416e+00};
    double x, q = 1.0 - p;
    if (q < 0.02425) {
        double t = sqrt(-2.0 * log(q));
        x = -(((((cc[0] * t + cc[1]) * t + cc[2]) * t + cc[3]) * t + cc[4]) * t + cc[5]) /
            ((((dd[0] * t + dd[1]) * t + dd[2]) * t + dd[3]) * t + 1.0);
    } else {
        double u = p - 0.5, t = u * u;
        x = (((((a[0] * t + a[1]) * t + a[2]) * t + a[3]) * t + a[4]) * t + a[5]) * u /
            (((((b[0] * t + b[1]) * t + b[2]) * t + b[3]) * t + b[4]) * t + 1.0);
    }
    double e = 0.5 * erfc(-x / sqrt(2.0)) - p;
    double u = e * sqrt(2.0 * 3.14159265358979323846) * exp(x * x / 2.0);
    return x - u / (1.0 + x * u / 2.0);
}

double egg_alpha_at(const egg_config *c, int64_t step) {
    if (c->alpha <= 1.0) return c->alpha;
    return 1.0 / ((exp2(c->alpha) - 1.0) * (double)step / 1000.0 + 1.0);
}

int egg_tau(const egg_config *c, int64_t step) {
    if (c->threshold >= 0) return c->threshold;
    double q = norm_ppf(1.0 - egg_alpha_at(c, step) / 2.0);
    return (int)floor(16.0 * q);
}

void egg_stream_window(const egg_config *c, uint64_t n, int64_t step, int g, uint64_t *start, int *reset) {
    const uint64_t G = (uint64_t)(c->pop / c->group), T = (uint64_t)c->seq;
    const uint64_t salt = egg_mix64(c->seed ^ 0x646174615f6f7264ull); /* "data_ord" */
    if (n - 1 >= G * T) {
        /* rows of S contiguous segments; a row is read segment by segment, the
         * state carrying over; each cycle of S steps rotates rows among groups. */
        uint64_t S = (n - 1) / (G * T), seg = (uint64_t)step % S, cyc = (uint64_t)step / S;
        uint64_t row = ((uint64_t)g + egg_mix64(salt + cyc * EGG_GOLDEN) % G) % G;
        *start = row * S * T + seg * T;
        *reset = seg == 0;
    } else {
        /* small corpus: an independent random window per group and step */
        *start = egg_mix64(salt ^ egg_mix64(((uint64_t)step << 24) ^ (uint64_t)g)) % (n - T);
        *reset = 1;
    }
}

void egg_shard(int pairs, int world, const double *w, int rank, int *p0, int *p1) {
    if (!w) {
        *p0 = (int)((int64_t)pairs * rank / world);
        *p1 = (int)((int64_t)pairs * (rank + 1) / world);
        return;
    }
    double tot = 0, acc = 0;
    for (int r = 0; r < world; r++) tot += w[r];
    for (int r = 0; r < rank; r++) acc += w[r];
    *p0 = (int)llround(pairs * (acc / tot));
    *p1 = (int)llround(pairs * ((acc + w[rank]) / tot));
}

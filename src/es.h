/* es.h — EGGROLL's host-side rules: pair fitness, the vote threshold schedule,
 * and which token window each stream reads at each step. */
#ifndef EGG_ES_H
#define EGG_ES_H
#include <stdint.h>
#include "config.h"

/* fit[k] from the score differences d[k] = score(2k) - score(2k+1) of all pairs.
 * sign: sign(d). norm: round(2 d / mean|d|) clamped to -2..2 (integer only). */
void egg_fitness(const int32_t *d, int pairs, int kind, int8_t *fit);

/* The update's entries: one per unit of |fit[k]| (fit in -2..2), so that
 * Z = sum_e es[e] * A_{ek[e]} B_{ek[e]}^T. ek, es hold >= 2 * pairs. Returns E. */
int egg_update_entries(const int8_t *fit, int pairs, int *ek, int8_t *es);

/* Vote threshold tau (1/16 sigma units) at a step: --threshold, or
 * floor(16 * PhiInv(1 - alpha_e / 2)) with nano-egg's alpha schedule. */
int egg_tau(const egg_config *c, int64_t step);
double egg_alpha_at(const egg_config *c, int64_t step);

/* Window of group g at a step over a training span of n tokens:
 * tokens [start, start + seq]; reset = state starts from zero. Pure function
 * of (seed, step, group) and the shapes. See docs/ALGORITHM.md. */
void egg_stream_window(const egg_config *c, uint64_t n, int64_t step, int g, uint64_t *start, int *reset);

/* Contiguous shard of `pairs` pairs for `rank` of `world`, proportional to
 * weights (NULL = equal): pairs [*p0, *p1). Deterministic integer split. */
void egg_shard(int pairs, int world, const double *weights, int rank, int *p0, int *p1);

#endif

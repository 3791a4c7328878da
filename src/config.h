/* config.h — every run-time setting of egg, parsed from flags and from a
 * key = value file (--config), validated once, printed at start. */
#ifndef EGG_CONFIG_H
#define EGG_CONFIG_H
#include <stdint.h>
#include "util.h"

#define EGG_VERSION "0.1.0"

typedef enum { EGG_FIT_SIGN = 0, EGG_FIT_NORM = 1 } egg_fitness_kind;
typedef enum { EGG_BK_AUTO = 0, EGG_BK_CPU, EGG_BK_CUDA, EGG_BK_HIP } egg_backend_kind;
/* --update auto: allreduce where the ranks sum through NCCL (a GPU each), else replicated (main.c decides) */
typedef enum { EGG_UPD_AUTO = 0, EGG_UPD_REPLICATED = 1, EGG_UPD_ALLREDUCE = 2 } egg_update_kind;
typedef enum { EGG_SIMD_AUTO = 0, EGG_SIMD_SCALAR, EGG_SIMD_AVX2, EGG_SIMD_AVX512 } egg_simd_kind;

typedef struct egg_config {
    /* data */
    char data[1024];
    char val_data[1024];
    double val_frac;
    int vocab;            /* 0: from the data (256 for text) */
    /* model */
    int hidden, layers;
    /* EGGROLL */
    int seq, pop, rank, sigma_shift, group, noise_reuse;
    int fitness;          /* egg_fitness_kind */
    double alpha;
    int threshold;        /* >= 0: fixed tau (1/16 sigma units); -1: from --alpha */
    /* run */
    int64_t steps;
    uint64_t seed;
    int threads;          /* 0: all cores */
    int backend;          /* egg_backend_kind */
    int simd;             /* egg_simd_kind (CPU backend) */
    double time_limit;    /* seconds, 0 = none */
    double hang_timeout;  /* seconds without progress before a rank (of a multi-rank job, or on a GPU) exits; 0 = never */
    int bench;
    /* validation */
    int64_t val_every;
    int val_len, val_windows;
    /* output */
    char log[1024];
    int64_t print_every;
    int progress;         /* 0 auto (TTY), 1 off, 2 on: the order of "auto|off|on" */
    int64_t sample_every;
    char prompt[1024];
    int sample_len;
    double temperature, min_p, presence_penalty;
    /* checkpoints */
    char checkpoint_dir[1024];
    int64_t checkpoint_every;
    char resume[1024];
    /* distributed (MPI) */
    int device;           /* -1: node-local rank */
    int64_t check_every;
    char shard_weights[256];
    int exchange;         /* 0 auto, 1 mpi, 2 nccl */
    int update;           /* egg_update_kind */
    int64_t test_diverge_step; /* test-only: plant a divergence on the last rank */
    int test_step_ms;          /* test-only: every rank sleeps this long in each step after the first */
    int64_t test_sleep_step;   /* test-only: ... and test_sleep_ms more in this step */
    int test_sleep_ms;
    char dump_scores[1024];    /* test-only: append every step's int32 member scores */
    /* bookkeeping: which keys were given explicitly */
    int given_steps;
} egg_config;

void egg_config_defaults(egg_config *c);
/* Parse argv (flags override --config FILE). Returns 0, EGG_EINPUT, or -1 when
 * --help / --version was printed (caller exits 0). */
int egg_config_parse(egg_config *c, int argc, char **argv, egg_err *err);
/* Cross-field validation (after the data's vocab is known). */
int egg_config_validate(const egg_config *c, egg_err *err);
void egg_config_print(const egg_config *c, FILE *f);
void egg_config_usage(FILE *f);
const char *egg_backend_name(int kind);
/* The backends compiled into this binary, e.g. "cpu cuda". */
const char *egg_compiled_backends(void);

#endif

#define _POSIX_C_SOURCE 200809L
#include "config.h"
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef enum { T_INT, T_I64, T_U64, T_DBL, T_STR, T_ENUM, T_FLAG } opt_type;

typedef struct {
    const char *name;     /* flag without "--"; config-file key (with - or _) */
    opt_type type;
    size_t off, size;
    double lo, hi;        /* numeric range, inclusive */
    const char *enums;    /* "a|b|c" for T_ENUM (value = index) */
    const char *help;
} opt_def;

#define O(f) offsetof(egg_config, f), sizeof(((egg_config *)0)->f)
static const opt_def OPTS[] = {
    {"data", T_STR, O(data), 0, 0, NULL, "training data: .txt, .txt.zst or .bin token file (default: input.txt.zst, else input.txt)"},
    {"val-data", T_STR, O(val_data), 0, 0, NULL, "separate validation file (default: the last --val-frac of --data)"},
    {"val-frac", T_DBL, O(val_frac), 0.0001, 0.5, NULL, "fraction of the data held out for validation [0.01]"},
    {"vocab", T_INT, O(vocab), 0, 65536, NULL, "vocabulary size; 0 = from the data (256 for text) [0]"},
    {"hidden", T_INT, O(hidden), 32, 1024, NULL, "hidden size H, a multiple of 32 [256]"},
    {"layers", T_INT, O(layers), 1, 64, NULL, "number of layers [6]"},
    {"seq", T_INT, O(seq), 1, 65536, NULL, "tokens per member per step [100]"},
    {"pop", T_INT, O(pop), 2, 1 << 24, NULL, "population size, even (antithetic pairs) [64]"},
    {"rank", T_INT, O(rank), 1, 16, NULL, "rank r of each perturbation a.b^T [1]"},
    {"sigma-shift", T_INT, O(sigma_shift), 0, 16, NULL, "perturbation scale: pert >> (4 + sigma-shift) [4]"},
    {"group", T_INT, O(group), 2, 1 << 24, NULL, "members that read one token stream; even, divides --pop [2]"},
    {"noise-reuse", T_INT, O(noise_reuse), 1, 1 << 30, NULL, "steps that share one noise draw [1]"},
    {"fitness", T_ENUM, O(fitness), 0, 0, "sign|norm", "pair fitness: sign of the difference, or normalised difference in -2..2 [sign]"},
    {"alpha", T_DBL, O(alpha), 1e-6, 64, NULL, "update rate: <= 1 constant share of weights voted; > 1 decays (nano-egg schedule) [4]"},
    {"threshold", T_INT, O(threshold), -1, 100000, NULL, "fixed vote threshold tau in 1/16 sigma (overrides --alpha); -1 = off [-1]"},
    {"steps", T_I64, O(steps), 0, 1e15, NULL, "total steps (a resumed run continues up to this) [1000]"},
    {"seed", T_U64, O(seed), 0, 0, NULL, "seed of init, noise and data order [1]"},
    {"threads", T_INT, O(threads), 0, 4096, NULL, "CPU threads; 0 = all cores [0]"},
    {"backend", T_ENUM, O(backend), 0, 0, "auto|cpu|cuda|hip", "compute backend [auto]"},
    {"simd", T_ENUM, O(simd), 0, 0, "auto|scalar|avx2|avx512", "CPU kernel path (results are identical) [auto]"},
    {"time-limit", T_DBL, O(time_limit), 0, 1e12, NULL, "stop cleanly after this many seconds; 0 = none [0]"},
    {"hang-timeout", T_DBL, O(hang_timeout), 0, 1e9, NULL,
     "with 2+ ranks or a GPU: exit (ending the job) when no step, validation or checkpoint finished for this many seconds "
     "(or 10x the longest step so far, if more), e.g. a rank or the network stopped answering; 0 = never [1800]"},
    {"bench", T_FLAG, O(bench), 0, 1, NULL, "benchmark: run --steps (default 5) steps, no validation, report throughput"},
    {"val-every", T_I64, O(val_every), 0, 1e15, NULL, "validate every N steps (and at the end); 0 = only at the end [50]"},
    {"val-len", T_INT, O(val_len), 1, 1 << 20, NULL, "tokens per validation window [256]"},
    {"val-windows", T_INT, O(val_windows), 1, 1 << 20, NULL, "validation windows, evenly spaced over the split [32]"},
    {"log", T_STR, O(log), 0, 0, NULL, "append one JSON object per step to this file"},
    {"print-every", T_I64, O(print_every), 1, 1e15, NULL, "print a step line every N steps [1]"},
    {"progress", T_ENUM, O(progress), 0, 0, "auto|off|on", "progress bar with ETA (auto: when stdout is a TTY) [auto]"},
    {"sample-every", T_I64, O(sample_every), 0, 1e15, NULL, "print a generated sample every N steps; 0 = never [0]"},
    {"prompt", T_STR, O(prompt), 0, 0, NULL, "prompt for samples [\"\"]"},
    {"sample-len", T_INT, O(sample_len), 1, 1 << 20, NULL, "tokens per sample [200]"},
    {"temperature", T_DBL, O(temperature), 0, 100, NULL, "sampling temperature; 0 = greedy [1.0]"},
    {"min-p", T_DBL, O(min_p), 0, 1, NULL, "min-p sampling cut-off [0.05]"},
    {"presence-penalty", T_DBL, O(presence_penalty), 0, 100, NULL, "lower the logit of tokens already sampled by X bits [0]"},
    {"checkpoint-dir", T_STR, O(checkpoint_dir), 0, 0, NULL, "directory for checkpoints (created if missing)"},
    {"checkpoint-every", T_I64, O(checkpoint_every), 0, 1e15, NULL, "write a checkpoint every N steps (and at the end); 0 = end only [100]"},
    {"resume", T_STR, O(resume), 0, 0, NULL, "resume from 'latest' (in --checkpoint-dir) or a checkpoint path"},
    {"device", T_INT, O(device), -1, 1024, NULL, "GPU index for this rank; -1 = node-local rank [-1]"},
    {"check-every", T_I64, O(check_every), 0, 1e15, NULL, "compare replica checksums across ranks every N steps; 0 = end only [50]"},
    {"shard-weights", T_STR, O(shard_weights), 0, 0, NULL, "relative speed per rank, e.g. 2,1,1 (mixed hardware) [equal]"},
    {"exchange", T_ENUM, O(exchange), 0, 0, "auto|mpi|nccl", "fitness exchange transport [auto]"},
    {"update", T_ENUM, O(update), 0, 0, "auto|replicated|allreduce",
     "update across ranks: replicated (each from all pairs' fitness), allreduce (own pairs, votes summed), "
     "auto: allreduce where the ranks have NCCL (a GPU each), else replicated [auto]"},
    {"test-diverge-step", T_I64, O(test_diverge_step), -1, 1e15, NULL, NULL /* hidden: tests only */},
    {"test-step-ms", T_INT, O(test_step_ms), 0, 100000, NULL, NULL /* hidden: tests only (--hang-timeout) */},
    {"test-sleep-step", T_I64, O(test_sleep_step), -1, 1e15, NULL, NULL /* hidden: tests only */},
    {"test-sleep-ms", T_INT, O(test_sleep_ms), 0, 100000, NULL, NULL /* hidden: tests only */},
    {"dump-scores", T_STR, O(dump_scores), 0, 0, NULL, NULL /* hidden: tests only (backend comparison) */},
};
#define NOPTS (sizeof OPTS / sizeof OPTS[0])

void egg_config_defaults(egg_config *c) {
    memset(c, 0, sizeof *c);
    c->val_frac = 0.01;
    c->hidden = 256; c->layers = 6;
    c->seq = 100; c->pop = 64; c->rank = 1; c->sigma_shift = 4; c->group = 2; c->noise_reuse = 1;
    c->fitness = EGG_FIT_SIGN; c->alpha = 4.0; c->threshold = -1;
    c->steps = 1000; c->seed = 1;
    c->val_every = 50; c->val_len = 256; c->val_windows = 32;
    c->print_every = 1; c->progress = 0;
    c->sample_len = 200; c->temperature = 1.0; c->min_p = 0.05;
    c->checkpoint_every = 100;
    c->device = -1; c->check_every = 50; c->test_diverge_step = -1; c->test_sleep_step = -1;
    c->hang_timeout = 1800;
}

static const opt_def *find_opt(const char *name, size_t len) {
    for (size_t i = 0; i < NOPTS; i++) {
        const char *n = OPTS[i].name;
        if (strlen(n) != len) continue;
        size_t j = 0;
        for (; j < len; j++) {
            char a = name[j] == '_' ? '-' : name[j];
            if (a != n[j]) break;
        }
        if (j == len) return &OPTS[i];
    }
    return NULL;
}

static int set_opt(egg_config *c, const opt_def *o, const char *val, const char *where, egg_err *err) {
    char *p = (char *)c + o->off;
    char *end = NULL;
    if (o->type == T_FLAG) {
        if (!val || !strcmp(val, "1") || !strcmp(val, "true") || !strcmp(val, "yes")) { *(int *)p = 1; return 0; }
        if (!strcmp(val, "0") || !strcmp(val, "false") || !strcmp(val, "no")) { *(int *)p = 0; return 0; }
        return egg_fail(err, EGG_EINPUT, "%s --%s: expected true or false, got '%s'", where, o->name, val);
    }
    if (!val) return egg_fail(err, EGG_EINPUT, "%s --%s needs a value (see --help)", where, o->name);
    switch (o->type) {
    case T_STR:
        if (strlen(val) >= o->size)
            return egg_fail(err, EGG_EINPUT, "%s --%s: value longer than %zu characters", where, o->name, o->size - 1);
        strcpy(p, val);
        return 0;
    case T_ENUM: {
        const char *e = o->enums;
        for (int idx = 0; *e; idx++) {
            const char *bar = strchr(e, '|');
            size_t l = bar ? (size_t)(bar - e) : strlen(e);
            if (strlen(val) == l && !strncmp(val, e, l)) { *(int *)p = idx; return 0; }
            e += l + (bar ? 1 : 0);
        }
        return egg_fail(err, EGG_EINPUT, "%s --%s: '%s' is not one of %s", where, o->name, val, o->enums);
    }
    case T_DBL: {
        errno = 0;
        double v = strtod(val, &end);
        if (errno || end == val || *end || !isfinite(v))
            return egg_fail(err, EGG_EINPUT, "%s --%s: '%s' is not a number", where, o->name, val);
        if (v < o->lo || v > o->hi)
            return egg_fail(err, EGG_EINPUT, "%s --%s: %s is out of range %g..%g", where, o->name, val, o->lo, o->hi);
        *(double *)p = v;
        return 0;
    }
    case T_U64: {
        if (val[0] == '-') return egg_fail(err, EGG_EINPUT, "%s --%s: '%s' must be a non-negative integer", where, o->name, val);
        errno = 0;
        unsigned long long v = strtoull(val, &end, 0);
        if (errno || end == val || *end)
            return egg_fail(err, EGG_EINPUT, "%s --%s: '%s' is not an integer", where, o->name, val);
        *(uint64_t *)p = v;
        return 0;
    }
    default: {
        errno = 0;
        long long v = strtoll(val, &end, 10);
        if (errno || end == val || *end)
            return egg_fail(err, EGG_EINPUT, "%s --%s: '%s' is not an integer", where, o->name, val);
        if ((double)v < o->lo || (double)v > o->hi)
            return egg_fail(err, EGG_EINPUT, "%s --%s: %s is out of range %.0f..%.0f", where, o->name, val, o->lo, o->hi);
        if (o->type == T_INT) *(int *)p = (int)v; else *(int64_t *)p = v;
        return 0;
    }
    }
}

static void trim(char **s) {
    while (isspace((unsigned char)**s)) (*s)++;
    char *e = *s + strlen(*s);
    while (e > *s && isspace((unsigned char)e[-1])) *--e = 0;
}

static int parse_file(egg_config *c, const char *path, egg_err *err) {
    FILE *f = fopen(path, "r");
    if (!f) return egg_fail(err, EGG_EINPUT, "--config %s: cannot open (%s)", path, strerror(errno));
    struct stat st; /* a directory opens for reading on Linux and reads as nothing */
    if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
        fclose(f);
        return egg_fail(err, EGG_EINPUT, "--config %s: not a regular file (pass a file of 'key = value' lines)", path);
    }
    char line[4096];
    int ln = 0, rc = 0;
    while (!rc && fgets(line, sizeof line, f)) {
        ln++;
        char *s = line;
        char *hash = strchr(s, '#');
        if (hash) *hash = 0;
        trim(&s);
        if (!*s) continue;
        char *eq = strchr(s, '=');
        char where[1100];
        snprintf(where, sizeof where, "%s:%d:", path, ln);
        if (!eq) { rc = egg_fail(err, EGG_EINPUT, "%s expected 'key = value', got '%s'", where, s); break; }
        *eq = 0;
        char *k = s, *v = eq + 1;
        trim(&k);
        trim(&v);
        size_t vl = strlen(v);
        if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') { v[vl - 1] = 0; v++; }
        const opt_def *o = find_opt(k, strlen(k));
        if (!o || !strcmp(k, "config")) { rc = egg_fail(err, EGG_EINPUT, "%s unknown key '%s' (see egg_mgpu --help)", where, k); break; }
        rc = set_opt(c, o, v, where, err);
        if (!rc && !strcmp(o->name, "steps")) c->given_steps = 1;
    }
    fclose(f);
    return rc;
}

const char *egg_backend_name(int kind) {
    static const char *n[] = {"auto", "cpu", "cuda", "hip"};
    return kind >= 0 && kind < 4 ? n[kind] : "?";
}

const char *egg_compiled_backends(void) {
    return "cpu"
#ifdef EGG_HAVE_CUDA
           " cuda"
#endif
#ifdef EGG_HAVE_HIP
           " hip"
#endif
        ;
}

void egg_config_usage(FILE *f) {
    fprintf(f,
            "usage: egg_mgpu [--data FILE] [options]\n"
            "Train an int8 EGG language model with EGGROLL evolution strategies.\n"
            "Under MPI: mpirun -np N egg_mgpu ... (one rank per GPU; only fitness crosses ranks).\n\n"
            "options (also as 'key = value' lines in --config FILE; flags override):\n");
    for (size_t i = 0; i < NOPTS; i++) {
        const opt_def *o = &OPTS[i];
        if (!o->help) continue;
        char lhs[64];
        const char *arg = o->type == T_FLAG ? "" : o->type == T_STR ? " S" : o->type == T_ENUM ? " E" : o->type == T_DBL ? " X" : " N";
        snprintf(lhs, sizeof lhs, "--%s%s", o->name, arg);
        fprintf(f, "  %-22s %s\n", lhs, o->help);
    }
    fprintf(f, "  %-22s %s\n  %-22s %s\n  %-22s %s\n", "--config FILE", "read settings from FILE first",
            "--help", "print this help", "--version", "print version and compiled backends");
    fprintf(f, "\nexit status: 0 success, 2 bad usage or input, 1 runtime failure.\n");
}

int egg_config_parse(egg_config *c, int argc, char **argv, egg_err *err) {
    /* --help / --version first, then --config, then every flag in order. */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { egg_config_usage(stdout); return -1; }
        if (!strcmp(argv[i], "--version")) {
            printf("egg_mgpu %s\nbackends: %s\nnvtx: %s\n", EGG_VERSION, egg_compiled_backends(), egg_range_names());
            return -1;
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strncmp(a, "--config", 8) && (a[8] == 0 || a[8] == '=')) {
            const char *v = a[8] == '=' ? a + 9 : (i + 1 < argc ? argv[++i] : NULL);
            if (!v) return egg_fail(err, EGG_EINPUT, "--config needs a file name");
            int rc = parse_file(c, v, err);
            if (rc) return rc;
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) || !a[2])
            return egg_fail(err, EGG_EINPUT, "unexpected argument '%s' (flags are --name value; see --help)", a);
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t nl = eq ? (size_t)(eq - name) : strlen(name);
        if (nl == 6 && !strncmp(name, "config", 6)) { if (!eq) i++; continue; }
        const opt_def *o = find_opt(name, nl);
        if (!o || strchr(name, '_')) return egg_fail(err, EGG_EINPUT, "unknown flag '--%.*s' (see --help)", (int)nl, name);
        const char *v = eq ? eq + 1 : NULL;
        if (!v && o->type != T_FLAG) {
            if (i + 1 >= argc) return egg_fail(err, EGG_EINPUT, "--%s needs a value (see --help)", o->name);
            v = argv[++i];
        }
        int rc = set_opt(c, o, v, "", err);
        if (rc) { memmove(err->msg, err->msg + 1, strlen(err->msg)); return rc; } /* drop the empty where-prefix space */
        if (!strcmp(o->name, "steps")) c->given_steps = 1;
    }
    return 0;
}

int egg_config_validate(const egg_config *c, egg_err *err) {
    if (c->hidden % 32) return egg_fail(err, EGG_EINPUT, "--hidden %d: must be a multiple of 32 (32..1024)", c->hidden);
    if (c->pop % 2) return egg_fail(err, EGG_EINPUT, "--pop %d: must be even (members come in antithetic +/- pairs)", c->pop);
    if (c->group % 2) return egg_fail(err, EGG_EINPUT, "--group %d: must be even (a pair reads one stream)", c->group);
    if (c->pop % c->group) return egg_fail(err, EGG_EINPUT, "--group %d: must divide --pop %d", c->group, c->pop);
    /* Votes are int32: pairs * rank * 90*90 * max|f| must fit. */
    double vmax = (double)(c->pop / 2) * c->rank * 8100.0 * (c->fitness == EGG_FIT_NORM ? 2 : 1);
    if (vmax > 2147483647.0)
        return egg_fail(err, EGG_EINPUT, "--pop %d with --rank %d: votes could overflow int32; lower --pop or --rank", c->pop, c->rank);
#ifndef EGG_HAVE_CUDA
    if (c->backend == EGG_BK_CUDA) return egg_fail(err, EGG_EINPUT, "--backend cuda: this binary was built without CUDA (backends: %s); rebuild with nvcc on the PATH", egg_compiled_backends());
#endif
#ifndef EGG_HAVE_HIP
    if (c->backend == EGG_BK_HIP) return egg_fail(err, EGG_EINPUT, "--backend hip: this binary was built without HIP (backends: %s); rebuild with hipcc on the PATH", egg_compiled_backends());
#endif
    return 0;
}

void egg_config_print(const egg_config *c, FILE *f) {
    fprintf(f, "egg: config");
    for (size_t i = 0; i < NOPTS; i++) {
        const opt_def *o = &OPTS[i];
        if (!o->help) continue;
        const char *p = (const char *)c + o->off;
        switch (o->type) {
        case T_STR: if (*p) fprintf(f, " %s=%s", o->name, p); break;
        case T_INT: case T_FLAG: fprintf(f, " %s=%d", o->name, *(const int *)p); break;
        case T_I64: fprintf(f, " %s=%lld", o->name, (long long)*(const int64_t *)p); break;
        case T_U64: fprintf(f, " %s=%llu", o->name, (unsigned long long)*(const uint64_t *)p); break;
        case T_DBL: fprintf(f, " %s=%g", o->name, *(const double *)p); break;
        case T_ENUM: {
            int v = *(const int *)p;
            const char *e = o->enums;
            for (int k = 0; k < v && e; k++) { e = strchr(e, '|'); if (e) e++; }
            const char *bar = e ? strchr(e, '|') : NULL;
            fprintf(f, " %s=%.*s", o->name, e ? (bar ? (int)(bar - e) : (int)strlen(e)) : 1, e ? e : "?");
            break;
        }
        }
    }
    fprintf(f, "\n");
}

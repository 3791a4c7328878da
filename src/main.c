/* main.c — egg_mgpu: parse, load, train, validate, checkpoint, report.
 * Every rank runs this; rank 0 alone prints, logs and writes checkpoints. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "backend.h"
#include "checkpoint.h"
#include "config.h"
#include "data.h"
#include "dist.h"
#include "egg_math.h"
#include "es.h"
#include "model.h"

static volatile sig_atomic_t g_stop_signal;
static void on_signal(int s) { g_stop_signal = s; }

/* members per GPU from which a GPU runs at full speed (below it the start-up prints a note) */
enum { EGG_GPU_FULL_POP = 8192 };

/* Hang watchdog (--hang-timeout; multi-rank jobs, and one process on a GPU). A rank that stops answering (a hung
 * GPU, a stopped process, a network partition) leaves the others waiting in an MPI or NCCL collective that never
 * returns, and a hung GPU leaves even a lone process waiting on it: the job would hold its allocation until the
 * scheduler's time limit. The main thread marks progress at start-up and
 * after each step, validation and checkpoint; a thread exits the rank when none came for --hang-timeout
 * seconds, so mpirun or srun ends the job, which can then resume from its last checkpoint. */
static _Atomic long long g_beat_us;   /* egg_now() at the last progress, in microseconds */
static _Atomic long long g_beat_step; /* the step count then; -1 during start-up */
static _Atomic long long g_gap_us;    /* the longest time between two marks so far */
static double g_hang_s;
static int g_hang_rank;
/* gap: count the time since the last mark towards the longest gap (not start-up's, nor the first step's warm-up) */
static void beat(int64_t step, int gap) {
    const long long now = (long long)(egg_now() * 1e6), last = atomic_load(&g_beat_us);
    if (gap && now - last > atomic_load(&g_gap_us)) atomic_store(&g_gap_us, now - last);
    atomic_store(&g_beat_step, (long long)step);
    atomic_store(&g_beat_us, now);
}
static void *watchdog(void *arg) {
    (void)arg;
    for (;;) {
        struct timespec nap = {0, 200 * 1000 * 1000};
        nanosleep(&nap, NULL);
        /* the limit: --hang-timeout, or 10 times the longest gap between marks so far where that is longer (a
         * job whose steps legitimately take minutes is not cut by a limit set for seconds) */
        const double idle = egg_now() - (double)atomic_load(&g_beat_us) * 1e-6;
        const double lim = fmax(g_hang_s, 10.0 * (double)atomic_load(&g_gap_us) * 1e-6);
        if (idle < lim) continue;
        const long long st = atomic_load(&g_beat_step);
        char where[64];
        if (st < 0) snprintf(where, sizeof where, "during start-up");
        else snprintf(where, sizeof where, "after step %lld", st);
        fprintf(stderr,
                "egg: error: rank %d: no progress for %.0f s %s (--hang-timeout %g%s): another rank, a GPU or the network "
                "stopped answering; exiting so that the job ends (resume with --resume latest)\n",
                g_hang_rank, idle, where, g_hang_s, lim > g_hang_s ? ", or 10x the longest step so far" : "");
        _exit(1);
    }
    return NULL;
}

typedef struct run {
    egg_config c;
    egg_dist d;
    egg_tokens data, vdata;
    egg_span train, val;
    int text;                 /* bits per byte (text) or per token */
    egg_model m;
    egg_backend be;
    int have_be;
    int p0, p1;               /* this rank's pairs */
    int *counts;              /* pairs per rank */
    int64_t step;             /* steps done */
    FILE *log;
    double t_start;
} run;

/* start the watchdog once (--hang-timeout > 0): for every rank of a multi-rank job, and for one process on a GPU */
static void arm_watchdog(const run *R) {
    static int armed;
    pthread_t wd;
    if (armed || R->c.hang_timeout <= 0) return;
    armed = 1;
    g_hang_s = R->c.hang_timeout;
    g_hang_rank = R->d.rank;
    beat(-1, 0);
    if (pthread_create(&wd, NULL, watchdog, NULL) == 0) pthread_detach(wd);
}

static int file_exists(const char *p) { struct stat st; return stat(p, &st) == 0; }

/* ---------------------------------------------------------------- set-up */

static int setup_data(run *R, egg_err *err) {
    egg_config *c = &R->c;
    if (!*c->data) {
        const char *pick = file_exists("input.txt.zst") ? "input.txt.zst" : file_exists("input.txt") ? "input.txt" : NULL;
        if (!pick) return egg_fail(err, EGG_EINPUT, "no --data given and neither input.txt.zst nor input.txt is in %s; pass --data FILE", getcwd((char[1024]){0}, 1024) ? "the working directory" : ".");
        snprintf(c->data, sizeof c->data, "%s", pick);
        if (R->d.rank == 0) printf("egg: no --data given: using %s from the working directory\n", pick);
    }
    int rc = egg_tokens_open(&R->data, c->data, err);
    if (rc) return rc;
    R->text = R->data.kind != EGG_SRC_BIN;
    uint32_t dv = R->data.vocab;
    if (*c->val_data) {
        rc = egg_tokens_open_as(&R->vdata, c->val_data, "--val-data", err);
        if (rc) return rc;
        if (R->vdata.vocab > dv) dv = R->vdata.vocab;
    }
    if (c->vocab == 0) c->vocab = (int)dv;
    else if ((uint32_t)c->vocab < dv)
        return egg_fail(err, EGG_EINPUT, "--vocab %d: smaller than the data's vocabulary %u; raise it or leave it 0", c->vocab, dv);
    uint64_t n = R->data.n;
    if (*c->val_data) {
        R->train = (egg_span){&R->data, 0, n};
        R->val = (egg_span){&R->vdata, 0, R->vdata.n};
    } else {
        uint64_t nv = (uint64_t)floor((double)n * c->val_frac);
        if (nv < 2) nv = n >= 4 ? 2 : 0;
        R->train = (egg_span){&R->data, 0, n - nv};
        R->val = (egg_span){&R->data, n - nv, nv};
    }
    if (R->train.n < (uint64_t)c->seq + 1)
        return egg_fail(err, EGG_EINPUT, "%s: training split has %llu tokens, fewer than --seq + 1 = %d; use more data or a smaller --seq",
                        c->data, (unsigned long long)R->train.n, c->seq + 1);
    if (R->val.n < 2)
        return egg_fail(err, EGG_EINPUT, "%s: validation split has %llu tokens; raise --val-frac or pass --val-data",
                        *c->val_data ? c->val_data : c->data, (unsigned long long)R->val.n);
    return 0;
}

static int parse_weights(const char *s, int world, double *w, egg_err *err) {
    if (!*s) return 0;
    int n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || !(v > 0) || n >= world)
            return egg_fail(err, EGG_EINPUT, "--shard-weights '%s': need %d positive numbers separated by commas, one per rank", s, world);
        w[n++] = v;
        p = end;
        if (*p == ',') p++;
        else if (*p) return egg_fail(err, EGG_EINPUT, "--shard-weights '%s': need comma-separated numbers", s);
    }
    if (n != world) return egg_fail(err, EGG_EINPUT, "--shard-weights '%s': %d values for %d ranks", s, n, world);
    return 1;
}

/* Entry points of the GPU runtime behind the backend in use (cuda or hip). */
static int gpu_nccl_uid(const egg_backend *be, unsigned char *uid) {
#ifdef EGG_HAVE_CUDA
    if (!strcmp(be->name, "cuda")) return egg_cuda_nccl_uid(uid);
#endif
#ifdef EGG_HAVE_HIP
    if (!strcmp(be->name, "hip")) return egg_hip_nccl_uid(uid);
#endif
    (void)be; (void)uid;
    return -1;
}
static double gpu_mma_peak_tops(const egg_backend *be) {
    if (be->device_id < 0) return 0;
#ifdef EGG_HAVE_CUDA
    if (!strcmp(be->name, "cuda")) return egg_cuda_mma_peak_tops(be->device_id);
#endif
#ifdef EGG_HAVE_HIP
    if (!strcmp(be->name, "hip")) return egg_hip_mma_peak_tops(be->device_id);
#endif
    return 0;
}

/* the same GEMM by the vendor's library (cuBLAS on CUDA); 0 with *why where it cannot run, NULL *why where the
 * backend has none to try */
static double gpu_blas_peak_tops(const egg_backend *be, const char **why) {
    *why = NULL;
#ifdef EGG_HAVE_CUDA
    if (be->device_id >= 0 && !strcmp(be->name, "cuda")) return egg_cuda_blas_peak_tops(be->device_id, why);
#endif
    (void)be;
    return 0;
}

static int select_backend(run *R, egg_err *err) {
    egg_config *c = &R->c;
    int p0 = R->p0, p1 = R->p1;
    /* --update auto on one process: nothing to sum, so the backend need not plan memory for every parameter's votes */
    if (c->update == EGG_UPD_AUTO && R->d.world == 1) c->update = EGG_UPD_REPLICATED;
#ifdef EGG_HAVE_CUDA
    int ndev = egg_cuda_device_count();
    if (c->backend == EGG_BK_CUDA && ndev <= 0)
        return egg_fail(err, EGG_EINPUT, "--backend cuda: no CUDA GPU is visible (check nvidia-smi / CUDA_VISIBLE_DEVICES, or use --backend cpu)");
    if (c->backend == EGG_BK_CUDA || (c->backend == EGG_BK_AUTO && ndev > 0)) {
        int dev = c->device >= 0 ? c->device : R->d.local_rank % ndev;
        if (dev >= ndev) return egg_fail(err, EGG_EINPUT, "--device %d: only %d GPU%s visible (GPUs count from 0)", dev, ndev, ndev == 1 ? "" : "s");
        c->backend = EGG_BK_CUDA;
        int rc = egg_backend_cuda_create(&R->be, c, &R->m, 2 * p0, 2 * p1, dev, err);
        if (!rc) R->have_be = 1;
        return rc;
    }
#endif
#ifdef EGG_HAVE_HIP
    int nhip = egg_hip_device_count();
    if (c->backend == EGG_BK_HIP && nhip <= 0)
        return egg_fail(err, EGG_EINPUT, "--backend hip: no AMD GPU is visible (check rocm-smi, access to /dev/kfd and /dev/dri, HIP_VISIBLE_DEVICES; or use --backend cpu)");
    if (c->backend == EGG_BK_HIP || (c->backend == EGG_BK_AUTO && nhip > 0)) {
        int dev = c->device >= 0 ? c->device : R->d.local_rank % nhip;
        if (dev >= nhip) return egg_fail(err, EGG_EINPUT, "--device %d: only %d AMD GPU%s visible (GPUs count from 0)", dev, nhip, nhip == 1 ? "" : "s");
        c->backend = EGG_BK_HIP;
        int rc = egg_backend_hip_create(&R->be, c, &R->m, 2 * p0, 2 * p1, dev, err);
        if (!rc) R->have_be = 1;
        return rc;
    }
#endif
    c->backend = EGG_BK_CPU;
    int rc = egg_backend_cpu_create(&R->be, c, &R->m, 2 * p0, 2 * p1, err);
    if (!rc) R->have_be = 1;
    return rc;
}

/* Every rank must run the same job. Under mpirun all ranks get the same flags,
 * but a per-node --config file, a different data file at the same path or a
 * hand-written MPMD line can differ; the ranks would then hang in mismatched
 * collectives or diverge. Rank 0's settings (less the per-rank ones) and a
 * fingerprint of the data go to every rank, which names the first difference. */
static char *job_text(const run *R) {
    egg_config k = R->c;
    k.threads = 0; k.device = -1; k.backend = 0; k.simd = 0; k.progress = 0;
    k.log[0] = 0; k.dump_scores[0] = 0;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    egg_config_print(&k, f);
    uint64_t h = 0;
    const egg_span *sp[2] = {&R->train, &R->val};
    for (int s = 0; s < 2; s++)
        for (uint64_t i = 0, n = sp[s]->n; n && i < 4096; i++)
            h = egg_mix64(h ^ egg_span_at(sp[s], i * n / 4096) ^ (uint64_t)s << 32);
    fprintf(f, " train_tokens=%llu val_tokens=%llu data_vocab=%u data_fingerprint=%016llx version=%s",
            (unsigned long long)R->train.n, (unsigned long long)R->val.n, R->data.vocab, (unsigned long long)h, EGG_VERSION);
    fclose(f);
    for (char *q = buf; *q; q++) if (*q == '\n') *q = ' ';
    return buf;
}

static int agree_job(run *R, egg_err *err) {
    if (R->d.world == 1) return 0;
    char *mine = job_text(R);
    if (!mine) return egg_fail(err, EGG_ERUNTIME, "out of memory");
    uint64_t len = strlen(mine) + 1;
    egg_dist_bcast(&R->d, &len, sizeof len, 0);
    char *ref = egg_xmalloc(len);
    if (R->d.rank == 0) memcpy(ref, mine, len);
    egg_dist_bcast(&R->d, ref, len, 0);
    int rc = 0;
    if (strcmp(mine, ref)) {
        /* the first differing key=value token, on each side */
        const char *a = mine, *b = ref;
        while (*a && *a == *b) a++, b++;
        while (a > mine && a[-1] != ' ') a--, b--;
        int la = (int)strcspn(a, " "), lb = (int)strcspn(b, " ");
        rc = egg_fail(err, EGG_EINPUT, "this rank has %.*s, rank 0 has %.*s: every rank needs the same flags, --config and data",
                      la > 200 ? 200 : la, a, lb > 200 ? 200 : lb, b);
    }
    free(ref);
    free(mine);
    return rc;
}

/* --------------------------------------------------------------- helpers */

static void fill_tokens(const egg_span *sp, uint64_t start, int len, int32_t *dst) {
    for (int t = 0; t < len; t++) dst[t] = (int32_t)egg_span_at(sp, start + (uint64_t)t);
}

/* A training step's token windows and reset flags of groups g0..g1-1. On a GPU the next step's are filled on a
 * thread of their own while this step's eval waits for the device (1.6 M tokens a step at EGG-256x6 take ~2 ms of
 * host time, 8.4 M at EGG-128x4 ~5 ms, during which the device would idle). */
typedef struct fill_job {
    const egg_config *c;
    const egg_span *train;
    int64_t step;
    int g0, g1, T;
    int32_t *tokens;
    uint8_t *reset;
} fill_job;
static void *fill_step(void *p) {
    const fill_job *j = p;
    for (int g = j->g0; g < j->g1; g++) {
        uint64_t st;
        int rs;
        egg_stream_window(j->c, j->train->n, j->step, g, &st, &rs);
        fill_tokens(j->train, st, j->T + 1, j->tokens + (size_t)(g - j->g0) * (j->T + 1));
        j->reset[g - j->g0] = (uint8_t)rs;
    }
    return NULL;
}

/* Validation: unperturbed model on evenly spaced windows of the val split. */
static int validate(run *R, double *bpb, egg_err *err) {
    const egg_config *c = &R->c;
    uint64_t nv = R->val.n;
    int len = (uint64_t)c->val_len < nv - 1 ? c->val_len : (int)(nv - 1);
    int nw = (int)((nv - 1) / (uint64_t)len);
    if (nw > c->val_windows) nw = c->val_windows;
    if (nw < 1) nw = 1;
    /* windows are split across ranks like pairs, then summed */
    int w0 = (int)((int64_t)nw * R->d.rank / R->d.world), w1 = (int)((int64_t)nw * (R->d.rank + 1) / R->d.world);
    int n = w1 - w0;
    int32_t *tok = egg_xmalloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1) * (len + 1));
    int32_t *sc = egg_xmalloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    for (int w = w0; w < w1; w++) {
        uint64_t s = nw > 1 ? (nv - 1 - (uint64_t)len) * (uint64_t)w / (uint64_t)(nw - 1) : 0;
        fill_tokens(&R->val, s, len + 1, tok + (size_t)(w - w0) * (len + 1));
    }
    egg_range_push("validate");
    int rc = n > 0 ? R->be.eval_clean(&R->be, n, len, tok, sc, err) : 0;
    egg_range_pop();
    int64_t sum = 0;
    for (int i = 0; i < n; i++) sum += sc[i];
    free(tok);
    free(sc);
    rc = egg_dist_agree(&R->d, rc, err);
    if (rc) return rc;
    sum = egg_dist_sum_i64(&R->d, sum);
    *bpb = -(double)sum / (16.0 * (double)nw * len);
    return 0;
}

static void sample(run *R, int64_t step) {
    const egg_config *c = &R->c;
    if (R->d.rank != 0 || !R->be.sample_step) return;
    egg_err err = {0};
    int V = R->m.V;
    int8_t *lg = egg_xmalloc((size_t)V);
    double *p = egg_xmalloc(sizeof(double) * (size_t)V);
    uint8_t *seen = egg_xcalloc((size_t)V, 1);
    egg_range_push("sample");
    uint64_t rng = egg_mix64(c->seed ^ (uint64_t)step * EGG_GOLDEN ^ 0x73616d706c65ull);
    int tok = 0, reset = 1;
    printf("egg: sample step=%lld: ", (long long)step);
    size_t pl = strlen(c->prompt);
    for (size_t i = 0; i < pl; i++) {
        tok = (unsigned char)c->prompt[i] % V;
        if (R->be.sample_step(&R->be, tok, reset, lg, &err)) goto out;
        reset = 0;
        if (R->text) putchar(tok);
    }
    if (!pl && R->be.sample_step(&R->be, tok, reset, lg, &err)) goto out;
    for (int i = 0; i < c->sample_len; i++) {
        /* p_v ~ 2^((logit_v - penalty) / (16 T)); min-p drops p < min_p * max */
        double mx = -1e300;
        for (int v = 0; v < V; v++) {
            double l = lg[v] - (seen[v] ? c->presence_penalty * 16.0 : 0.0);
            p[v] = l;
            if (l > mx) mx = l;
        }
        int next = 0;
        if (c->temperature <= 0) {
            for (int v = 1; v < V; v++) if (p[v] > p[next]) next = v;
        } else {
            double tot = 0;
            for (int v = 0; v < V; v++) {
                p[v] = exp2((p[v] - mx) / (16.0 * c->temperature));
                if (p[v] < c->min_p) p[v] = 0;
                tot += p[v];
            }
            rng = egg_mix64(rng + EGG_GOLDEN);
            double u = (double)(rng >> 11) / 9007199254740992.0 * tot, acc = 0;
            next = V - 1;
            for (int v = 0; v < V; v++) { acc += p[v]; if (acc > u && p[v] > 0) { next = v; break; } }
        }
        seen[next] = 1;
        if (R->text) putchar(next >= 32 || next == '\n' || next == '\t' ? next : '?');
        else printf("%d ", next);
        if (R->be.sample_step(&R->be, next, 0, lg, &err)) goto out;
    }
out:
    egg_range_pop();
    putchar('\n');
    fflush(stdout);
    free(lg); free(p); free(seen);
}

static int ckpt_gather_write(run *R, uint64_t train_n, egg_err *err) {
    const egg_config *c = &R->c;
    if (!*c->checkpoint_dir) return 0;
    size_t per = (size_t)R->m.L * R->m.H;
    size_t mine = (size_t)(R->p1 - R->p0) * 2 * per;
    int8_t *st = egg_xmalloc(mine + 1);
    int rc = R->be.get_state(&R->be, st, err);
    rc = egg_dist_agree(&R->d, rc, err);
    if (rc) { free(st); return rc; }
    int8_t *all = NULL;
    size_t *cnt = egg_xmalloc(sizeof(size_t) * (size_t)R->d.world);
    for (int r = 0; r < R->d.world; r++) cnt[r] = (size_t)R->counts[r] * 2 * per;
    if (R->d.rank == 0) all = egg_xmalloc((size_t)R->c.pop * per + 1);
    egg_dist_gather_bytes(&R->d, st, mine, all, cnt);
    char path[2048];
    if (R->d.rank == 0) {
        rc = egg_ckpt_write(c->checkpoint_dir, c, &R->m, train_n, R->step, all, (uint64_t)c->pop * per, path, sizeof path, err);
        if (!rc) printf("egg: checkpoint %s (step %lld)\n", path, (long long)R->step);
    }
    free(all); free(cnt); free(st);
    return egg_dist_agree(&R->d, rc, err);
}
static int write_checkpoint(run *R, uint64_t train_n, egg_err *err) {
    egg_range_push("checkpoint");
    const int rc = ckpt_gather_write(R, train_n, err);
    egg_range_pop();
    return rc;
}

static void progress(run *R, int64_t s0, double t0) {
    const egg_config *c = &R->c;
    int64_t done = R->step - s0, total = c->steps - s0;
    if (total <= 0) return;
    double el = egg_now() - t0, eta = done > 0 ? el / done * (double)(total - done) : 0;
    int w = 30, fill = (int)(w * (double)done / total);
    char bar[64];
    for (int i = 0; i < w; i++) bar[i] = i < fill ? '#' : '.';
    bar[w] = 0;
    printf("\r[%s] %3.0f%% step %lld/%lld ETA %02d:%02d:%02d \r", bar, 100.0 * done / total, (long long)R->step,
           (long long)c->steps, (int)(eta / 3600), (int)fmod(eta / 60, 60), (int)fmod(eta, 60));
    fflush(stdout);
}

/* ------------------------------------------------------------------ main */

/* --update allreduce: the votes' sum over the ranks, through MPI (a GPU backend with NCCL uses its own) */
static int vote_sum_mpi(void *ctx, int32_t *z, size_t n, egg_err *err) {
    (void)err;
    egg_dist_sum_i32((egg_dist *)ctx, z, n);
    return 0;
}

static int fail(run *R, egg_err *err) {
    if (R->d.rank == 0) fprintf(stderr, "egg: error: %s\n", err->msg);
    int code = err->code ? err->code : 1;
    fflush(stdout);
    egg_dist_finalize(&R->d);
    return code;
}

int main(int argc, char **argv) {
    static run R;
    egg_err err = {0};
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* before MPI start-up, data, resume and device set-up: a stop request (Slurm's
     * --signal, preemption, Ctrl-C) that arrives while those run must not kill the
     * process; it is honoured at the first step boundary */
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGUSR1, on_signal);
    egg_dist_init(&R.d, &argc, &argv);
    egg_config *c = &R.c;
    egg_config_defaults(c);
    int rc = egg_config_parse(c, argc, argv, &err);
    if (rc == -1) { egg_dist_finalize(&R.d); return 0; }
    if (c->bench && !c->given_steps) c->steps = 5;
    if (!rc) rc = egg_config_validate(c, &err);
    rc = egg_dist_agree(&R.d, rc, &err);
    if (rc) return fail(&R, &err);
    if (R.d.world > 1) arm_watchdog(&R); /* from here: data, resume, device and NCCL set-up count too */

    /* data (every rank maps it) and the checks that need it */
    rc = setup_data(&R, &err);
    rc = egg_dist_agree(&R.d, rc, &err);
    if (rc) return fail(&R, &err);
    rc = agree_job(&R, &err);
    rc = egg_dist_agree(&R.d, rc, &err);
    if (rc) return fail(&R, &err);

    double wts[4096];
    if (R.d.world > 4096) { egg_fail(&err, EGG_EINPUT, "more than 4096 ranks"); return fail(&R, &err); }
    rc = parse_weights(c->shard_weights, R.d.world, wts, &err);
    if (rc == EGG_EINPUT) return fail(&R, &err);
    int weighted = rc == 1;
    const int P = c->pop / 2;
    R.counts = egg_xmalloc(sizeof(int) * (size_t)R.d.world);
    for (int r = 0; r < R.d.world; r++) {
        int a, b;
        egg_shard(P, R.d.world, weighted ? wts : NULL, r, &a, &b);
        R.counts[r] = b - a;
        if (r == R.d.rank) { R.p0 = a; R.p1 = b; }
    }

    egg_model_layout(&R.m, c->vocab, c->hidden, c->layers);
    egg_model_init(&R.m, c->seed);

    /* resume: rank 0 reads and validates, everyone receives the bytes */
    egg_ckpt ck = {0};
    char ckpath[2048] = "";
    if (*c->resume) {
        uint8_t *buf = NULL;
        uint64_t len = 0;
        rc = 0;
        if (R.d.rank == 0) {
            rc = egg_ckpt_resolve(c->resume, c->checkpoint_dir, ckpath, sizeof ckpath, &err);
            size_t l = 0;
            if (!rc) rc = egg_ckpt_load_file(ckpath, &buf, &l, &err);
            len = l;
        }
        rc = egg_dist_agree(&R.d, rc, &err);
        if (rc) return fail(&R, &err);
        egg_dist_bcast(&R.d, &len, sizeof len, 0);
        egg_dist_bcast(&R.d, ckpath, sizeof ckpath, 0);
        if (R.d.rank != 0) buf = egg_xmalloc(len + 1);
        egg_dist_bcast(&R.d, buf, len, 0);
        rc = egg_ckpt_parse(buf, len, ckpath, c, &R.m, R.train.n, &ck, &err);
        free(buf);
        rc = egg_dist_agree(&R.d, rc, &err);
        if (rc) return fail(&R, &err);
        memcpy(R.m.params, ck.params, R.m.nparams);
        R.step = ck.step;
    }

    rc = select_backend(&R, &err);
    rc = egg_dist_agree(&R.d, rc, &err);
    if (rc) return fail(&R, &err);
    if (R.be.device_id >= 0) arm_watchdog(&R); /* one process on a GPU: a hung device, too */
    if (ck.state) {
        size_t per = (size_t)R.m.L * R.m.H;
        rc = R.be.set_state(&R.be, ck.state + (size_t)R.p0 * 2 * per, &err);
        rc = egg_dist_agree(&R.d, rc, &err);
        if (rc) return fail(&R, &err);
    }
    egg_ckpt_free(&ck);

    /* fitness exchange: NCCL from device memory when every rank has its own GPU */
    int use_nccl = 0;
    if (R.d.world > 1 && c->exchange != 1) {
        if (R.be.nccl_init) {
            char mine[96], *all = egg_xmalloc(96 * (size_t)R.d.world);
            memset(mine, 0, sizeof mine);
            snprintf(mine, sizeof mine, "%s:%d", R.d.host, R.be.device_id);
            size_t *cnt = egg_xmalloc(sizeof(size_t) * (size_t)R.d.world);
            for (int r = 0; r < R.d.world; r++) cnt[r] = sizeof mine;
            egg_dist_gather_bytes(&R.d, mine, sizeof mine, all, cnt);
            int shared = 0;
            if (R.d.rank == 0)
                for (int a = 0; a < R.d.world; a++)
                    for (int b = a + 1; b < R.d.world; b++) shared |= !strcmp(all + 96 * (size_t)a, all + 96 * (size_t)b);
            egg_dist_bcast(&R.d, &shared, sizeof shared, 0);
            free(all);
            free(cnt);
            if (shared) {
                if (R.d.rank == 0) printf("egg: exchange: ranks share a GPU and NCCL cannot run two ranks on one GPU; using MPI\n");
            } else {
                unsigned char uid[128] = {0};
                rc = 0;
                if (R.d.rank == 0 && gpu_nccl_uid(&R.be, uid)) rc = egg_fail(&err, EGG_ERUNTIME, "NCCL: cannot create a unique id; use --exchange mpi");
                rc = egg_dist_agree(&R.d, rc, &err);
                if (rc) return fail(&R, &err);
                egg_dist_bcast(&R.d, uid, sizeof uid, 0);
                rc = R.be.nccl_init(&R.be, R.d.rank, R.d.world, uid, &err);
                rc = egg_dist_agree(&R.d, rc, &err);
                if (rc) return fail(&R, &err);
                use_nccl = 1;
            }
        } else if (c->exchange == 2 && R.d.rank == 0) {
            printf("egg: exchange: --exchange nccl needs a GPU backend built with NCCL/RCCL (this run: %s); using MPI\n", R.be.name);
        }
    }
    /* --update auto: the votes are all-reduced where the ranks have NCCL (one GPU each): the replicated update
     * costs every rank the whole population's votes, growing with the ranks, where the all-reduce of 4 bytes a
     * parameter stays near one rank's update (docs/BENCHMARKS.md: 3.6 against 2.0 ms a step on two H100s).
     * CPU ranks and ranks sharing a GPU keep the replicated update, whose exchange is the fitness alone. */
    const int upd_mode = c->update != EGG_UPD_AUTO ? c->update : use_nccl ? EGG_UPD_ALLREDUCE : EGG_UPD_REPLICATED;
    int maxc = 0;
    for (int r = 0; r < R.d.world; r++) if (R.counts[r] > maxc) maxc = R.counts[r];
    int32_t *xall = use_nccl ? egg_xmalloc(sizeof(int32_t) * (size_t)maxc * R.d.world) : NULL;

    /* the checkpoint directory (a bad one fails now, not at the first checkpoint hours in), then the log file,
     * opened only now that every input is known good */
    rc = R.d.rank == 0 && !c->bench && *c->checkpoint_dir ? egg_ckpt_prepare_dir(c->checkpoint_dir, EGG_EINPUT, &err) : 0;
    rc = egg_dist_agree(&R.d, rc, &err);
    if (rc) return fail(&R, &err);
    if (R.d.rank == 0 && *c->log) {
        R.log = fopen(c->log, "a");
        if (!R.log) { egg_fail(&err, EGG_EINPUT, "--log %s: cannot open for writing (%s)", c->log, strerror(errno)); }
    }
    rc = egg_dist_agree(&R.d, R.d.rank == 0 && *c->log && !R.log ? EGG_EINPUT : 0, &err);
    if (rc) return fail(&R, &err);

    /* banner: rank 0 prints every rank's host, backend and device */
    {
        char mine[256], *all = NULL;
        snprintf(mine, sizeof mine, "%s %s", R.d.host, R.be.device_desc);
        size_t *cnt = egg_xmalloc(sizeof(size_t) * (size_t)R.d.world);
        for (int r = 0; r < R.d.world; r++) cnt[r] = sizeof mine;
        if (R.d.rank == 0) all = egg_xmalloc(sizeof mine * (size_t)R.d.world);
        egg_dist_gather_bytes(&R.d, mine, sizeof mine, all, cnt);
        if (R.d.rank == 0) {
            printf("egg_mgpu %s: EGG-%dx%d vocab %d, %zu params (%.2f MB), pop %d (%d pairs), seq %d, rank %d\n", EGG_VERSION,
                   c->hidden, c->layers, c->vocab, R.m.nparams, R.m.nparams / 1e6, c->pop, P, c->seq, c->rank);
            printf("egg: data %s: %llu train / %llu val %s%s\n", c->data, (unsigned long long)R.train.n,
                   (unsigned long long)R.val.n, R.text ? "bytes" : "tokens", *c->val_data ? " (--val-data)" : "");
            egg_config_print(c, stdout);
            for (int r = 0; r < R.d.world; r++) {
                int a, b;
                egg_shard(P, R.d.world, weighted ? wts : NULL, r, &a, &b);
                printf("egg: rank %d/%d on %s: pairs %d..%d\n", r, R.d.world, all + sizeof mine * (size_t)r, a, b - 1);
            }
            if (*ckpath) printf("egg: resumed from %s at step %lld\n", ckpath, (long long)R.step);
            if (R.d.world > 1) printf("egg: fitness exchange: %s\n", use_nccl ? "NCCL all-gather from device memory" : (c->fitness == EGG_FIT_SIGN ? "MPI_Allgatherv, 2 bits per pair" : "MPI_Allgatherv, int32 per pair"));
            const char *why = c->update != EGG_UPD_AUTO ? "" : use_nccl ? " (auto: the ranks have NCCL)" : " (auto: no NCCL between the ranks)";
            if (R.d.world > 1 && upd_mode == EGG_UPD_ALLREDUCE)
                printf("egg: update: allreduce%s: each rank votes with its own pairs; %zu int32 vote sums a step through %s\n", why,
                       R.m.nparams, use_nccl ? "ncclAllReduce from device memory" : "MPI_Allreduce");
            else if (R.d.world > 1)
                printf("egg: update: replicated%s: each rank votes with all %d pairs' fitness\n", why, P);
            /* a GPU evaluates its members in tiles of 128 rows per timestep over all its SMs: a small share leaves it
             * mostly idle (EGG-256x6 on one H100: 48.6 M population-tokens/s at 4096 members, flat at 64.6-66.5 M from
             * 8192; docs/BENCHMARKS.md) */
            const int per_gpu = c->pop / R.d.world;
            if (R.be.device_id >= 0 && per_gpu < EGG_GPU_FULL_POP)
                printf("egg: note: %d members per GPU leave %s mostly idle; it reaches full speed from about %d members "
                       "per GPU (--pop %d on %d GPU%s)\n",
                       per_gpu, R.be.name, EGG_GPU_FULL_POP, EGG_GPU_FULL_POP * R.d.world, R.d.world, R.d.world > 1 ? "s" : "");
        }
        free(all);
        free(cnt);
    }

    /* ---------------------------------------------------------- training */
    const int T = c->seq, gs = c->group;
    const int m0 = 2 * R.p0, m1 = 2 * R.p1, nloc = m1 - m0;
    const int g0 = nloc > 0 ? m0 / gs : 0, g1 = nloc > 0 ? (m1 - 1) / gs + 1 : 0, ng = g1 - g0;
    /* page-locked where the backend offers it (a GPU's upload is then one DMA) */
    const size_t tok_bytes = sizeof(int32_t) * (size_t)(ng > 0 ? ng : 1) * (T + 1);
    /* two buffers where the backend is a GPU: the next step's tokens are filled while this step's eval runs */
    const int nbuf = R.be.device_id >= 0 ? 2 : 1;
    int32_t *tokbuf[2] = {NULL, NULL};
    uint8_t *rstbuf[2] = {NULL, NULL};
    int tok_pinned[2] = {0, 0};
    for (int b = 0; b < nbuf; b++) {
        tokbuf[b] = R.be.host_alloc ? R.be.host_alloc(&R.be, tok_bytes) : NULL;
        tok_pinned[b] = tokbuf[b] != NULL;
        if (!tokbuf[b]) tokbuf[b] = egg_xmalloc(tok_bytes);
        rstbuf[b] = egg_xmalloc((size_t)(ng > 0 ? ng : 1));
    }
    int cur = 0, filling = 0; /* filling: a thread fills buffer cur ^ 1 with step R.step + 1's */
    pthread_t filler;
    fill_job next_job;
    /* scores page-locked too where the backend offers it (the copy back is then one DMA) */
    const size_t sc_bytes = sizeof(int32_t) * (size_t)(nloc > 0 ? nloc : 1);
    int32_t *scores = R.be.host_alloc ? R.be.host_alloc(&R.be, sc_bytes) : NULL;
    const int sc_pinned = scores != NULL;
    if (!scores) scores = egg_xmalloc(sc_bytes);
    int32_t *dloc = egg_xmalloc(sizeof(int32_t) * (size_t)(R.p1 - R.p0 + 1));
    int32_t *dall = egg_xmalloc(sizeof(int32_t) * (size_t)P);
    int8_t *floc = egg_xmalloc((size_t)(R.p1 - R.p0 + 1));
    int8_t *fit = egg_xmalloc((size_t)P);
    /* --update allreduce: this rank votes with its own pairs' fitness only, and the votes are summed over the ranks */
    const int upd_ar = upd_mode == EGG_UPD_ALLREDUCE;
    int8_t *fitv = upd_ar ? egg_xcalloc((size_t)P, 1) : fit;
    const egg_vote_sum vsum = {vote_sum_mpi, &R.d, R.d.world};
    const int64_t s0 = R.step;
    /* auto: a TTY and one rank (Open MPI hands rank 0 a pty even when mpirun is piped) */
    const int tty = c->progress == 2 || (c->progress == 0 && isatty(1) && R.d.world == 1 && !getenv("OMPI_COMM_WORLD_SIZE"));
    double train_bpb = NAN, val_bpb = NAN, last_tps = 0;
    double t_eval = 0, t_exch = 0, t_upd = 0, t_steps = 0, t_eval_max = 0;
    R.t_start = egg_now();
    const double macs = egg_model_macs_per_token(&R.m);
    int stopped_by = 0;
    int64_t timed_steps = 0;

    while (R.step < c->steps) {
        beat(R.step, R.step >= s0 + 2); /* the step, validation, sample or checkpoint before ended */
        /* stop when any rank got a signal or ran out of time; every rank takes
         * the same reason (the highest signal number, else --time-limit) */
        int why = g_stop_signal ? (int)g_stop_signal : (c->time_limit > 0 && egg_now() - R.t_start >= c->time_limit) ? 1000 : 0;
        why = (int)egg_dist_max_dbl(&R.d, (double)why);
        if (why) {
            stopped_by = why == 1000 ? -1 : why;
            break;
        }
        const int64_t step = R.step;
        const uint32_t epoch = (uint32_t)(step / c->noise_reuse);
        egg_range_push("step"); /* NVTX: the step and, inside it, eval, prefetch, exchange, update */
        double ts = egg_now();
        if (filling) { /* filled during the previous step's eval */
            pthread_join(filler, NULL);
            filling = 0;
            cur ^= 1;
        } else {
            fill_job j = {c, &R.train, step, g0, g1, T, tokbuf[cur], rstbuf[cur]};
            fill_step(&j);
        }
        int32_t *tokens = tokbuf[cur];
        const uint8_t *reset = rstbuf[cur];
        if (nbuf == 2 && step + 1 < c->steps) {
            next_job = (fill_job){c, &R.train, step + 1, g0, g1, T, tokbuf[cur ^ 1], rstbuf[cur ^ 1]};
            filling = pthread_create(&filler, NULL, fill_step, &next_job) == 0; /* else filled at the next step's start */
        }
        egg_step_ctx ctx = {c->seed, epoch, m0, m1, gs, g0, T, tokens, reset};
        egg_range_push("eval");
        rc = nloc > 0 ? R.be.eval(&R.be, &ctx, scores, &err) : 0;
        egg_range_pop();
        if (rc) { fprintf(stderr, "egg: error: rank %d: %s\n", R.d.rank, err.msg); egg_dist_abort(&R.d, 1); }
        double te = egg_now();
        if (R.be.prefetch && nloc > 0 && step + 1 < c->steps) { /* the next step's noise (a GPU queues it behind this update) */
            egg_range_push("prefetch");
            rc = R.be.prefetch(&R.be, c->seed, (uint32_t)((step + 1) / c->noise_reuse), &err);
            egg_range_pop();
            if (rc) { fprintf(stderr, "egg: error: rank %d: %s\n", R.d.rank, err.msg); egg_dist_abort(&R.d, 1); }
        }
        if (*c->dump_scores) {
            FILE *df = fopen(c->dump_scores, "ab");
            if (df) { fwrite(scores, sizeof(int32_t), (size_t)nloc, df); fclose(df); }
        }
        int64_t ssum = 0;
        for (int i = 0; i < nloc; i++) ssum += scores[i];
        for (int k = 0; k < R.p1 - R.p0; k++) dloc[k] = scores[2 * k] - scores[2 * k + 1];
        egg_range_push("exchange");
        if (use_nccl) {
            rc = R.be.nccl_allgather(&R.be, c->fitness == EGG_FIT_NORM, R.p1 - R.p0, maxc, xall, &err);
            if (rc) { fprintf(stderr, "egg: error: rank %d: %s\n", R.d.rank, err.msg); egg_dist_abort(&R.d, 1); }
            int o = 0;
            for (int r = 0; r < R.d.world; r++)
                for (int k = 0; k < R.counts[r]; k++) dall[o++] = xall[(size_t)r * maxc + k];
            if (c->fitness == EGG_FIT_SIGN) for (int k = 0; k < P; k++) fit[k] = (int8_t)dall[k];
            else egg_fitness(dall, P, EGG_FIT_NORM, fit);
        } else if (c->fitness == EGG_FIT_SIGN) {
            egg_fitness(dloc, R.p1 - R.p0, EGG_FIT_SIGN, floc);
            egg_dist_allgather_sign(&R.d, floc, R.p1 - R.p0, fit, R.counts);
        } else {
            egg_dist_allgather_i32(&R.d, dloc, R.p1 - R.p0, dall, R.counts);
            egg_fitness(dall, P, EGG_FIT_NORM, fit);
        }
        ssum = egg_dist_sum_i64(&R.d, ssum);
        egg_range_pop();
        double tx = egg_now();
        int tau = egg_tau(c, step);
        egg_update_stats us = {0};
        if (upd_ar) memcpy(fitv + R.p0, fit + R.p0, (size_t)(R.p1 - R.p0)); /* the others' stay 0 */
        egg_range_push("update");
        rc = R.be.update(&R.be, &R.m, c->seed, epoch, fitv, tau, upd_ar ? &vsum : NULL, &us, &err);
        egg_range_pop();
        if (rc) { fprintf(stderr, "egg: error: rank %d: %s\n", R.d.rank, err.msg); egg_dist_abort(&R.d, 1); }
        if (c->test_diverge_step == step && R.d.rank == R.d.world - 1) R.m.params[0] ^= 1; /* tests only */
        if (step > s0 && (c->test_step_ms || c->test_sleep_step == step)) { /* tests only: a slow step */
            const long ms = c->test_step_ms + (c->test_sleep_step == step ? c->test_sleep_ms : 0);
            struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
            nanosleep(&d, NULL);
        }
        R.step++;
        double tu = egg_now();
        egg_range_pop(); /* step */
        double emax = egg_dist_max_dbl(&R.d, te - ts);
        /* --bench: the first step is a warm-up (allocation, first-touch, clocks) and is not timed */
        if (!(c->bench && step == s0 && c->steps - s0 > 1)) {
            t_eval += te - ts; t_exch += tx - te; t_upd += tu - tx; t_steps += tu - ts; t_eval_max += emax;
            timed_steps++;
        }
        train_bpb = -(double)ssum / (16.0 * (double)c->pop * T);
        last_tps = (double)c->pop * T / (tu - ts);

        /* replica check */
        int last = R.step == c->steps;
        if ((c->check_every > 0 && R.step % c->check_every == 0) || last) {
            uint64_t mn, mx;
            int rmn, rmx;
            egg_dist_minmax_u64(&R.d, egg_model_checksum(&R.m, R.step), &mn, &mx, &rmn, &rmx);
            if (mn != mx) {
                if (R.d.rank == 0)
                    fprintf(stderr, "egg: error: replica divergence after step %lld: rank %d has checksum %016llx, rank %d has %016llx\n",
                            (long long)R.step, rmn, (unsigned long long)mn, rmx, (unsigned long long)mx);
                egg_dist_barrier(&R.d);
                egg_dist_abort(&R.d, 1);
            }
        }
        int did_val = 0;
        if (!c->bench && ((c->val_every > 0 && R.step % c->val_every == 0) || last)) {
            rc = validate(&R, &val_bpb, &err);
            if (rc) return fail(&R, &err);
            did_val = 1;
        }
        if (R.d.rank == 0) {
            double pct = 100.0 * (double)us.changed / (double)R.m.nparams;
            if (R.step % c->print_every == 0 || last || did_val) {
                if (tty) printf("\r%*s\r", 79, "");
                printf("step %6lld  train %.4f", (long long)R.step, train_bpb);
                if (did_val) printf("  val %.4f", val_bpb);
                printf("  %s  tok/s %.0f  changed %.3f%%  tau %d  step %.3fs (eval %.3f max %.3f, exch %.4f, upd %.3f)\n",
                       R.text ? "bpb" : "bpt", last_tps, pct, tau, tu - ts, te - ts, emax, tx - te, tu - tx);
            }
            if (R.log) {
                fprintf(R.log, "{\"step\":%lld,\"train_bpb\":%.6f", (long long)R.step, train_bpb);
                if (did_val) fprintf(R.log, ",\"val_bpb\":%.6f", val_bpb);
                fprintf(R.log, ",\"tok_per_s\":%.1f,\"changed_pct\":%.6f,\"tau\":%d,\"step_s\":%.6f,\"eval_s\":%.6f,"
                               "\"eval_max_s\":%.6f,\"exchange_s\":%.6f,\"update_s\":%.6f,\"ranks\":%d}\n",
                        last_tps, pct, tau, tu - ts, te - ts, emax, tx - te, tu - tx, R.d.world);
                fflush(R.log);
            }
            if (tty) progress(&R, s0, R.t_start);
        }
        if (c->sample_every > 0 && R.step % c->sample_every == 0) sample(&R, R.step);
        if (!c->bench && *c->checkpoint_dir && c->checkpoint_every > 0 && R.step % c->checkpoint_every == 0 && !last) {
            rc = write_checkpoint(&R, R.train.n, &err);
            if (rc) return fail(&R, &err);
        }
    }
    if (tty && R.d.rank == 0) printf("\r%*s\r", 79, "");
    if (stopped_by && R.d.rank == 0)
        printf("egg: stopping after step %lld (%s)\n", (long long)R.step,
               stopped_by > 0 ? (stopped_by == SIGINT ? "SIGINT" : stopped_by == SIGTERM ? "SIGTERM" : "SIGUSR1") : "--time-limit");
    beat(R.step, R.step >= s0 + 2);
    /* final validation when the loop did not just do it */
    if (!c->bench && (R.step == s0 || stopped_by)) {
        rc = validate(&R, &val_bpb, &err);
        if (rc) return fail(&R, &err);
        if (R.d.rank == 0 && R.log) {
            fprintf(R.log, "{\"step\":%lld,\"val_bpb\":%.6f,\"final\":true}\n", (long long)R.step, val_bpb);
            fflush(R.log);
        }
    }
    /* no step ran (a checkpoint resumed at its own step): --sample-every samples the loaded model, so that a
     * trained checkpoint can be sampled without training it further */
    if (!c->bench && R.step == s0 && c->sample_every > 0) sample(&R, R.step);
    beat(R.step, R.step >= s0 + 2);
    if (!c->bench && *c->checkpoint_dir && R.step > s0) {
        rc = write_checkpoint(&R, R.train.n, &err);
        if (rc) return fail(&R, &err);
    }
    beat(R.step, R.step >= s0 + 2);
    uint64_t sum = egg_model_checksum(&R.m, R.step);
    int64_t nsteps = timed_steps;
    double tps = t_steps > 0 ? (double)c->pop * T * (double)nsteps / t_steps : 0;
    if (c->bench && R.d.rank == 0 && nsteps > 0) {
        double tok = (double)c->pop * T * (double)nsteps;
        printf("egg: bench EGG-%dx%d pop %d seq %d rank %d on %s x%d: %lld timed steps (after 1 warm-up)\n", c->hidden,
               c->layers, c->pop, c->seq, c->rank, R.be.device_desc, R.d.world, (long long)nsteps);
        printf("egg: bench pop_tok_per_s=%.0f step_s=%.4f eval_s=%.4f eval_max_s=%.4f exchange_s=%.5f update_s=%.4f "
               "update_pct=%.1f int8_gops=%.1f\n",
               tps, t_steps / nsteps, t_eval / nsteps, t_eval_max / nsteps, t_exch / nsteps, t_upd / nsteps,
               100.0 * t_upd / t_steps, 2.0 * macs * tok / t_eval_max / 1e9);
        double fwd = tok / t_eval_max;
        double tops = 2.0 * macs * tps / 1e12, peak = 0, blas = 0;
        const char *why = NULL;
        egg_range_push("mma_peak");
        peak = gpu_mma_peak_tops(&R.be);
        blas = gpu_blas_peak_tops(&R.be, &why);
        egg_range_pop();
        printf("egg: bench forward_tok_per_s=%.0f train_over_forward=%.1f%% int8_tops=%.3f", fwd, 100.0 * tps / fwd, tops);
        /* the peaks are one GPU's; the job's rate is against all R.d.world of them */
        if (peak > 0) printf(" mma_peak_tops=%.1f pct_of_peak=%.1f%%", peak, 100.0 * tops / (peak * R.d.world));
        if (blas > 0) printf(" blas_peak_tops=%.1f pct_of_blas=%.1f%%", blas, 100.0 * tops / (blas * R.d.world));
        else if (why) printf(" blas_peak_tops=none");
        printf("\n");
        if (blas <= 0 && why) printf("egg: bench: no cuBLAS reference rate: %s\n", why);
    }
    if (R.d.rank == 0) {
        printf("egg: done steps=%lld checksum=%016llx train_bpb=%.4f val_bpb=%.4f tok_per_s=%.0f\n", (long long)R.step,
               (unsigned long long)sum, train_bpb, val_bpb, tps);
        if (R.log) fclose(R.log);
    }
    free(xall);
    if (filling) pthread_join(filler, NULL);
    for (int b = 0; b < nbuf; b++) {
        if (tok_pinned[b]) R.be.host_free(&R.be, tokbuf[b]);
        else free(tokbuf[b]);
        free(rstbuf[b]);
    }
    if (sc_pinned) R.be.host_free(&R.be, scores);
    else free(scores);
    free(dloc); free(dall); free(floc); free(fit); if (upd_ar) free(fitv); free(R.counts);
    if (R.have_be) R.be.destroy(&R.be);
    egg_model_free(&R.m);
    egg_tokens_close(&R.data);
    egg_tokens_close(&R.vdata);
    egg_dist_finalize(&R.d);
    return 0;
}

#define _GNU_SOURCE
#include "checkpoint.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The settings a trajectory depends on; a resume must match every one. */
typedef struct compat {
    uint32_t V, H, L, pop, seq, rank, sigma_shift, group, noise_reuse, fitness;
    int32_t threshold;
    uint32_t pad;
    double alpha;
    uint64_t seed, train_tokens;
} compat;

static void make_compat(compat *k, const egg_config *c, const egg_model *m, uint64_t train_tokens) {
    memset(k, 0, sizeof *k);
    k->V = (uint32_t)m->V; k->H = (uint32_t)m->H; k->L = (uint32_t)m->L;
    k->pop = (uint32_t)c->pop; k->seq = (uint32_t)c->seq; k->rank = (uint32_t)c->rank;
    k->sigma_shift = (uint32_t)c->sigma_shift; k->group = (uint32_t)c->group; k->noise_reuse = (uint32_t)c->noise_reuse;
    k->fitness = (uint32_t)c->fitness; k->threshold = c->threshold; k->alpha = c->alpha;
    k->seed = c->seed; k->train_tokens = train_tokens;
}

#define HDR_BYTES (8 + 4 + 4 + sizeof(compat) + 8 + 8 + 8)

static int write_all(int fd, const void *p, size_t n) {
    const char *b = p;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0) { if (errno == EINTR) continue; return -1; }
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

static int64_t ckpt_step_of(const char *name) {
    long long s;
    char tail[8];
    if (sscanf(name, "ckpt_%lld.eg%1s", &s, tail) == 2 && !strcmp(tail, "g") && strlen(name) > 9 &&
        !strcmp(name + strlen(name) - 4, ".egg"))
        return s;
    return -1;
}

/* keep the newest `keep` checkpoints */
static void prune(const char *dir, int keep) {
    DIR *d = opendir(dir);
    if (!d) return;
    int64_t steps[4096];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 4096) {
        int64_t s = ckpt_step_of(e->d_name);
        if (s >= 0) steps[n++] = s;
    }
    closedir(d);
    for (int i = 0; i < n; i++) {
        int newer = 0;
        for (int j = 0; j < n; j++) newer += steps[j] > steps[i];
        if (newer >= keep) {
            char p[2048];
            snprintf(p, sizeof p, "%s/ckpt_%010lld.egg", dir, (long long)steps[i]);
            unlink(p);
        }
    }
}

int egg_ckpt_prepare_dir(const char *dir, int code, egg_err *err) {
    struct stat st;
    if (mkdir(dir, 0755) && errno != EEXIST)
        return egg_fail(err, code, "--checkpoint-dir %s: cannot create (%s); pass a writable directory", dir, strerror(errno));
    if (stat(dir, &st) || !S_ISDIR(st.st_mode))
        return egg_fail(err, code, "--checkpoint-dir %s: exists and is not a directory; pass a directory", dir);
    if (access(dir, W_OK | X_OK))
        return egg_fail(err, code, "--checkpoint-dir %s: not writable (%s); pass a writable directory", dir, strerror(errno));
    return 0;
}

int egg_ckpt_write(const char *dir, const egg_config *c, const egg_model *m, uint64_t train_tokens, int64_t step,
                   const int8_t *state, uint64_t state_bytes, char *path_out, size_t path_len, egg_err *err) {
    if (egg_ckpt_prepare_dir(dir, EGG_ERUNTIME, err)) return err->code;
    char tmp[2048], fin[2048];
    snprintf(fin, sizeof fin, "%s/ckpt_%010lld.egg", dir, (long long)step);
    snprintf(tmp, sizeof tmp, "%s/.ckpt_%010lld.egg.tmp.%d", dir, (long long)step, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return egg_fail(err, EGG_ERUNTIME, "checkpoint %s: cannot create (%s)", tmp, strerror(errno));
    uint8_t hdr[HDR_BYTES];
    size_t o = 0;
    compat k;
    make_compat(&k, c, m, train_tokens);
    uint32_t ver = EGG_CKPT_VERSION, hb = (uint32_t)HDR_BYTES;
    uint64_t np = m->nparams;
    memcpy(hdr + o, "EGGCKPT", 8); o += 8;
    memcpy(hdr + o, &ver, 4); o += 4;
    memcpy(hdr + o, &hb, 4); o += 4;
    memcpy(hdr + o, &k, sizeof k); o += sizeof k;
    memcpy(hdr + o, &step, 8); o += 8;
    memcpy(hdr + o, &np, 8); o += 8;
    memcpy(hdr + o, &state_bytes, 8); o += 8;
    egg_hash64 h;
    egg_hash_init(&h);
    egg_hash_update(&h, hdr, o);
    egg_hash_update(&h, m->params, m->nparams);
    egg_hash_update(&h, state, state_bytes);
    uint64_t sum = egg_hash_final(&h);
    int bad = write_all(fd, hdr, o) || write_all(fd, m->params, m->nparams) || write_all(fd, state, state_bytes) ||
              write_all(fd, &sum, 8) || fsync(fd);
    int e = errno;
    if (close(fd)) bad = 1;
    if (bad || rename(tmp, fin)) {
        if (!bad) e = errno;
        unlink(tmp);
        return egg_fail(err, EGG_ERUNTIME, "checkpoint %s: write failed (%s); check free space in --checkpoint-dir", fin, strerror(e));
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) { fsync(dfd); close(dfd); }
    prune(dir, 2);
    if (path_out) snprintf(path_out, path_len, "%s", fin);
    return 0;
}

int egg_ckpt_resolve(const char *resume, const char *dir, char *path, size_t path_len, egg_err *err) {
    if (strcmp(resume, "latest")) { snprintf(path, path_len, "%s", resume); return 0; }
    if (!*dir) return egg_fail(err, EGG_EINPUT, "--resume latest needs --checkpoint-dir");
    DIR *d = opendir(dir);
    if (!d) return egg_fail(err, EGG_EINPUT, "--resume latest: cannot open --checkpoint-dir %s (%s)", dir, strerror(errno));
    int64_t best = -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        int64_t s = ckpt_step_of(e->d_name);
        if (s > best) best = s;
    }
    closedir(d);
    if (best < 0) return egg_fail(err, EGG_EINPUT, "--resume latest: no checkpoint (ckpt_*.egg) in %s", dir);
    snprintf(path, path_len, "%s/ckpt_%010lld.egg", dir, (long long)best);
    return 0;
}

int egg_ckpt_load_file(const char *path, uint8_t **buf, size_t *len, egg_err *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return egg_fail(err, EGG_EINPUT, "--resume %s: cannot open (%s)", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) { fclose(f); return egg_fail(err, EGG_EINPUT, "--resume %s: not a regular file", path); }
    *len = (size_t)st.st_size;
    *buf = egg_xmalloc(*len + 1);
    if (fread(*buf, 1, *len, f) != *len) {
        fclose(f);
        free(*buf);
        *buf = NULL;
        return egg_fail(err, EGG_EINPUT, "--resume %s: read failed", path);
    }
    fclose(f);
    return 0;
}

int egg_ckpt_parse(const uint8_t *buf, size_t len, const char *path, const egg_config *c, const egg_model *m,
                   uint64_t train_tokens, egg_ckpt *ck, egg_err *err) {
    memset(ck, 0, sizeof *ck);
    if (len < 8 || memcmp(buf, "EGGCKPT", 8))
        return egg_fail(err, EGG_EINPUT, "--resume %s: not an egg checkpoint (bad magic)", path);
    if (len < HDR_BYTES + 8)
        return egg_fail(err, EGG_EINPUT, "--resume %s: truncated checkpoint (%zu bytes)", path, len);
    uint32_t ver, hb;
    memcpy(&ver, buf + 8, 4);
    memcpy(&hb, buf + 12, 4);
    if (ver != EGG_CKPT_VERSION)
        return egg_fail(err, EGG_EINPUT, "--resume %s: checkpoint version %u, this build reads version %u", path, ver, EGG_CKPT_VERSION);
    if (hb != HDR_BYTES) return egg_fail(err, EGG_EINPUT, "--resume %s: corrupt header (size %u)", path, hb);
    compat k, want;
    size_t o = 16;
    memcpy(&k, buf + o, sizeof k); o += sizeof k;
    memcpy(&ck->step, buf + o, 8); o += 8;
    memcpy(&ck->nparams, buf + o, 8); o += 8;
    memcpy(&ck->state_bytes, buf + o, 8); o += 8;
    if (ck->nparams > len || ck->state_bytes > len || HDR_BYTES + ck->nparams + ck->state_bytes + 8 != len)
        return egg_fail(err, EGG_EINPUT, "--resume %s: truncated or oversized checkpoint (%zu bytes, expected %llu)", path, len,
                        (unsigned long long)(HDR_BYTES + ck->nparams + ck->state_bytes + 8));
    egg_hash64 h;
    egg_hash_init(&h);
    egg_hash_update(&h, buf, len - 8);
    uint64_t sum;
    memcpy(&sum, buf + len - 8, 8);
    if (sum != egg_hash_final(&h))
        return egg_fail(err, EGG_EINPUT, "--resume %s: checksum mismatch (file is corrupt); resume from an older checkpoint", path);
    make_compat(&want, c, m, train_tokens);
#define CHK(field, flag)                                                                                                   \
    if (k.field != want.field)                                                                                             \
        return egg_fail(err, EGG_EINPUT, "--resume %s: checkpoint has %s=%llu but this run has %llu; use the same setting", \
                        path, flag, (unsigned long long)k.field, (unsigned long long)want.field);
    CHK(V, "vocab") CHK(H, "hidden") CHK(L, "layers") CHK(pop, "pop") CHK(seq, "seq") CHK(rank, "rank")
    CHK(sigma_shift, "sigma-shift") CHK(group, "group") CHK(noise_reuse, "noise-reuse") CHK(fitness, "fitness")
    CHK(seed, "seed") CHK(train_tokens, "training tokens (different --data or --val-frac?)")
#undef CHK
    if (k.threshold != want.threshold || k.alpha != want.alpha)
        return egg_fail(err, EGG_EINPUT, "--resume %s: checkpoint has alpha=%g threshold=%d but this run has alpha=%g threshold=%d",
                        path, k.alpha, k.threshold, want.alpha, want.threshold);
    if (ck->nparams != m->nparams || ck->state_bytes != (uint64_t)c->pop * m->L * m->H)
        return egg_fail(err, EGG_EINPUT, "--resume %s: parameter or state size does not match the model", path);
    ck->params = egg_xmalloc(ck->nparams);
    memcpy(ck->params, buf + o, ck->nparams);
    ck->state = egg_xmalloc(ck->state_bytes + 1);
    memcpy(ck->state, buf + o + ck->nparams, ck->state_bytes);
    return 0;
}

int egg_ckpt_read(const char *resume, const char *dir, const egg_config *c, const egg_model *m, uint64_t train_tokens,
                  egg_ckpt *ck, char *path_out, size_t path_len, egg_err *err) {
    char path[2048];
    int rc = egg_ckpt_resolve(resume, dir, path, sizeof path, err);
    if (rc) return rc;
    uint8_t *buf;
    size_t len;
    rc = egg_ckpt_load_file(path, &buf, &len, err);
    if (rc) return rc;
    rc = egg_ckpt_parse(buf, len, path, c, m, train_tokens, ck, err);
    free(buf);
    if (path_out) snprintf(path_out, path_len, "%s", path);
    return rc;
}

void egg_ckpt_free(egg_ckpt *ck) {
    free(ck->params);
    free(ck->state);
    memset(ck, 0, sizeof *ck);
}

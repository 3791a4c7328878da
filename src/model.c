#include "model.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "egg_math.h"
#include "util.h"

static void add(egg_model *m, int *n, size_t *off, const char *name, int kind, int rows, int cols) {
    egg_tensor *t = &m->t[(*n)++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->kind = kind;
    t->rows = rows;
    t->cols = cols;
    t->off = *off;
    t->size = (size_t)rows * cols;
    *off += t->size;
}

void egg_model_layout(egg_model *m, int V, int H, int L) {
    static const char *lname[EGG_L_N] = {"ln1", "Wf", "Uf", "bf", "Wh", "Uh", "bh", "ln2", "up", "down"};
    memset(m, 0, sizeof *m);
    m->V = V; m->H = H; m->L = L;
    m->ntensors = 3 + EGG_L_N * L;
    m->t = egg_xcalloc((size_t)m->ntensors, sizeof *m->t);
    int n = 0;
    size_t off = 0;
    add(m, &n, &off, "emb", EGG_T_MAT, V, H);
    for (int l = 0; l < L; l++) {
        char nm[24];
        for (int k = 0; k < EGG_L_N; k++) {
            snprintf(nm, sizeof nm, "l%d.%s", l, lname[k]);
            int vec = k == EGG_L_LN1 || k == EGG_L_LN2 || k == EGG_L_BF || k == EGG_L_BH;
            int rows = k == EGG_L_UP ? 4 * H : H, cols = vec ? 1 : (k == EGG_L_DOWN ? 4 * H : H);
            add(m, &n, &off, nm, vec ? EGG_T_VEC : EGG_T_MAT, rows, cols);
        }
    }
    add(m, &n, &off, "ln_out", EGG_T_VEC, H, 1);
    add(m, &n, &off, "head", EGG_T_MAT, V, H);
    m->nparams = off;
    m->params = egg_xaligned(64, off);
}

void egg_model_init(egg_model *m, uint64_t seed) {
    for (int id = 0; id < m->ntensors; id++) {
        egg_tensor *t = &m->t[id];
        int8_t *p = egg_tensor_ptr(m, id);
        int is_ln = strstr(t->name, "ln") != NULL;
        if (t->kind == EGG_T_VEC) {
            memset(p, is_ln ? 16 : 0, t->size);
            continue;
        }
        uint64_t key = egg_noise_key(seed, EGG_INIT_EPOCH, (uint32_t)id, 0);
        for (size_t i = 0; i < t->size; i++) p[i] = (int8_t)egg_clip8(egg_noise(key, (uint32_t)i));
    }
}

void egg_model_free(egg_model *m) {
    free(m->t);
    free(m->params);
    memset(m, 0, sizeof *m);
}

uint64_t egg_model_checksum(const egg_model *m, int64_t step) {
    egg_hash64 h;
    egg_hash_init(&h);
    int32_t shape[3] = {m->V, m->H, m->L};
    egg_hash_update(&h, shape, sizeof shape);
    egg_hash_update(&h, m->params, m->nparams);
    egg_hash_update(&h, &step, sizeof step);
    return egg_hash_final(&h);
}

double egg_model_macs_per_token(const egg_model *m) {
    double macs = 0;
    for (int id = 1; id < m->ntensors; id++)  /* the embedding is a lookup */
        if (m->t[id].kind == EGG_T_MAT) macs += (double)m->t[id].size;
    return macs;
}

/* model.h — parameter layout of the EGG int8 minGRU language model.
 *
 * All parameters live in one int8 blob; a tensor table gives each tensor's
 * id (its index, which is also its noise "tensor" id), shape and offset:
 *   0                 emb      V x H   (matrix: rows are tokens)
 *   1 + 10l + 0       ln1      H       (vector, init 16)
 *   1 + 10l + 1..2    Wf, Uf   H x H
 *   1 + 10l + 3       bf       H       (vector, init 0)
 *   1 + 10l + 4..5    Wh, Uh   H x H
 *   1 + 10l + 6       bh       H
 *   1 + 10l + 7       ln2      H
 *   1 + 10l + 8       up       4H x H
 *   1 + 10l + 9       down     H x 4H
 *   1 + 10L           ln_out   H
 *   2 + 10L           head     V x H
 * Matrices are stored out x in, row-major (W[o][i]). */
#ifndef EGG_MODEL_H
#define EGG_MODEL_H
#include <stddef.h>
#include <stdint.h>

enum { EGG_T_MAT = 0, EGG_T_VEC = 1 };
enum { EGG_L_LN1 = 0, EGG_L_WF, EGG_L_UF, EGG_L_BF, EGG_L_WH, EGG_L_UH, EGG_L_BH, EGG_L_LN2, EGG_L_UP, EGG_L_DOWN, EGG_L_N };
#define EGG_T_EMB 0
#define EGG_T_LAYER(l, k) (1 + (l) * EGG_L_N + (k))
#define EGG_T_LNOUT(L) (1 + (L) * EGG_L_N)
#define EGG_T_HEAD(L) (2 + (L) * EGG_L_N)

typedef struct egg_tensor {
    char name[24];
    int kind;        /* EGG_T_MAT or EGG_T_VEC */
    int rows, cols;  /* matrix: out x in; vector: n x 1 */
    size_t off, size;
} egg_tensor;

typedef struct egg_model {
    int V, H, L;
    int ntensors;
    egg_tensor *t;
    int8_t *params;
    size_t nparams;
} egg_model;

void egg_model_layout(egg_model *m, int vocab, int hidden, int layers); /* allocates t and params */
/* Deterministic init from the noise hash (epoch EGG_INIT_EPOCH): matrices ~N(0,16^2)
 * clipped to int8, biases 0, LN weights 16. */
void egg_model_init(egg_model *m, uint64_t seed);
void egg_model_free(egg_model *m);
/* 64-bit hash of every parameter and the optimizer state (the step count). */
uint64_t egg_model_checksum(const egg_model *m, int64_t step);
static inline int8_t *egg_tensor_ptr(const egg_model *m, int id) { return m->params + m->t[id].off; }
/* int8 multiply-accumulates per member-token of one forward (for GOPS figures). */
double egg_model_macs_per_token(const egg_model *m);

#endif

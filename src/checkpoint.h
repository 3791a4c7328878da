/* checkpoint.h — versioned, checksummed snapshots, written atomically.
 *
 * File (little-endian):
 *   magic "EGGCKPT\0", u32 version, u32 header bytes,
 *   compat block (shapes and every setting the trajectory depends on),
 *   i64 step, u64 nparams, u64 state bytes,
 *   params (int8), recurrent state of every member (int8, member-major),
 *   u64 checksum of all bytes before it.
 * Written to DIR/.ckpt_<step>.egg.tmp.<pid>, fsynced, renamed to
 * DIR/ckpt_<step>.egg, directory fsynced. The two newest are kept. */
#ifndef EGG_CHECKPOINT_H
#define EGG_CHECKPOINT_H
#include <stdint.h>
#include "config.h"
#include "model.h"
#include "util.h"

#define EGG_CKPT_VERSION 1u

typedef struct egg_ckpt {
    int64_t step;
    int8_t *params;      /* nparams */
    int8_t *state;       /* pop * L * H */
    uint64_t nparams, state_bytes;
} egg_ckpt;

/* train_tokens: size of the training split (must match on resume). */
int egg_ckpt_write(const char *dir, const egg_config *c, const egg_model *m, uint64_t train_tokens, int64_t step,
                   const int8_t *state, uint64_t state_bytes, char *path_out, size_t path_len, egg_err *err);
/* --checkpoint-dir created if missing, then checked to be a writable directory (at start-up with code
 * EGG_EINPUT, so a bad directory fails before the first step; before each write with EGG_ERUNTIME). */
int egg_ckpt_prepare_dir(const char *dir, int code, egg_err *err);
/* Resolve --resume (latest in dir, or a path), read and validate everything. */
int egg_ckpt_read(const char *resume, const char *dir, const egg_config *c, const egg_model *m, uint64_t train_tokens,
                  egg_ckpt *ck, char *path_out, size_t path_len, egg_err *err);
void egg_ckpt_free(egg_ckpt *ck);
/* Checkpoint file contents as bytes (rank 0 reads, others receive). */
int egg_ckpt_load_file(const char *path, uint8_t **buf, size_t *len, egg_err *err);
int egg_ckpt_parse(const uint8_t *buf, size_t len, const char *path, const egg_config *c, const egg_model *m,
                   uint64_t train_tokens, egg_ckpt *ck, egg_err *err);
int egg_ckpt_resolve(const char *resume, const char *dir, char *path, size_t path_len, egg_err *err);

#endif

/* util.h — errors as values, small helpers shared by every host module.
 *
 * Functions that can fail return 0 on success or an EGG_E* code and fill an
 * egg_err with one human line ("what, where, what to do"). Only main() decides
 * to print "egg: error: ..." and exit. */
#ifndef EGG_UTIL_H
#define EGG_UTIL_H
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum { EGG_OK = 0, EGG_EINPUT = 2, EGG_ERUNTIME = 1 };

typedef struct egg_err {
    int code;        /* EGG_EINPUT (exit 2) or EGG_ERUNTIME (exit 1) */
    char msg[512];
} egg_err;

/* Fill err and return its code. Usage: return egg_fail(err, EGG_EINPUT, "...", ...); */
static inline int egg_fail(egg_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline int egg_fail(egg_err *err, int code, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

/* Wall clock in seconds (CLOCK_MONOTONIC). */
double egg_now(void);

/* A named range around a phase of the run ("step", "eval", "exchange", "update", "validate", ...) for
 * NVIDIA's profilers: NVTX push / pop where the build found the CUDA toolkit's NVTX 3 header (nearly free
 * without a tool attached), else nothing. Ranges nest; every push has its pop on the same thread. */
void egg_range_push(const char *name);
void egg_range_pop(void);
/* The ranges' names where the build has NVTX, else why not (egg_mgpu --version prints it) */
const char *egg_range_names(void);

/* Allocation that never returns NULL: aborts the process with a clear line. */
void *egg_xmalloc(size_t n);
void *egg_xcalloc(size_t n, size_t sz);
void *egg_xaligned(size_t align, size_t n); /* free() it */

/* 64-bit FNV-1a style streaming hash used for checksums (params, checkpoints). */
typedef struct { uint64_t h; } egg_hash64;
static inline void egg_hash_init(egg_hash64 *s) { s->h = 0xcbf29ce484222325ull; }
void egg_hash_update(egg_hash64 *s, const void *p, size_t n);
static inline uint64_t egg_hash_final(const egg_hash64 *s) {
    uint64_t z = s->h;                    /* final avalanche (splitmix64) */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#endif

#define _POSIX_C_SOURCE 200809L
#include "util.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef EGG_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
void egg_range_push(const char *name) { nvtxRangePushA(name); }
void egg_range_pop(void) { nvtxRangePop(); }
const char *egg_range_names(void) { return "step (eval, prefetch, exchange, update), validate, sample, checkpoint, mma_peak"; }
#else
void egg_range_push(const char *name) { (void)name; }
void egg_range_pop(void) {}
const char *egg_range_names(void) { return "none (built without the CUDA toolkit's nvtx3 header)"; }
#endif

double egg_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void oom(size_t n) {
    fprintf(stderr, "egg: error: out of host memory allocating %zu bytes; reduce --pop, --hidden or --threads\n", n);
    exit(1);
}
void *egg_xmalloc(size_t n) { void *p = malloc(n ? n : 1); if (!p) oom(n); return p; }
void *egg_xcalloc(size_t n, size_t sz) { void *p = calloc(n ? n : 1, sz ? sz : 1); if (!p) oom(n * sz); return p; }
void *egg_xaligned(size_t align, size_t n) {
    void *p = NULL;
    size_t r = (n + align - 1) / align * align;
    if (posix_memalign(&p, align, r ? r : align)) oom(n);
    memset(p, 0, r ? r : align);
    return p;
}

/* FNV-1a over 8-byte words (fast) with a byte tail; defined on bytes, so it is
 * endianness-independent only on little-endian hosts, which is all we support. */
void egg_hash_update(egg_hash64 *s, const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t h = s->h;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    for (; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    s->h = h;
}

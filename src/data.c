/* data.c — token sources (see data.h).
 *
 * .txt  : mmap'd read-only, bytes are tokens.
 * .zst  : streamed through ZSTD_decompressStream into anonymous memory grown
 *         with mremap, or — once the output would exceed a quarter of physical
 *         RAM — into an unlinked temporary file that is then mmap'd.
 * .bin  : egg token file, header validated, mmap'd, every token checked < vocab.
 *
 * Every failure fills err with one line naming the file and what to do. */
#define _GNU_SOURCE
#include "data.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "egg supports little-endian hosts only"
#endif

/* Test hooks (not in data.h; tests/test_data.c declares them extern).
 * spill_limit: if nonzero, replaces "a quarter of physical RAM" as the
 * in-memory limit for .zst output. The counters describe the last .zst open. */
struct egg_data_test_hooks {
    uint64_t spill_limit;
    unsigned growths;   /* number of mremap growths of the anonymous buffer */
    int spilled;        /* 1 if output went to a temporary file */
};
struct egg_data_test_hooks egg_data_test_hooks;

#define ZST_CHUNK ((size_t)1 << 17) /* keep at least one max block free */

static int ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && memcmp(s + n - m, suf, m) == 0;
}

static size_t page_size(void) {
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

static size_t round_pages(size_t n) {
    size_t p = page_size();
    return (n + p - 1) / p * p;
}

static uint64_t mem_limit(void) {
    if (egg_data_test_hooks.spill_limit) return egg_data_test_hooks.spill_limit;
    long pages = sysconf(_SC_PHYS_PAGES);
    if (pages <= 0) return (uint64_t)1 << 30;
    return (uint64_t)pages * page_size() / 4;
}

/* Open path read-only and check it is a non-empty regular file. */
static int open_input(const char *path, const char *flag, int *fd_out, uint64_t *size_out, egg_err *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT)
            return egg_fail(err, EGG_EINPUT, "%s: file not found (pass an existing file with %s)", path, flag);
        if (e == EACCES)
            return egg_fail(err, EGG_EINPUT, "%s: permission denied (make the file readable or pass another %s)", path, flag);
        return egg_fail(err, EGG_EINPUT, "%s: cannot open: %s (pass a readable file with %s)", path, strerror(e), flag);
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return egg_fail(err, EGG_EINPUT, "%s: cannot stat: %s (pass a readable file with %s)", path, strerror(e), flag);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return egg_fail(err, EGG_EINPUT, "%s: not a regular file (pass a text, .zst or .bin file with %s)", path, flag);
    }
    if (st.st_size == 0) {
        close(fd);
        return egg_fail(err, EGG_EINPUT, "%s: file is empty (pass a file with some data in it)", path);
    }
    if ((uint64_t)st.st_size > (uint64_t)SIZE_MAX) {
        close(fd);
        return egg_fail(err, EGG_EINPUT, "%s: file too large for this host's address space", path);
    }
    *fd_out = fd;
    *size_out = (uint64_t)st.st_size;
    return 0;
}

static int map_file(const char *path, int fd, size_t len, void **out, egg_err *err) {
    void *p = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED)
        return egg_fail(err, EGG_ERUNTIME, "%s: mmap of %zu bytes failed: %s (free memory or address space)",
                        path, len, strerror(errno));
    *out = p;
    return 0;
}

/* ---------------------------------------------------------------- text */

static int open_text(egg_tokens *t, const char *path, egg_err *err) {
    int fd;
    uint64_t size;
    int rc = open_input(path, t->flag, &fd, &size, err);
    if (rc) return rc;
    void *p = NULL;
    rc = map_file(path, fd, (size_t)size, &p, err);
    close(fd);
    if (rc) return rc;
    t->map_base = p;
    t->map_len = (size_t)size;
    t->owns_heap = 0;
    t->u8 = p;
    t->n = size;
    t->vocab = 256;
    t->bytes_per_token = 1;
    t->kind = EGG_SRC_TEXT;
    return 0;
}

/* ---------------------------------------------------------------- .bin */

static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* Index of the first token >= vocab, or n if none. Chunked max keeps the hot
 * loop branch-free (vectorizable); only a bad chunk is rescanned. */
static uint64_t scan_u8(const uint8_t *p, uint64_t n, uint32_t vocab) {
    const uint64_t C = 1 << 16;
    for (uint64_t b = 0; b < n; b += C) {
        uint64_t e = b + C < n ? b + C : n;
        uint8_t mx = 0;
        for (uint64_t i = b; i < e; i++) mx = p[i] > mx ? p[i] : mx;
        if (mx >= vocab)
            for (uint64_t i = b; i < e; i++) if (p[i] >= vocab) return i;
    }
    return n;
}
static uint64_t scan_u16(const uint16_t *p, uint64_t n, uint32_t vocab) {
    const uint64_t C = 1 << 16;
    for (uint64_t b = 0; b < n; b += C) {
        uint64_t e = b + C < n ? b + C : n;
        uint16_t mx = 0;
        for (uint64_t i = b; i < e; i++) mx = p[i] > mx ? p[i] : mx;
        if (mx >= vocab)
            for (uint64_t i = b; i < e; i++) if (p[i] >= vocab) return i;
    }
    return n;
}

static int open_bin(egg_tokens *t, const char *path, egg_err *err) {
    static const char fix[] = "re-create it with tools/egg_tokens.py";
    int fd;
    uint64_t size;
    int rc = open_input(path, t->flag, &fd, &size, err);
    if (rc) return rc;
    uint8_t h[EGG_TOK_HEADER];
    if (size < EGG_TOK_HEADER) {
        close(fd);
        return egg_fail(err, EGG_EINPUT, "%s: truncated token file: %llu bytes, the header alone is %d (%s)",
                        path, (unsigned long long)size, EGG_TOK_HEADER, fix);
    }
    ssize_t got = pread(fd, h, sizeof h, 0);
    if (got != (ssize_t)sizeof h) {
        int e = errno;
        close(fd);
        return egg_fail(err, EGG_EINPUT, "%s: cannot read header: %s (check the file)", path,
                        got < 0 ? strerror(e) : "short read");
    }
    if (memcmp(h, EGG_TOK_MAGIC, 8) != 0) { /* includes the trailing NUL */
        close(fd);
        if (rd32(h) == 20240520u)
            return egg_fail(err, EGG_EINPUT, "%s: this is an llm.c token file, not an egg one "
                            "(convert it with tools/egg_tokens.py llmc IN OUT --vocab V)", path);
        return egg_fail(err, EGG_EINPUT, "%s: not an egg token file (bad magic; .bin inputs must be made "
                        "with tools/egg_tokens.py, or rename a text file so it does not end in .bin)", path);
    }
    uint32_t version = rd32(h + 8), bpt = rd32(h + 12), vocab = rd32(h + 16), reserved = rd32(h + 20);
    uint64_t n = rd64(h + 24);
    const char *bad = NULL;
    char why[160];
    if (version != EGG_TOK_VERSION) {
        snprintf(why, sizeof why, "unsupported version %u (this egg reads version %u)", version, EGG_TOK_VERSION);
        bad = why;
    } else if (bpt != 1 && bpt != 2) {
        snprintf(why, sizeof why, "bytes per token is %u, must be 1 or 2", bpt);
        bad = why;
    } else if (vocab < 2 || vocab > 65536) {
        snprintf(why, sizeof why, "vocab size %u out of range 2..65536", vocab);
        bad = why;
    } else if (bpt == 1 && vocab > 256) {
        snprintf(why, sizeof why, "vocab size %u does not fit 1-byte tokens", vocab);
        bad = why;
    } else if (reserved != 0) {
        snprintf(why, sizeof why, "reserved header field is %u, must be 0", reserved);
        bad = why;
    } else if (n == 0) {
        close(fd);
        return egg_fail(err, EGG_EINPUT, "%s: token file holds 0 tokens (pass a file with some data in it)", path);
    }
    if (bad) {
        close(fd);
        return egg_fail(err, EGG_EINPUT, "%s: bad token file header: %s (%s)", path, bad, fix);
    }
    uint64_t body = size - EGG_TOK_HEADER;
    if (n > body / bpt) {
        close(fd);
        return egg_fail(err, EGG_EINPUT, "%s: truncated token file: header says %llu tokens (%llu bytes) "
                        "but only %llu bytes follow the header (%s)", path, (unsigned long long)n,
                        (unsigned long long)n * bpt, (unsigned long long)body, fix);
    }
    if (n * bpt != body) {
        close(fd);
        return egg_fail(err, EGG_EINPUT, "%s: trailing bytes: header says %llu tokens (%llu bytes) "
                        "but %llu bytes follow the header (%s)", path, (unsigned long long)n,
                        (unsigned long long)n * bpt, (unsigned long long)body, fix);
    }
    void *p = NULL;
    rc = map_file(path, fd, (size_t)size, &p, err);
    close(fd);
    if (rc) return rc;
    const uint8_t *tok = (const uint8_t *)p + EGG_TOK_HEADER;
    uint64_t badi = n;
    uint32_t badv = 0;
    if (bpt == 1 && vocab < 256) {
        badi = scan_u8(tok, n, vocab);
        if (badi < n) badv = tok[badi];
    } else if (bpt == 2 && vocab < 65536) {
        const uint16_t *t16 = (const uint16_t *)(const void *)tok;
        badi = scan_u16(t16, n, vocab);
        if (badi < n) badv = t16[badi];
    }
    if (badi < n) {
        munmap(p, (size_t)size);
        return egg_fail(err, EGG_EINPUT, "%s: token %llu has value %u but vocab is %u "
                        "(re-create the file with the right --vocab)", path,
                        (unsigned long long)badi, badv, vocab);
    }
    t->map_base = p;
    t->map_len = (size_t)size;
    t->owns_heap = 0;
    t->n = n;
    t->vocab = vocab;
    t->bytes_per_token = (int)bpt;
    if (bpt == 1) t->u8 = tok;
    else t->u16 = (const uint16_t *)(const void *)tok;
    t->kind = EGG_SRC_BIN;
    return 0;
}

/* ---------------------------------------------------------------- .zst */

typedef struct {
    const char *path;
    /* memory mode */
    uint8_t *mem;
    size_t cap, used;
    /* file mode (spilled) */
    int tfd;              /* -1 until spilled */
    uint8_t *buf;         /* staging buffer of bufcap bytes */
    size_t bufcap, bufused;
    uint64_t total;       /* bytes written to the temporary file */
    char tdir[1024];      /* where the temporary file lives (for messages) */
    uint64_t limit;
} zout;

static int write_all(zout *o, const uint8_t *p, size_t n, egg_err *err) {
    while (n) {
        ssize_t w = write(o->tfd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return egg_fail(err, EGG_ERUNTIME, "%s: cannot write decompressed data to a temporary file in %s: %s "
                            "(free disk space there or set TMPDIR)", o->path, o->tdir, strerror(errno));
        }
        p += w;
        n -= (size_t)w;
        o->total += (uint64_t)w;
    }
    return 0;
}

/* Create an unlinked temporary file next to the data file, else in $TMPDIR
 * (or /tmp). */
static int make_temp(zout *o, egg_err *err) {
    char dirs[2][1024];
    const char *slash = strrchr(o->path, '/');
    if (!slash) snprintf(dirs[0], sizeof dirs[0], ".");
    else if (slash == o->path) snprintf(dirs[0], sizeof dirs[0], "/");
    else snprintf(dirs[0], sizeof dirs[0], "%.*s", (int)(slash - o->path), o->path);
    const char *td = getenv("TMPDIR");
    snprintf(dirs[1], sizeof dirs[1], "%s", td && *td ? td : "/tmp");
    int lasterr = 0;
    for (int i = 0; i < 2; i++) {
        char tmpl[1100];
        snprintf(tmpl, sizeof tmpl, "%.1023s/.egg-zst-XXXXXX", dirs[i]);
        int fd = mkostemp(tmpl, O_CLOEXEC);
        if (fd < 0) { lasterr = errno; continue; }
        unlink(tmpl);
        o->tfd = fd;
        snprintf(o->tdir, sizeof o->tdir, "%.1023s", dirs[i]);
        return 0;
    }
    return egg_fail(err, EGG_ERUNTIME, "%s: decompressed data exceeds a quarter of RAM and no temporary file "
                    "could be created next to it or in %s: %s (set TMPDIR to a writable directory)",
                    o->path, dirs[1], strerror(lasterr));
}

/* Switch to file mode: move what is in memory (if any) to the temp file. */
static int spill(zout *o, egg_err *err) {
    int rc = make_temp(o, err);
    if (rc) return rc;
    egg_data_test_hooks.spilled = 1;
    o->bufcap = ZSTD_DStreamOutSize();
    if (o->bufcap < ZST_CHUNK) o->bufcap = ZST_CHUNK;
    o->buf = malloc(o->bufcap);
    if (!o->buf)
        return egg_fail(err, EGG_ERUNTIME, "%s: out of memory for a %zu-byte buffer", o->path, o->bufcap);
    o->bufused = 0;
    if (o->mem) {
        rc = write_all(o, o->mem, o->used, err);
        munmap(o->mem, o->cap);
        o->mem = NULL;
        o->cap = o->used = 0;
        if (rc) return rc;
    }
    return 0;
}

static int mem_reserve(zout *o, size_t cap, egg_err *err) {
    cap = round_pages(cap);
    void *p = o->mem ? mremap(o->mem, o->cap, cap, MREMAP_MAYMOVE)
                     : mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return egg_fail(err, EGG_ERUNTIME, "%s: cannot reserve %zu bytes for decompressed data: %s "
                        "(free memory, or decompress the file with `zstd -d` and pass the text)",
                        o->path, cap, strerror(errno));
    if (o->mem) egg_data_test_hooks.growths++;
    o->mem = p;
    o->cap = cap;
    return 0;
}

/* Make room for the decoder: returns the output window (dst, avail). */
static int zout_window(zout *o, uint8_t **dst, size_t *avail, egg_err *err) {
    if (o->tfd < 0) {
        if (o->cap - o->used < ZST_CHUNK) {
            uint64_t want = o->cap ? (uint64_t)o->cap * 2 : (uint64_t)ZST_CHUNK * 8;
            if (want < (uint64_t)o->used + ZST_CHUNK) want = (uint64_t)o->used + ZST_CHUNK;
            if (want > o->limit + ZST_CHUNK) want = o->limit + ZST_CHUNK;
            int rc;
            if (want <= o->cap || want > SIZE_MAX / 2) rc = spill(o, err);
            else rc = mem_reserve(o, (size_t)want, err);
            if (rc) return rc;
        }
    }
    if (o->tfd >= 0) {
        if (o->bufcap - o->bufused < ZST_CHUNK) {
            int rc = write_all(o, o->buf, o->bufused, err);
            if (rc) return rc;
            o->bufused = 0;
        }
        *dst = o->buf + o->bufused;
        *avail = o->bufcap - o->bufused;
    } else {
        *dst = o->mem + o->used;
        *avail = o->cap - o->used;
    }
    return 0;
}

static void zout_advance(zout *o, size_t n) {
    if (o->tfd >= 0) o->bufused += n;
    else o->used += n;
}

static void zout_free(zout *o) {
    if (o->mem) munmap(o->mem, o->cap);
    if (o->tfd >= 0) close(o->tfd);
    free(o->buf);
    o->mem = NULL;
    o->tfd = -1;
    o->buf = NULL;
}

static int zst_error(const char *path, size_t ret, egg_err *err) {
    ZSTD_ErrorCode c = ZSTD_getErrorCode(ret);
    if (c == ZSTD_error_checksum_wrong)
        return egg_fail(err, EGG_EINPUT, "%s: zstd content checksum mismatch, the file is corrupt "
                        "(re-create it with `zstd`)", path);
    if (c == ZSTD_error_prefix_unknown)
        return egg_fail(err, EGG_EINPUT, "%s: not zstd data (unknown frame magic): compress it with `zstd`, "
                        "or drop the .zst suffix if it is plain text", path);
    if (c == ZSTD_error_memory_allocation)
        return egg_fail(err, EGG_ERUNTIME, "%s: out of memory in the zstd decoder", path);
    if (c == ZSTD_error_frameParameter_windowTooLarge)
        return egg_fail(err, EGG_EINPUT, "%s: zstd window too large for the decoder (%s): "
                        "re-create it with `zstd` without --long above 27", path, ZSTD_getErrorName(ret));
    return egg_fail(err, EGG_EINPUT, "%s: corrupt zstd data (%s): re-create it with `zstd`",
                    path, ZSTD_getErrorName(ret));
}

static int open_zst(egg_tokens *t, const char *path, egg_err *err) {
    int fd;
    uint64_t csize;
    int rc = open_input(path, t->flag, &fd, &csize, err);
    if (rc) return rc;
    egg_data_test_hooks.growths = 0;
    egg_data_test_hooks.spilled = 0;

    zout o;
    memset(&o, 0, sizeof o);
    o.path = path;
    o.tfd = -1;
    o.limit = mem_limit();

    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    size_t incap = ZSTD_DStreamInSize();
    uint8_t *in = malloc(incap);
    if (!dctx || !in) {
        rc = egg_fail(err, EGG_ERUNTIME, "%s: out of memory creating the zstd decoder", path);
        goto done;
    }
    /* Checksums are verified by default; say so explicitly. Allow windows up
     * to 2 GiB (zstd --long=31) rather than the default 128 MiB. */
    ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, 31);

    ZSTD_inBuffer ib = {in, 0, 0};
    int eof = 0, first = 1, full = 0;
    size_t last = 0;
    for (;;) {
        if (ib.pos == ib.size && !eof) {
            ssize_t r;
            do r = read(fd, in, incap); while (r < 0 && errno == EINTR);
            if (r < 0) {
                rc = egg_fail(err, EGG_EINPUT, "%s: read error: %s (check the file)", path, strerror(errno));
                goto done;
            }
            if (r == 0) eof = 1;
            ib.size = (size_t)r;
            ib.pos = 0;
            if (first && r > 0) {
                first = 0;
                /* Size hint from the first frame header, if it records one. */
                unsigned long long fcs = ZSTD_getFrameContentSize(in, (size_t)r);
                if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != ZSTD_CONTENTSIZE_ERROR && fcs > 0) {
                    if (fcs > o.limit) rc = spill(&o, err);
                    else rc = mem_reserve(&o, (size_t)fcs + ZST_CHUNK, err);
                } else {
                    uint64_t guess = csize * 4;
                    if (guess < (uint64_t)ZST_CHUNK * 8) guess = (uint64_t)ZST_CHUNK * 8;
                    if (guess > o.limit) guess = o.limit;
                    if (guess < (uint64_t)ZST_CHUNK * 2) guess = (uint64_t)ZST_CHUNK * 2;
                    rc = mem_reserve(&o, (size_t)guess, err);
                }
                if (rc) goto done;
            }
        }
        /* Done when all input is consumed and the decoder has nothing left to
         * flush (its last call did not fill the window it was given). */
        if (ib.pos == ib.size && eof && !full) break;
        uint8_t *dst;
        size_t avail;
        rc = zout_window(&o, &dst, &avail, err);
        if (rc) goto done;
        ZSTD_outBuffer ob = {dst, avail, 0};
        size_t inpos = ib.pos;
        size_t ret = ZSTD_decompressStream(dctx, &ob, &ib);
        if (ZSTD_isError(ret)) {
            rc = zst_error(path, ret, err);
            goto done;
        }
        zout_advance(&o, ob.pos);
        full = ob.pos == avail;
        /* A call that moved nothing (the flush check after a frame ended
         * exactly at a full window) reports the next frame's header size;
         * only calls that made progress say where the stream stands. */
        if (ob.pos || ib.pos != inpos) last = ret;
    }
    if (last != 0) {
        rc = egg_fail(err, EGG_EINPUT, "%s: truncated zstd stream (the file ends in the middle of a frame): "
                      "re-create or re-download it", path);
        goto done;
    }

    if (o.tfd >= 0) {
        rc = write_all(&o, o.buf, o.bufused, err);
        if (rc) goto done;
        o.bufused = 0;
        if (o.total == 0) goto empty;
        if (o.total > (uint64_t)SIZE_MAX) {
            rc = egg_fail(err, EGG_EINPUT, "%s: decompressed data too large for this host", path);
            goto done;
        }
        void *p = mmap(NULL, (size_t)o.total, PROT_READ, MAP_SHARED, o.tfd, 0);
        if (p == MAP_FAILED) {
            rc = egg_fail(err, EGG_ERUNTIME, "%s: cannot mmap %llu decompressed bytes from the temporary file: %s",
                          path, (unsigned long long)o.total, strerror(errno));
            goto done;
        }
        t->map_base = p;
        t->map_len = (size_t)o.total;
        t->n = o.total;
    } else {
        if (o.used == 0) goto empty;
        /* Give back the unused tail and make the corpus read-only. */
        size_t keep = round_pages(o.used);
        if (keep < o.cap) {
            void *p = mremap(o.mem, o.cap, keep, 0);
            if (p != MAP_FAILED) { o.mem = p; o.cap = keep; }
        }
        mprotect(o.mem, o.cap, PROT_READ);
        t->map_base = o.mem;
        t->map_len = o.cap;
        t->n = o.used;
        o.mem = NULL;
    }
    t->owns_heap = 1;
    t->u8 = t->map_base;
    t->vocab = 256;
    t->bytes_per_token = 1;
    t->kind = EGG_SRC_ZST;
    rc = 0;
    goto done;
empty:
    rc = egg_fail(err, EGG_EINPUT, "%s: decompresses to nothing (pass a file with some data in it)", path);
done:
    zout_free(&o);
    free(in);
    ZSTD_freeDCtx(dctx);
    close(fd);
    return rc;
}

/* ---------------------------------------------------------------- API */

int egg_tokens_open(egg_tokens *t, const char *path, egg_err *err) { return egg_tokens_open_as(t, path, "--data", err); }

int egg_tokens_open_as(egg_tokens *t, const char *path, const char *flag, egg_err *err) {
    memset(t, 0, sizeof *t);
    t->flag = flag;
    if (!path || !*path)
        return egg_fail(err, EGG_EINPUT, "(no file): empty data path (pass a file with %s)", flag);
    if (strlen(path) >= sizeof t->path)
        return egg_fail(err, EGG_EINPUT, "%.60s...: path longer than %zu bytes (use a shorter path)",
                        path, sizeof t->path - 1);
    int rc;
    if (ends_with(path, ".zst")) rc = open_zst(t, path, err);
    else if (ends_with(path, ".bin")) rc = open_bin(t, path, err);
    else rc = open_text(t, path, err);
    if (rc) {
        egg_tokens_close(t);
        return rc;
    }
    snprintf(t->path, sizeof t->path, "%s", path);
    return 0;
}

void egg_tokens_close(egg_tokens *t) {
    if (!t) return;
    if (t->map_base && t->map_len) munmap(t->map_base, t->map_len);
    memset(t, 0, sizeof *t);
}

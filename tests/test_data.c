/* test_data.c — standalone tests for src/data.c.
 *
 * Build: cc -std=c11 -O1 -Isrc tests/test_data.c src/data.c src/util.c -lzstd
 * Prints one line per check, "PASS <name>" or "FAIL <name>: <why>"; exits 0
 * iff every check passed. Works in a fresh mkdtemp directory it removes. */
#define _GNU_SOURCE
#include "data.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

/* Test hooks exported by src/data.c (not part of data.h). */
struct egg_data_test_hooks {
    uint64_t spill_limit;
    unsigned growths;
    int spilled;
};
extern struct egg_data_test_hooks egg_data_test_hooks;

static char g_dir[256];
static int g_fail;

static void result(const char *name, const char *why) {
    if (why) {
        printf("FAIL %s: %s\n", name, why);
        g_fail++;
    } else {
        printf("PASS %s\n", name);
    }
    fflush(stdout);
}

static const char *tpath(const char *name) {
    static char buf[8][512];
    static int k;
    char *p = buf[k++ & 7];
    snprintf(p, 512, "%s/%s", g_dir, name);
    return p;
}

static void write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0) {
        fprintf(stderr, "test_data: cannot write %s\n", path);
        exit(1);
    }
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* English-ish text: moderately compressible. */
static uint8_t *make_text(size_t n) {
    static const char *words[] = {"the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog",
                                  "and", "egg", "tokens", "integer", "model", "of", "in"};
    uint8_t *p = malloc(n);
    size_t i = 0;
    while (i < n) {
        const char *w = words[next_rand() % 16];
        for (; *w && i < n; w++) p[i++] = (uint8_t)*w;
        if (i < n) p[i++] = (next_rand() % 12 == 0) ? '\n' : ' ';
    }
    return p;
}

/* Very compressible: numbered lines. */
static uint8_t *make_lines(size_t n) {
    uint8_t *p = malloc(n);
    size_t i = 0;
    for (unsigned line = 0; i < n; line++) {
        char b[64];
        int k = snprintf(b, sizeof b, "line %u of the corpus\n", line);
        for (int j = 0; j < k && i < n; j++) p[i++] = (uint8_t)b[j];
    }
    return p;
}

static uint8_t *zcompress(const void *src, size_t n, int checksum, int content_size, size_t *out_n) {
    ZSTD_CCtx *c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 3);
    ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, checksum);
    ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, content_size);
    size_t cap = ZSTD_compressBound(n);
    uint8_t *dst = malloc(cap);
    size_t r = ZSTD_compress2(c, dst, cap, src, n);
    ZSTD_freeCCtx(c);
    if (ZSTD_isError(r)) {
        fprintf(stderr, "test_data: compress failed: %s\n", ZSTD_getErrorName(r));
        exit(1);
    }
    *out_n = r;
    return dst;
}

static char why[1024];

/* Open path expecting success with the given bytes (as uint8 tokens). */
static const char *expect_bytes(const char *path, const uint8_t *want, size_t n, egg_src_kind kind) {
    egg_tokens t;
    egg_err err = {0};
    int rc = egg_tokens_open(&t, path, &err);
    if (rc) {
        snprintf(why, sizeof why, "open failed (%d): %s", rc, err.msg);
        return why;
    }
    const char *r = NULL;
    if (t.n != n) snprintf(why, sizeof why, "n=%llu want %zu", (unsigned long long)t.n, n), r = why;
    else if (t.kind != kind) snprintf(why, sizeof why, "kind=%d want %d", (int)t.kind, (int)kind), r = why;
    else if (t.vocab != 256 || t.bytes_per_token != 1 || !t.u8)
        snprintf(why, sizeof why, "vocab=%u bpt=%d", t.vocab, t.bytes_per_token), r = why;
    else if (memcmp(t.u8, want, n) != 0) r = "content differs";
    else if (strcmp(t.path, path) != 0) r = "path not recorded";
    else {
        for (size_t i = 0; i < n; i += 997)
            if (egg_tok_at(&t, i) != want[i]) { r = "egg_tok_at differs"; break; }
    }
    egg_tokens_close(&t);
    if (!r && (t.map_base || t.n)) r = "close did not clear the struct";
    return r;
}

/* Open path expecting EGG_EINPUT whose message names the file and contains
 * every non-NULL needle. */
static const char *expect_error(const char *path, const char *needle1, const char *needle2) {
    egg_tokens t;
    egg_err err = {0};
    int rc = egg_tokens_open(&t, path, &err);
    if (rc == 0) {
        egg_tokens_close(&t);
        return "open succeeded, expected an error";
    }
    if (rc != EGG_EINPUT || err.code != EGG_EINPUT) {
        snprintf(why, sizeof why, "code %d, want EGG_EINPUT: %s", rc, err.msg);
        return why;
    }
    if (!strstr(err.msg, path)) {
        snprintf(why, sizeof why, "message does not name the file: %s", err.msg);
        return why;
    }
    if ((needle1 && !strstr(err.msg, needle1)) || (needle2 && !strstr(err.msg, needle2))) {
        snprintf(why, sizeof why, "message lacks \"%s\": %s", needle1 && !strstr(err.msg, needle1) ? needle1 : needle2,
                 err.msg);
        return why;
    }
    if (strchr(err.msg, '\n')) return "message has more than one line";
    if (strncmp(err.msg, "egg:", 4) == 0) return "message has an egg: prefix";
    if (t.map_base || t.n || t.u8 || t.u16) return "struct not cleared after failure";
    egg_tokens_close(&t); /* must be harmless */
    if (getenv("TEST_DATA_VERBOSE")) fprintf(stderr, "  msg: %s\n", err.msg);
    return NULL;
}

static void write_bin(const char *path, uint32_t bpt, uint32_t vocab, uint64_t n, const void *tok,
                      size_t tok_bytes, const char *magic) {
    uint8_t h[32] = {0};
    memcpy(h, magic, 8);
    uint32_t v = 1;
    memcpy(h + 8, &v, 4);
    memcpy(h + 12, &bpt, 4);
    memcpy(h + 16, &vocab, 4);
    memcpy(h + 24, &n, 8);
    uint8_t *buf = malloc(32 + tok_bytes);
    memcpy(buf, h, 32);
    memcpy(buf + 32, tok, tok_bytes);
    write_file(path, buf, 32 + tok_bytes);
    free(buf);
}

static int dir_entries(void) {
    DIR *d = opendir(g_dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static int count_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    int n = 0;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

int main(void) {
    int fds0 = count_fds();
    const char *base = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/egg-test-data-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }

    /* --- text --- */
    {
        size_t n = 100000;
        uint8_t *d = malloc(n);
        for (size_t i = 0; i < n; i++) d[i] = (uint8_t)(next_rand() >> 24);
        const char *p = tpath("corpus.txt");
        write_file(p, d, n);
        result("text_roundtrip", expect_bytes(p, d, n, EGG_SRC_TEXT));
        free(d);
    }

    /* --- zst, single frame with checksum --- */
    uint8_t *text = make_text(300000);
    size_t zn;
    uint8_t *z = zcompress(text, 300000, 1, 1, &zn);
    {
        const char *p = tpath("small.txt.zst");
        write_file(p, z, zn);
        const char *r = expect_bytes(p, text, 300000, EGG_SRC_ZST);
        if (!r && (z[4] & 0x04) == 0) r = "frame has no checksum flag (test setup)";
        result("zst_checksum_roundtrip", r);
    }

    /* --- corrupt: flip a byte in the middle of the payload --- */
    {
        uint8_t *c = malloc(zn);
        memcpy(c, z, zn);
        c[zn / 2] ^= 0x5a;
        const char *p = tpath("corrupt.txt.zst");
        write_file(p, c, zn);
        result("zst_corrupt", expect_error(p, "re-create", NULL));
        /* not zstd at all */
        const char *q = tpath("notzstd.txt.zst");
        write_file(q, "hello, this is plain text\n", 26);
        result("zst_not_zstd", expect_error(q, "not zstd", NULL));
        free(c);
    }

    /* --- checksum mismatch: flip a byte of the trailing 4-byte checksum --- */
    {
        uint8_t *c = malloc(zn);
        memcpy(c, z, zn);
        c[zn - 2] ^= 0x01;
        const char *p = tpath("badsum.txt.zst");
        write_file(p, c, zn);
        result("zst_checksum_mismatch", expect_error(p, "checksum", NULL));
        free(c);
    }

    /* --- truncated: stream ends mid-frame (several cut points) --- */
    {
        const char *p = tpath("trunc.txt.zst");
        const char *r = NULL;
        size_t cuts[] = {zn - 1, zn - 4, zn / 2, 8, 3};
        for (size_t k = 0; k < sizeof cuts / sizeof cuts[0] && !r; k++) {
            write_file(p, z, cuts[k]);
            r = expect_error(p, "truncated", NULL);
        }
        result("zst_truncated", r);
    }

    /* --- multiple frames: checksummed, no content size, and a skippable one --- */
    {
        uint8_t *t2 = make_lines(200000);
        size_t z2n;
        uint8_t *z2 = zcompress(t2, 200000, 0, 0, &z2n);
        uint8_t skip[8 + 5] = {0x50, 0x2A, 0x4D, 0x18, 5, 0, 0, 0, 'h', 'e', 'l', 'l', 'o'};
        size_t all = zn + sizeof skip + z2n + zn;
        uint8_t *cat = malloc(all), *want = malloc(300000 + 200000 + 300000);
        memcpy(cat, z, zn);
        memcpy(cat + zn, skip, sizeof skip);
        memcpy(cat + zn + sizeof skip, z2, z2n);
        memcpy(cat + zn + sizeof skip + z2n, z, zn);
        memcpy(want, text, 300000);
        memcpy(want + 300000, t2, 200000);
        memcpy(want + 500000, text, 300000);
        const char *p = tpath("multi.txt.zst");
        write_file(p, cat, all);
        result("zst_multi_frame", expect_bytes(p, want, 800000, EGG_SRC_ZST));
        /* truncation inside the last frame of a multi-frame file */
        write_file(p, cat, all - 7);
        result("zst_multi_frame_truncated", expect_error(p, "truncated", NULL));
        free(t2), free(z2), free(cat), free(want);
    }

    /* --- large, no content size in header: needs several growths --- */
    size_t bign = 6u << 20;
    uint8_t *big = make_lines(bign);
    size_t bzn;
    uint8_t *bz = zcompress(big, bign, 1, 0, &bzn);
    const char *bigp = tpath("big.txt.zst");
    write_file(bigp, bz, bzn);
    {
        const char *r = expect_bytes(bigp, big, bign, EGG_SRC_ZST);
        if (!r && egg_data_test_hooks.growths < 2) {
            snprintf(why, sizeof why, "only %u growths (compressed %zu bytes)", egg_data_test_hooks.growths, bzn);
            r = why;
        }
        if (!r && egg_data_test_hooks.spilled) r = "spilled to a file unexpectedly";
        result("zst_large_growth", r);
    }

    /* --- spill to an unlinked temp file: discovered while growing --- */
    {
        int before = dir_entries();
        egg_data_test_hooks.spill_limit = 1u << 20;
        const char *r = expect_bytes(bigp, big, bign, EGG_SRC_ZST);
        if (!r && !egg_data_test_hooks.spilled) r = "did not spill to a temporary file";
        if (!r && dir_entries() != before) r = "temporary file left behind";
        result("zst_spill_growth", r);
        /* known content size above the limit: spills from the start */
        size_t kzn;
        uint8_t *kz = zcompress(big, bign, 1, 1, &kzn);
        const char *p = tpath("known.txt.zst");
        write_file(p, kz, kzn);
        before = dir_entries();
        r = expect_bytes(p, big, bign, EGG_SRC_ZST);
        if (!r && !egg_data_test_hooks.spilled) r = "did not spill to a temporary file";
        if (!r && egg_data_test_hooks.growths) r = "grew memory before spilling";
        if (!r && dir_entries() != before) r = "temporary file left behind";
        result("zst_spill_known_size", r);
        egg_data_test_hooks.spill_limit = 0;
        free(kz);
    }

    /* --- missing / empty --- */
    result("missing_file", expect_error(tpath("nope.txt"), "not found", NULL));
    result("missing_file_zst", expect_error(tpath("nope.txt.zst"), "not found", NULL));
    {
        const char *p = tpath("empty.txt");
        write_file(p, "", 0);
        result("empty_file", expect_error(p, "empty", NULL));
        const char *q = tpath("empty.txt.zst");
        write_file(q, "", 0);
        result("empty_file_zst", expect_error(q, "empty", NULL));
        size_t en;
        uint8_t *ez = zcompress("", 0, 1, 1, &en);
        const char *e2 = tpath("emptycontent.txt.zst");
        write_file(e2, ez, en);
        result("empty_content_zst", expect_error(e2, "nothing", NULL));
        free(ez);
        result("directory", expect_error(g_dir, "regular file", NULL));
    }

    /* --- .bin --- */
    {
        size_t n = 50001;
        uint8_t *t8 = malloc(n);
        for (size_t i = 0; i < n; i++) t8[i] = (uint8_t)(next_rand() % 200);
        const char *p = tpath("u8.bin");
        write_bin(p, 1, 200, n, t8, n, "EGGTOKS");
        egg_tokens t;
        egg_err err = {0};
        const char *r = NULL;
        if (egg_tokens_open(&t, p, &err)) r = err.msg;
        else {
            if (t.n != n || t.vocab != 200 || t.bytes_per_token != 1 || t.kind != EGG_SRC_BIN || !t.u8) r = "header fields";
            else if (memcmp(t.u8, t8, n)) r = "content differs";
            egg_span s = {&t, 100, 10};
            if (!r && egg_span_at(&s, 3) != t8[103]) r = "egg_span_at differs";
            egg_tokens_close(&t);
        }
        result("bin_u8_roundtrip", r);

        t8[31337] = 200;
        const char *q = tpath("u8bad.bin");
        write_bin(q, 1, 200, n, t8, n, "EGGTOKS");
        result("bin_u8_token_ge_vocab", expect_error(q, "31337", "200"));
        free(t8);
    }
    {
        size_t n = 70000;
        uint16_t *t16 = malloc(n * 2);
        for (size_t i = 0; i < n; i++) t16[i] = (uint16_t)(next_rand() % 50257);
        t16[n - 1] = 50256;
        const char *p = tpath("u16.bin");
        write_bin(p, 2, 50257, n, t16, n * 2, "EGGTOKS");
        egg_tokens t;
        egg_err err = {0};
        const char *r = NULL;
        if (egg_tokens_open(&t, p, &err)) r = err.msg;
        else {
            if (t.n != n || t.vocab != 50257 || t.bytes_per_token != 2 || !t.u16) r = "header fields";
            else if (memcmp(t.u16, t16, n * 2)) r = "content differs";
            for (size_t i = 0; !r && i < n; i += 101)
                if (egg_tok_at(&t, i) != t16[i]) r = "egg_tok_at differs";
            egg_tokens_close(&t);
        }
        result("bin_u16_roundtrip", r);

        t16[65539] = 50257;
        const char *q = tpath("u16bad.bin");
        write_bin(q, 2, 50257, n, t16, n * 2, "EGGTOKS");
        result("bin_u16_token_ge_vocab", expect_error(q, "65539", "50257"));

        const char *tr = tpath("trunc.bin");
        write_bin(tr, 2, 50257, n, t16, n * 2 - 1, "EGGTOKS");
        result("bin_truncated", expect_error(tr, "truncated", NULL));
        write_bin(tr, 2, 50257, n, t16, 10, "EGGTOKS");
        result("bin_truncated_short", expect_error(tr, "truncated", NULL));
        write_file(tr, "EGGTOKS", 8);
        result("bin_truncated_header", expect_error(tr, "truncated", NULL));

        const char *tb = tpath("trail.bin");
        write_bin(tb, 2, 50257, n - 1, t16, n * 2, "EGGTOKS");
        result("bin_trailing_bytes", expect_error(tb, "trailing", NULL));

        const char *bm = tpath("magic.bin");
        write_bin(bm, 2, 50257, n, t16, n * 2, "EGGTOKZ");
        result("bin_bad_magic", expect_error(bm, "magic", NULL));

        const char *bv = tpath("vocab.bin");
        write_bin(bv, 2, 1, n, t16, n * 2, "EGGTOKS");
        result("bin_bad_vocab", expect_error(bv, "vocab", NULL));
        const char *bb = tpath("bpt.bin");
        write_bin(bb, 4, 50257, n / 2, t16, n * 2, "EGGTOKS");
        result("bin_bad_bytes_per_token", expect_error(bb, "bytes per token", NULL));
        const char *bz0 = tpath("zero.bin");
        write_bin(bz0, 2, 50257, 0, t16, 0, "EGGTOKS");
        result("bin_zero_tokens", expect_error(bz0, "0 tokens", NULL));
        free(t16);
    }

    /* --- close is safe on a zeroed struct and twice --- */
    {
        egg_tokens t;
        memset(&t, 0, sizeof t);
        egg_tokens_close(&t);
        egg_tokens_close(&t);
        result("close_zeroed", NULL);
    }
    result("no_fd_leak", count_fds() == fds0 ? NULL : "open file descriptors leaked");

    /* cleanup */
    DIR *d = opendir(g_dir);
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlink(tpath(e->d_name));
    closedir(d);
    rmdir(g_dir);
    free(text), free(z), free(big), free(bz);
    return g_fail ? 1 : 0;
}

/* data.h — token sources: .txt (bytes), .txt.zst (streamed through libzstd),
 * .bin token files (egg's own header, uint8 or uint16 tokens).
 *
 * A source is opened once and then read-only; tokens are addressed by index.
 * Text files are mmap'd (no copy); .zst is decompressed once into anonymous
 * memory, or into an unlinked temporary file when it would take more than a
 * quarter of physical RAM; .bin files are mmap'd past their header. */
#ifndef EGG_DATA_H
#define EGG_DATA_H
#include <stdint.h>
#include <stddef.h>
#include "util.h"

/* .bin token-file header: 32 bytes, little-endian.
 *   0  char[8]  magic "EGGTOKS\0"
 *   8  uint32   version = 1
 *  12  uint32   bytes per token: 1 (uint8) or 2 (uint16)
 *  16  uint32   vocab size (every token must be < vocab; 2..65536)
 *  20  uint32   reserved, 0
 *  24  uint64   number of tokens
 *  32  tokens
 */
#define EGG_TOK_MAGIC "EGGTOKS"
#define EGG_TOK_VERSION 1u
#define EGG_TOK_HEADER 32

typedef enum { EGG_SRC_TEXT = 0, EGG_SRC_ZST = 1, EGG_SRC_BIN = 2 } egg_src_kind;

typedef struct egg_tokens {
    const uint8_t *u8;    /* tokens when bytes_per_token == 1 */
    const uint16_t *u16;  /* tokens when bytes_per_token == 2 */
    uint64_t n;           /* number of tokens */
    uint32_t vocab;       /* 256 for text; header value for .bin */
    int bytes_per_token;  /* 1 or 2 */
    egg_src_kind kind;
    char path[1024];
    /* private */
    void *map_base;
    size_t map_len;
    int owns_heap;        /* map_base is anonymous/mmap memory we must unmap */
    const char *flag;     /* the flag that named the file, for error messages */
} egg_tokens;

/* Open path. Kind from the name: *.zst → zstd text, *.bin → token file,
 * anything else → raw bytes. Errors (EGG_EINPUT, message names the file):
 * missing/unreadable, empty, corrupt or truncated .zst (content checksum
 * verified), bad .bin header or size, a token >= vocab. */
int egg_tokens_open(egg_tokens *t, const char *path, egg_err *err);
/* The same, the errors naming `flag` (e.g. "--val-data") as the one to fix. */
int egg_tokens_open_as(egg_tokens *t, const char *path, const char *flag, egg_err *err);
void egg_tokens_close(egg_tokens *t);

static inline uint32_t egg_tok_at(const egg_tokens *t, uint64_t i) {
    return t->bytes_per_token == 1 ? t->u8[i] : t->u16[i];
}

/* A read-only view [begin, begin+n) of a token source (train/val split). */
typedef struct egg_span {
    const egg_tokens *src;
    uint64_t begin, n;
} egg_span;

static inline uint32_t egg_span_at(const egg_span *s, uint64_t i) {
    return egg_tok_at(s->src, s->begin + i);
}

#endif

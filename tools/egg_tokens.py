#!/usr/bin/env python3
"""egg_tokens.py — write egg token files (.bin) from text, id lists or llm.c token files.

Format (see src/data.h): 32-byte little-endian header
    char[8] "EGGTOKS\\0", u32 version=1, u32 bytes_per_token (1|2),
    u32 vocab (2..65536), u32 reserved=0, u64 ntokens
followed by ntokens uint8 or uint16 little-endian tokens.

Modes:
  egg_tokens.py text IN.txt OUT.bin                 bytes -> uint8 tokens, vocab 256
  egg_tokens.py ids  IN.txt OUT.bin [--vocab V]     whitespace-separated integer ids
  egg_tokens.py llmc IN.bin OUT.bin --vocab V [--raw]
                                                    llm.c / nanoGPT uint16 token file
Output is written to OUT.tmp and renamed into place.
"""
import argparse
import array
import os
import struct
import sys

MAGIC = b"EGGTOKS\0"
VERSION = 1
LLMC_MAGIC = 20240520
CHUNK = 1 << 22  # tokens per read/write chunk


class Fail(Exception):
    pass


def header(bpt, vocab, n):
    return MAGIC + struct.pack("<IIIIQ", VERSION, bpt, vocab, 0, n)


def check_vocab(vocab, what):
    if vocab is not None and not 2 <= vocab <= 65536:
        raise Fail(f"{what}: --vocab {vocab} out of range 2..65536")


def write_atomic(out, write_body):
    """write_body(f) writes header + tokens; we write OUT.tmp then rename."""
    tmp = out + ".tmp"
    try:
        with open(tmp, "wb") as f:
            write_body(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def open_in(path):
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise Fail(f"{path}: file not found")
    except OSError as e:
        raise Fail(f"{path}: cannot open: {e.strerror}")


def mode_text(args):
    with open_in(args.input) as fin:
        size = os.fstat(fin.fileno()).st_size
        if size == 0:
            raise Fail(f"{args.input}: file is empty")

        def body(f):
            f.write(header(1, 256, size))
            left = size
            while left:
                b = fin.read(min(CHUNK, left))
                if not b:
                    raise Fail(f"{args.input}: file shrank while reading")
                f.write(b)
                left -= len(b)
        write_atomic(args.output, body)
    return size, 256, 1


def mode_ids(args):
    check_vocab(args.vocab, args.input)
    ids = array.array("l")
    with open_in(args.input) as fin:
        for lineno, line in enumerate(fin, 1):
            for w in line.split():
                try:
                    v = int(w)
                except ValueError:
                    raise Fail(f"{args.input}:{lineno}: not an integer id: {w[:40]!r}")
                if v < 0:
                    raise Fail(f"{args.input}:{lineno}: negative id {v}")
                if v > 65535:
                    raise Fail(f"{args.input}:{lineno}: id {v} exceeds 65535 (egg tokens are at most uint16)")
                ids.append(v)
    if not ids:
        raise Fail(f"{args.input}: no ids found (file is empty or blank)")
    mx = max(ids)
    vocab = args.vocab if args.vocab is not None else max(mx + 1, 2)
    if mx >= vocab:
        i = next(i for i, v in enumerate(ids) if v >= vocab)
        raise Fail(f"{args.input}: id {ids[i]} at position {i} is >= --vocab {vocab}")
    bpt = 1 if vocab <= 256 else 2
    out = array.array("B" if bpt == 1 else "H", ids)
    if sys.byteorder != "little":
        out.byteswap()

    def body(f):
        f.write(header(bpt, vocab, len(out)))
        out.tofile(f)
    write_atomic(args.output, body)
    return len(out), vocab, bpt


def mode_llmc(args):
    if args.vocab is None:
        raise Fail("llmc mode needs --vocab V (e.g. 50257 for GPT-2 tokens)")
    check_vocab(args.vocab, args.input)
    vocab = args.vocab
    with open_in(args.input) as fin:
        size = os.fstat(fin.fileno()).st_size
        if args.raw:
            off = 0
            if size % 2:
                raise Fail(f"{args.input}: raw uint16 file has odd size {size}")
            n = size // 2
        else:
            h = fin.read(1024)
            if len(h) < 1024:
                raise Fail(f"{args.input}: too short for an llm.c header ({size} bytes; use --raw for a headerless file)")
            hdr = struct.unpack("<256i", h)
            if hdr[0] != LLMC_MAGIC:
                raise Fail(f"{args.input}: bad llm.c magic {hdr[0]} (want {LLMC_MAGIC}; use --raw for a headerless uint16 file)")
            if hdr[1] != 1:
                raise Fail(f"{args.input}: unsupported llm.c version {hdr[1]} (want 1: uint16 tokens)")
            n = hdr[2]
            off = 1024
            if n < 0 or size != off + 2 * n:
                what = "truncated" if size < off + 2 * n else "trailing bytes"
                raise Fail(f"{args.input}: {what}: header says {n} tokens but file has {size - off} bytes of tokens")
        if n == 0:
            raise Fail(f"{args.input}: holds 0 tokens")
        bpt = 1 if vocab <= 256 else 2

        def body(f):
            f.write(header(bpt, vocab, n))
            fin.seek(off)
            done = 0
            while done < n:
                a = array.array("H")
                k = min(CHUNK, n - done)
                a.fromfile(fin, k)
                if sys.byteorder != "little":
                    a.byteswap()
                mx = max(a)
                if mx >= vocab:
                    i = next(i for i, v in enumerate(a) if v >= vocab)
                    raise Fail(f"{args.input}: token {done + i} has value {a[i]} but --vocab is {vocab}")
                if bpt == 1:
                    array.array("B", a).tofile(f)
                else:
                    if sys.byteorder != "little":
                        a.byteswap()
                    a.tofile(f)
                done += k
        write_atomic(args.output, body)
    return n, vocab, bpt


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="egg_tokens.py",
        description="Write an egg token file (.bin): 32-byte header 'EGGTOKS\\0', version 1, "
                    "bytes/token (1|2), vocab, 0, ntokens; then uint8/uint16 LE tokens.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
               "  egg_tokens.py text corpus.txt corpus.bin\n"
               "  egg_tokens.py ids ids.txt ids.bin --vocab 1000\n"
               "  egg_tokens.py llmc fineweb_train_000001.bin train.bin --vocab 50257\n"
               "  egg_tokens.py llmc tokens.u16 train.bin --vocab 50257 --raw")
    p.add_argument("mode", choices=["text", "ids", "llmc"],
                   help="text: bytes of IN as uint8 tokens (vocab 256); ids: whitespace-separated "
                        "integer ids; llmc: llm.c/nanoGPT token file (int32[256] header, uint16 tokens)")
    p.add_argument("input", metavar="IN")
    p.add_argument("output", metavar="OUT", help="output .bin (written to OUT.tmp, then renamed)")
    p.add_argument("--vocab", type=int, help="vocab size (ids: default max id + 1; llmc: required)")
    p.add_argument("--raw", action="store_true", help="llmc: input is a headerless uint16 array")
    args = p.parse_args(argv)
    if args.mode == "text" and args.vocab not in (None, 256):
        p.error("text mode always uses vocab 256")
    if args.raw and args.mode != "llmc":
        p.error("--raw only applies to llmc mode")
    if os.path.abspath(args.input) == os.path.abspath(args.output):
        p.error("IN and OUT must differ")
    try:
        n, vocab, bpt = {"text": mode_text, "ids": mode_ids, "llmc": mode_llmc}[args.mode](args)
    except Fail as e:
        print(f"egg_tokens.py: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"egg_tokens.py: error: {e.filename or args.output}: {e.strerror}", file=sys.stderr)
        return 1
    print(f"{args.output}: {n} tokens, vocab {vocab}, {bpt} byte(s)/token")
    return 0


if __name__ == "__main__":
    sys.exit(main())

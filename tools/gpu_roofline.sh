#!/usr/bin/env bash
# gpu_roofline.sh [RANK...] — DRAM bytes and time per kernel over one training step, by Nsight Compute's
# counters (on the GPU machine; default ranks 1 and 4). Runs EGG-256x6 (seq 100, the issue's 32768 members) for one
# step and profiles only the kernels launched inside egg's NVTX range "step" (eval, exchange, update: not the start-up,
# nor the closing validation). Logs and CSVs under $OUT. docs/BENCHMARKS.md ("the step's DRAM traffic") turns the
# totals into a roofline. Env: EGG_ROOF_ARGS (model flags, default "--hidden 256 --layers 6 --seq 100 --pop 32768"),
# EGG_ROOF_SCALE (1; e.g. 4 with --pop 8192 to stand for 4 member parts), EGG_ROOF_BW (3.0e12 bytes a second),
# EGG_BIN (./egg_mgpu, built with NVTX: `make` finds it in the CUDA toolkit), EGG_ROOF_DATA (a text file; default a
# synthetic word corpus: speed does not depend on the text).
set -u
cd "$(dirname "$0")/.." || exit 2
OUT=${OUT:-/tmp/egg_out}; mkdir -p "$OUT"
BIN=${EGG_BIN:-./egg_mgpu}
NCU=$(command -v ncu || { [ -x /usr/local/cuda/bin/ncu ] && echo /usr/local/cuda/bin/ncu; })
[ -n "$NCU" ] || { echo "gpu_roofline.sh: error: ncu (Nsight Compute) not found on PATH or in /usr/local/cuda/bin" >&2; exit 2; }
[ -x "$BIN" ] || { echo "gpu_roofline.sh: error: $BIN not built (run make)" >&2; exit 2; }
ranks=${*:-1 4}
data=${EGG_ROOF_DATA:-$OUT/roof_corpus.txt}
if [ -z "${EGG_ROOF_DATA:-}" ]; then
  python3 tools/word_corpus.py "$data" 400000
fi
# shellcheck disable=SC2206
margs=(${EGG_ROOF_ARGS:---hidden 256 --layers 6 --seq 100 --pop 32768})
for r in $ranks; do
  csv=$OUT/ncu_rank$r.csv
  echo "== rank $r: ${margs[*]}, one step (NVTX range step), bytes and time x ${EGG_ROOF_SCALE:-1}"
  if ! "$NCU" --clock-control none --nvtx --nvtx-include "step/" --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum --csv --page raw \
      "$BIN" --data "$data" "${margs[@]}" --rank "$r" --steps 1 --val-every 0 --val-windows 1 --val-len 4 --backend cuda \
      >"$csv" 2>"$OUT/ncu_rank$r.err"; then
    echo "gpu_roofline.sh: error: ncu failed for rank $r: $(tail -2 "$OUT/ncu_rank$r.err" | tr '\n' ' ')" >&2; exit 1
  fi
  python3 tools/ncu_bytes.py --scale "${EGG_ROOF_SCALE:-1}" --bw "${EGG_ROOF_BW:-3.0e12}" "$csv" | tee "$OUT/roof_rank$r.md"
done

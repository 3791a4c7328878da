#!/usr/bin/env bash
# One device-machine session: build, bit-exactness tests, benchmarks.
# Usage (on the GPU machine): bash tools/gpu_session.sh [quick|bench|all]  (logs under $OUT)
set -u
OUT=${OUT:-/tmp/egg_out}; mkdir -p "$OUT"
what=${1:-all}
export NCCL_NVLS_ENABLE=0
{
  date -u; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv; nproc
  command -v mpicc nvcc; ls /usr/include/zstd.h 2>&1
} >"$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
# EGG_NOBUILD=1: use the egg_mgpu carried with the working tree
if [ "${EGG_NOBUILD:-0}" = 1 ]; then :
elif ! make -j8 >"$OUT/build.log" 2>&1; then
  echo "make failed; tail:"; tail -20 "$OUT/build.log"
  [ -x ./egg_mgpu ] || exit 1
  echo "using the carried binary"
fi
./egg_mgpu --version
python3 tools/word_corpus.py /tmp/bench.txt 3200000
if [ "$what" = quick ] || [ "$what" = all ]; then
  bash tests/gpu.sh 2>&1 | tee "$OUT/test_gpu.log" | tail -40
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  for cfg in "--hidden 256 --layers 6 --seq 100 --pop 32768" "--hidden 128 --layers 4 --seq 256 --pop 65536"; do
    # shellcheck disable=SC2086
    ./egg_mgpu --data /tmp/bench.txt $cfg --bench --steps 8 --backend cuda 2>&1 | grep -E 'bench|error' | tee -a "$OUT/bench.log"
  done
fi

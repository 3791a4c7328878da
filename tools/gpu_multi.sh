#!/usr/bin/env bash
# Multi-GPU session (nvidia-h200-x2/-x4): world-size invariance on GPUs,
# NCCL vs MPI exchange, shared-GPU fallback, --update allreduce, and scaling at
# a fixed per-GPU population (both update modes). Logs under $OUT. NVLink multicast stays off.
set -u
OUT=${OUT:-/tmp/egg_out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
NG=$(nvidia-smi -L | wc -l)
nvidia-smi -L; date -u
# EGG_NOBUILD=1: use the egg_mgpu carried with the working tree
if [ "${EGG_NOBUILD:-0}" != 1 ]; then make -j16 >"$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }; fi
./egg_mgpu --version
python3 - <<'PY'
import random
random.seed(3)
w = "the of and to in a is that for it as was with be by on not he this are or his from at which".split()
open("/tmp/b.txt", "w").write(" ".join(random.choice(w) for _ in range(4000000)))
PY
MR="mpirun --bind-to none -x NCCL_NVLS_ENABLE"
sum() { sed -n 's/.*checksum=\([0-9a-f]*\).*/\1/p' "$1"; }
# invariance: same global config on 1, 2, NG ranks (one GPU each)
A="--data /tmp/b.txt --hidden 256 --layers 6 --seq 20 --pop 8192 --steps 3 --val-every 0 --val-windows 4 --backend cuda"
for n in 1 2 $NG; do
  $MR -np $n ./egg_mgpu $A >"$OUT/inv_$n.log" 2>&1
  echo "invariance np=$n checksum=$(sum "$OUT/inv_$n.log") $(grep -a 'fitness exchange' "$OUT/inv_$n.log")"
done
$MR -np 2 ./egg_mgpu $A --exchange mpi >"$OUT/inv_2mpi.log" 2>&1
echo "invariance np=2 --exchange mpi checksum=$(sum "$OUT/inv_2mpi.log")"
CUDA_VISIBLE_DEVICES=0 $MR -x CUDA_VISIBLE_DEVICES -np 2 ./egg_mgpu $A >"$OUT/inv_shared.log" 2>&1
echo "2 ranks on one GPU checksum=$(sum "$OUT/inv_shared.log") $(grep -a 'exchange' "$OUT/inv_shared.log" | head -2 | tr '\n' ' ')"
# --update allreduce: own pairs' votes, summed by NCCL (by MPI through the host with --exchange mpi)
for n in 2 $NG; do
  EGG_GPU_UPDATE_ALLREDUCE=1 $MR -x EGG_GPU_UPDATE_ALLREDUCE -np $n ./egg_mgpu $A --update allreduce >"$OUT/inv_ar_$n.log" 2>&1
  echo "invariance np=$n --update allreduce checksum=$(sum "$OUT/inv_ar_$n.log") $(grep -a 'egg: update' "$OUT/inv_ar_$n.log")"
done
EGG_GPU_UPDATE_ALLREDUCE=1 $MR -x EGG_GPU_UPDATE_ALLREDUCE -np 2 ./egg_mgpu $A --update allreduce --exchange mpi >"$OUT/inv_ar_2mpi.log" 2>&1
echo "invariance np=2 --update allreduce --exchange mpi checksum=$(sum "$OUT/inv_ar_2mpi.log") $(grep -a 'egg: update' "$OUT/inv_ar_2mpi.log")"
./egg_mgpu $A --backend cpu --threads 16 >"$OUT/inv_cpu.log" 2>&1
echo "cpu reference checksum=$(sum "$OUT/inv_cpu.log")"
# scaling at a fixed per-GPU population
for cfg in "256 6 100 32768" "128 4 256 65536"; do
  set -- $cfg
  for n in 1 2 $NG; do
    $MR -np $n ./egg_mgpu --data /tmp/b.txt --hidden $1 --layers $2 --seq $3 --pop $(( $4 * n )) --bench --steps 3 --backend cuda >"$OUT/scale_${1}_$n.log" 2>&1
    echo "scale EGG-${1}x$2 seq $3 per-GPU pop $4 np=$n: $(grep -a 'bench pop_tok' "$OUT/scale_${1}_$n.log")"
  done
  for n in 2 $NG; do
    EGG_GPU_UPDATE_ALLREDUCE=1 $MR -x EGG_GPU_UPDATE_ALLREDUCE -np $n ./egg_mgpu --data /tmp/b.txt --hidden $1 --layers $2 --seq $3 \
      --pop $(( $4 * n )) --bench --steps 3 --backend cuda --update allreduce >"$OUT/scale_ar_${1}_$n.log" 2>&1
    echo "scale EGG-${1}x$2 seq $3 per-GPU pop $4 np=$n --update allreduce: $(grep -a 'bench pop_tok' "$OUT/scale_ar_${1}_$n.log")"
  done
done

#!/usr/bin/env bash
# Multi-GPU session (nvidia-h100-x2 / nvidia-h200-x2 / -x4 / -x8): world-size invariance on GPUs, NCCL vs MPI
# exchange, the shared-GPU fallback, both update modes (the default, --update auto, all-reduces the votes
# through NCCL when every rank has its own GPU; --update replicated rebuilds the whole update on every rank),
# uneven and idle shards, and scaling at a fixed per-GPU population in both modes. Logs under $OUT.
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0).
set -u
OUT=${OUT:-/tmp/egg_out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
NG=$(nvidia-smi -L | wc -l)
nvidia-smi -L; date -u
# EGG_NOBUILD=1: use the egg_mgpu carried with the working tree
if [ "${EGG_NOBUILD:-0}" != 1 ]; then make -j16 >"$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }; fi
./egg_mgpu --version
python3 tools/word_corpus.py /tmp/b.txt 4000000
MR="mpirun --bind-to none -x NCCL_NVLS_ENABLE"
sum() { sed -n 's/.*checksum=\([0-9a-f]*\).*/\1/p' "$1"; }
upd() { grep -a 'egg: update' "$1" | cut -c1-90; }
# invariance: the same global config on 1, 2, NG ranks (one GPU each), in both update modes
A="--data /tmp/b.txt --hidden 256 --layers 6 --seq 20 --pop 8192 --steps 3 --val-every 0 --val-windows 4 --backend cuda"
./egg_mgpu $A --backend cpu --threads 16 >"$OUT/inv_cpu.log" 2>&1
echo "cpu reference checksum=$(sum "$OUT/inv_cpu.log")"
for n in 1 2 $NG; do
  $MR -np $n ./egg_mgpu $A >"$OUT/inv_$n.log" 2>&1
  echo "invariance np=$n checksum=$(sum "$OUT/inv_$n.log") $(upd "$OUT/inv_$n.log")"
  [ "$n" = 1 ] && continue
  $MR -np $n ./egg_mgpu $A --update replicated >"$OUT/inv_rep_$n.log" 2>&1
  echo "invariance np=$n checksum=$(sum "$OUT/inv_rep_$n.log") $(upd "$OUT/inv_rep_$n.log")"
done
EGG_CUDA_PARTS=4 $MR -x EGG_CUDA_PARTS -np $NG ./egg_mgpu $A >"$OUT/inv_parts_$NG.log" 2>&1
echo "invariance np=$NG, the forward in 4 parts: checksum=$(sum "$OUT/inv_parts_$NG.log") $(upd "$OUT/inv_parts_$NG.log")"
$MR -np 2 ./egg_mgpu $A --exchange mpi >"$OUT/inv_2mpi.log" 2>&1
echo "invariance np=2 --exchange mpi checksum=$(sum "$OUT/inv_2mpi.log") $(upd "$OUT/inv_2mpi.log")"
$MR -np 2 ./egg_mgpu $A --exchange mpi --update allreduce >"$OUT/inv_ar_2mpi.log" 2>&1
echo "invariance np=2 --exchange mpi --update allreduce checksum=$(sum "$OUT/inv_ar_2mpi.log") $(upd "$OUT/inv_ar_2mpi.log")"
CUDA_VISIBLE_DEVICES=0 $MR -x CUDA_VISIBLE_DEVICES -np 2 ./egg_mgpu $A >"$OUT/inv_shared.log" 2>&1
echo "2 ranks on one GPU checksum=$(sum "$OUT/inv_shared.log") $(grep -a 'exchange: ranks share' "$OUT/inv_shared.log" | cut -c1-60) $(upd "$OUT/inv_shared.log")"
# uneven shards (4095 pairs) with norm fitness, and a rank with no pairs, with the votes all-reduced by NCCL
U="--data /tmp/b.txt --hidden 128 --layers 2 --seq 20 --pop 8190 --steps 3 --val-every 0 --val-windows 4 --fitness norm"
$MR -np $NG ./egg_mgpu $U --backend cuda >"$OUT/inv_ar_uneven.log" 2>&1
./egg_mgpu $U --backend cpu --threads 16 >"$OUT/inv_uneven_cpu.log" 2>&1
echo "uneven np=$NG --fitness norm checksum=$(sum "$OUT/inv_ar_uneven.log"), cpu $(sum "$OUT/inv_uneven_cpu.log") $(upd "$OUT/inv_ar_uneven.log")"
I="--data /tmp/b.txt --hidden 128 --layers 2 --seq 20 --pop 2 --steps 3 --val-every 0 --val-windows 4"
$MR -np $NG ./egg_mgpu $I --backend cuda >"$OUT/inv_ar_idle.log" 2>&1
./egg_mgpu $I --backend cpu --threads 16 >"$OUT/inv_idle_cpu.log" 2>&1
echo "idle rank np=$NG (1 pair) checksum=$(sum "$OUT/inv_ar_idle.log"), cpu $(sum "$OUT/inv_idle_cpu.log")"
# rank 2-4 across GPUs: each matrix's noise has R rank-one terms, the forward and the update's operands take other
# kernels (the chunk recurrence and the fused MLP at rank 2-4, xb_kernel's T rows); the same checksum on 1, 2 and NG
# ranks in both update modes as the CPU's, at rank 4 (hidden 256) and at rank 2 with uneven shards (hidden 128)
for cfg in "256 4 4096" "128 2 8190"; do
  set -- $cfg
  R="--data /tmp/b.txt --hidden $1 --layers 2 --rank $2 --seq 20 --pop $3 --steps 3 --val-every 0 --val-windows 4"
  ./egg_mgpu $R --backend cpu --threads 16 >"$OUT/inv_r$2_cpu.log" 2>&1
  echo "rank $2 hidden $1 pop $3: cpu reference checksum=$(sum "$OUT/inv_r$2_cpu.log")"
  for n in 1 2 $NG; do
    for mode in auto replicated; do
      [ "$n" = 1 ] && [ "$mode" = replicated ] && continue
      $MR -np $n ./egg_mgpu $R --backend cuda --update $mode >"$OUT/inv_r$2_${mode}_$n.log" 2>&1
      echo "rank $2 hidden $1 pop $3 np=$n --update $mode checksum=$(sum "$OUT/inv_r$2_${mode}_$n.log") $(upd "$OUT/inv_r$2_${mode}_$n.log")"
    done
  done
done
# scaling at a fixed per-GPU population: the default (votes all-reduced) and --update replicated
# (and EGG-256x6 at rank 4, the default update only)
for cfg in "256 6 100 32768 1" "128 4 256 65536 1" "256 6 100 32768 4"; do
  set -- $cfg
  for n in 1 2 $NG; do
    for mode in auto replicated; do
      [ "$n" = 1 ] && [ "$mode" = replicated ] && continue
      [ "$5" != 1 ] && [ "$mode" = replicated ] && continue
      $MR -np $n ./egg_mgpu --data /tmp/b.txt --hidden $1 --layers $2 --seq $3 --pop $(( $4 * n )) --rank $5 --bench --steps 3 \
        --backend cuda --update $mode >"$OUT/scale_${mode}_${1}_r$5_$n.log" 2>&1
      echo "scale EGG-${1}x$2 seq $3 rank $5 per-GPU pop $4 np=$n --update $mode: $(grep -a 'bench pop_tok' "$OUT/scale_${mode}_${1}_r$5_$n.log")"
    done
  done
done

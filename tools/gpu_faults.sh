#!/usr/bin/env bash
# Faults on a multi-GPU node (nvidia-h100-x2 / -x4, ...): what a cluster does to a job, with one rank per GPU
# and the fitness exchanged by NCCL. Each case prints one PASS / FAIL line; logs under $OUT.
#   preempt   SIGTERM to every rank mid-run (what srun does on preemption or at the time limit): all ranks
#             stop after the same step, write one checkpoint and exit 0
#   shrink    that checkpoint resumed on fewer GPUs (NG -> NG/2 ranks, at least 1) runs to the same weights
#             as the uninterrupted NG-rank run
#   kill9     kill -9 of one rank while the others wait in an NCCL collective: mpirun ends the whole job,
#             non-zero, within 60 s (nothing hangs)
#   kill9-resume  the last checkpoint before the kill is intact: resumed on one GPU it reaches the
#             uninterrupted run's weights
#   hang      SIGSTOP of one rank (a hung GPU or a frozen node): the others wait in NCCL until their
#             --hang-timeout (5 s) watchdog exits one of them with one line; mpirun ends the job, no rank
#             left; the last checkpoint, resumed on one GPU, reaches the uninterrupted run's weights
# Usage: OUT=/tmp/f EGG_NOBUILD=1 bash tools/gpu_faults.sh  (NCCL_NVLS_ENABLE stays 0)
set -u
OUT=${OUT:-/tmp/egg_faults}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
NG=$(nvidia-smi -L | wc -l)
nvidia-smi -L; date -u
if [ "$NG" -lt 2 ]; then echo "SKIP gpu-faults: $NG GPU (needs 2 or more)"; exit 0; fi
if [ "${EGG_NOBUILD:-0}" != 1 ]; then make -j16 >"$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }; fi
python3 tools/word_corpus.py /tmp/f.txt 2000000
MR="mpirun --bind-to none -x NCCL_NVLS_ENABLE"
S2=300 # the step every run reaches
A="--data /tmp/f.txt --hidden 256 --layers 4 --seq 50 --pop 8192 --val-every 0 --val-windows 4 --backend cuda --print-every 25"
pass=0; fail=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1: $2"; fail=$((fail + 1)); }
sum() { sed -n 's/.*checksum=\([0-9a-f]*\).*/\1/p' "$1" | head -1; }
latest() { ls "$1" 2>/dev/null | sed -n 's/^ckpt_0*\([0-9][0-9]*\)\.egg$/\1/p' | sort -n | tail -n 1; }
wait_ckpt() { local i=0; while [ "$(latest "$1")" = "" ] || [ "$(latest "$1")" -lt "$2" ]; do sleep 0.1; i=$((i + 1)); [ $i -gt 1200 ] && return 1; done; }
ranks() { pgrep -x egg_mgpu | sort -n; }
half=$((NG / 2))

# the uninterrupted run on NG GPUs
$MR -np "$NG" ./egg_mgpu $A --steps $S2 >"$OUT/straight.log" 2>&1
ref=$(sum "$OUT/straight.log")
echo "straight np=$NG to step $S2: checksum=$ref ($(grep -a 'egg: update' "$OUT/straight.log" | cut -c1-60))"

# preempt: SIGTERM to every rank once the step-25 checkpoint exists
rm -rf "$OUT/ck_p"
$MR -np "$NG" ./egg_mgpu $A --steps $S2 --checkpoint-dir "$OUT/ck_p" --checkpoint-every 25 >"$OUT/preempt.log" 2>&1 &
mp=$!
wait_ckpt "$OUT/ck_p" 25
kill -TERM $(ranks) 2>/dev/null
t0=$(date +%s.%N); wait $mp; rc=$?; took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
stop=$(sed -n 's/^egg: stopping after step \([0-9]*\) (SIGTERM).*/\1/p' "$OUT/preempt.log")
ck=$(latest "$OUT/ck_p")
if [ $rc -eq 0 ] && [ -n "$stop" ] && [ "$stop" = "$ck" ] && grep -aq '^egg: done' "$OUT/preempt.log"; then
  ok "preempt (np=$NG: SIGTERM to the ranks, stopped after step $stop in ${took} s, checkpoint ckpt_$ck, exit 0)"
else bad preempt "exit $rc, stop step '$stop', latest checkpoint '$ck': $(tail -n 3 "$OUT/preempt.log" | tr '\n' '|')"; fi

# shrink: resume that checkpoint on half the GPUs (at least one)
n2=$((half > 0 ? half : 1))
CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((n2 - 1))) $MR -x CUDA_VISIBLE_DEVICES -np $n2 ./egg_mgpu $A --steps $S2 \
  --checkpoint-dir "$OUT/ck_p" --resume latest >"$OUT/shrink.log" 2>&1
got=$(sum "$OUT/shrink.log")
if [ -n "$ref" ] && [ "$got" = "$ref" ] && grep -aq "resumed from .*step $ck" "$OUT/shrink.log"; then
  ok "shrink (step $ck on np=$NG resumed on np=$n2 to step $S2: checksum $got = the straight run's)"
else bad shrink "np=$n2 checksum '$got', straight '$ref': $(grep -a 'resumed\|error' "$OUT/shrink.log" | head -2 | tr '\n' '|')"; fi

# strike SIGNAL NAME [egg args]: a run to step 100000 with checkpoints every 25 steps in $OUT/ck_NAME; once the
# step-50 one exists, SIGNAL to one rank (the others then wait in NCCL). Waits up to 60 s for mpirun (rc 124 and
# everything killed if it is still running), then up to 30 s for the other ranks (a rank may still be tearing
# down its GPU context). Sets rc, took (s from the signal to mpirun's end), gone (s after it), left (ranks still
# there); log $OUT/NAME.log
strike() {
  local sig=$1 name=$2 mp victim t0 i
  shift 2
  rm -rf "$OUT/ck_$name"
  $MR -np "$NG" ./egg_mgpu $A --steps 100000 --time-limit 120 --checkpoint-dir "$OUT/ck_$name" --checkpoint-every 25 "$@" \
    >"$OUT/$name.log" 2>&1 &
  mp=$!
  wait_ckpt "$OUT/ck_$name" 50
  victim=$(ranks | tail -n 1)
  kill -"$sig" "$victim"
  t0=$(date +%s.%N); i=0
  while kill -0 $mp 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
  took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  if kill -0 $mp 2>/dev/null; then
    rc=124; left=$(ranks | wc -l); gone=-
    kill -KILL $mp $(ranks) 2>/dev/null; wait $mp 2>/dev/null
    return
  fi
  wait $mp; rc=$?
  i=0; while [ -n "$(ranks)" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  gone=$(awk -v i=$i 'BEGIN { printf "%.1f", i / 10 }')
  left=$(ranks | wc -l)
  [ "$left" -eq 0 ] || kill -KILL $(ranks) 2>/dev/null
}
# resume_one NAME: $OUT/ck_NAME's last checkpoint resumed on one GPU to step S2; sets rstep (its step), got (checksum)
resume_one() {
  rstep=$(latest "$OUT/ck_$1")
  CUDA_VISIBLE_DEVICES=0 ./egg_mgpu $A --steps $S2 --checkpoint-dir "$OUT/ck_$1" --resume latest >"$OUT/$1_resume.log" 2>&1
  got=$(sum "$OUT/$1_resume.log")
}

# kill9: kill -9 of one rank: mpirun ends the job, no rank left
strike KILL kill
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$left" -eq 0 ]; then
  ok "kill9 (np=$NG: kill -9 of one rank ended the job in ${took} s, exit $rc; the other ranks gone ${gone} s after mpirun)"
else bad kill9 "exit $rc after ${took} s (124: mpirun still running after 60 s); $left ranks still running"; fi
grep -a 'noticed\|signal 9\|error' "$OUT/kill.log" | head -3

# kill9-resume: the last checkpoint before the kill, resumed on one GPU to step S2
resume_one kill
if [ -n "$rstep" ] && [ "$rstep" -le $S2 ] && [ "$got" = "$ref" ]; then ok "kill9-resume (ckpt_$rstep resumed on one GPU to step $S2: checksum $got = the straight run's)"
else bad kill9-resume "checkpoint step '$rstep', checksum '$got', straight '$ref': $(grep -a 'error' "$OUT/kill_resume.log" | head -1)"; fi

# hang: SIGSTOP of one rank under --hang-timeout 5; then its last checkpoint resumed on one GPU
strike STOP hang --hang-timeout 5
line=$(grep -a -o 'egg: error: rank [0-9]*: no progress for [0-9]* s after step [0-9]* (--hang-timeout 5)' "$OUT/hang.log" | head -n 1)
resume_one hang
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$left" -eq 0 ] && [ -n "$line" ] && [ "$got" = "$ref" ]; then
  ok "hang (np=$NG: SIGSTOP of one rank; '${line#egg: error: }'; the job ended ${took} s after the stop, exit $rc, no rank left; ckpt_$rstep resumed on one GPU to step $S2: checksum $got = the straight run's)"
else bad hang "exit $rc after ${took} s (124: mpirun still running after 60 s), $left ranks left, line '$line', resumed ckpt_$rstep checksum '$got' (straight '$ref')"; fi
date -u
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

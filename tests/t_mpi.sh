#!/usr/bin/env bash
# tests/t_mpi.sh — distributed training under Open MPI, on the CPU backend.
#
# Checks: world-size invariance (singleton = mpirun -np 1..5, uneven shards,
# idle ranks, groups straddling ranks, --fitness norm, --shard-weights, and
# each again with --update allreduce; the default --update auto is replicated
# on CPU ranks); rank 0 alone prints; bad input gives
# one error line (also when only one rank sees it); ranks with different
# settings are refused, not left to hang; the planted replica divergence is
# caught; kill -9 of a rank ends the job and the last
# checkpoint loads; a stopped rank (SIGSTOP) ends the job by --hang-timeout; a 2-rank checkpoint resumed on 3 ranks equals the straight
# run; graceful stops by SIGTERM to one rank, SIGUSR1 and SIGTERM to mpirun;
# the launch/ scripts (dry runs with fake nvidia-smi / rocm-smi, real CPU runs).
# About 25-35 s on a 2-core box.
#
# Golden values: the world-size-invariance claim is that an N-rank run equals
# the 1-process run, so the 1-process run (no mpirun) is the reference; the
# checksum is first shown to depend on the seed, so equality is not vacuous.
# Prints one PASS/FAIL/SKIP line per check; exit 1 if any FAIL.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root=$LIB_ROOT
t_begin=$(now)

CHECKS="mpi_checksum_depends_on_seed mpi_invariance_np1 mpi_invariance_np2 mpi_invariance_np3 mpi_invariance_np4
mpi_invariance_idle_rank mpi_invariance_group_straddle mpi_invariance_norm mpi_shard_weights mpi_update_allreduce_np1
mpi_update_allreduce_np2 mpi_update_allreduce_np3 mpi_update_allreduce_np4 mpi_update_allreduce_idle_rank
mpi_update_allreduce_norm mpi_update_auto_cpu mpi_rank0_prints_once
mpi_bad_input_one_error mpi_bad_input_one_rank mpi_bad_shard_weights mpi_config_mismatch mpi_divergence_caught
mpi_kill9_ends_job mpi_kill9_checkpoint_loads mpi_hang_timeout mpi_hang_timeout_adapts mpi_hang_timeout_slow_step_cut hang_timeout_off_for_one_cpu_process mpi_elastic_resume_2to3 mpi_sigterm_one_rank mpi_stop_reason_agreed
mpi_sigusr1_mpirun mpi_sigterm_mpirun launch_local_dry_cuda launch_local_dry_visible launch_local_dry_hidden launch_local_dry_rocm
launch_local_dry_cpu launch_hosts_dry launch_hosts_dry_unequal launch_hosts_bad_hostfile launch_local_real_cpu
launch_hosts_real_localhost"
command -v mpirun >/dev/null 2>&1 || skip_all "mpirun not found (install openmpi-bin)" $CHECKS
mpirun --version 2>/dev/null | grep -q 'Open MPI\|OpenRTE' || skip_all "mpirun is not Open MPI" $CHECKS
# $W: temp dir (removed on exit, kept with EGG_TEST_KEEP=1); $EGG: a private
# copy of the binary, so a rebuild of the tree during the run cannot pull it away
lib_init mpi || skip_all "egg_mgpu not built (run make)" $CHECKS
bin=$EGG

# root in CI: allowed here, for this script only
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# containers without ptrace: no cross-memory attach in the shared-memory BTL
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# ranks waiting in a collective yield the core instead of spinning: this box
# has 2 cores and the tests run up to 5 ranks, often beside other jobs
export OMPI_MCA_mpi_yield_when_idle=1

# ~12 KB of small-vocabulary text: each group's token stream spans many steps,
# so the recurrent state carries across steps (and across a resume)
gen_words d.txt 2400

# tiny model: each run is well under a second
M=(--data d.txt --hidden 32 --layers 1 --seq 16 --threads 1 --val-every 0 --val-windows 4 --val-len 32
   --print-every 1000)
MPI=(mpirun --oversubscribe)

# run NP OUT args...: NP 0 = plain singleton (no mpirun); sets $rc
run() {
    local np=$1 out=$2; shift 2
    if [ "$np" = 0 ]; then timeout -k 5 60 "$bin" "$@" >"$out" 2>&1
    else timeout -k 5 60 "${MPI[@]}" -np "$np" "$bin" "$@" >"$out" 2>&1; fi
    rc=$?
}
csum() { grep -o 'egg: done .*' "$1" | sed -n 's/.*checksum=\([0-9a-f]\{16\}\).*/\1/p' | head -n 1; }
ndone() { grep -o 'egg: done' "$1" | wc -l; }
steps_of() { grep -o 'egg: done .*' "$1" | sed -n 's/.*steps=\([0-9]*\).*/\1/p' | head -n 1; }
last_err() { grep -o 'egg: error:.*' "$1" | head -n 1; }

# all descendants of a PID
descendants() { local k; for k in $(pgrep -P "$1"); do echo "$k"; descendants "$k"; done; }
# PID of MPI rank R among mpirun PID's descendants (from the rank's environment)
rank_pid() {
    local p
    for p in $(descendants "$1"); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = egg_mgpu ] || continue
        if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2"; then echo "$p"; return 0; fi
    done
    return 1
}
# wait until DIR holds a checkpoint or SECS pass (older ones are pruned, so
# do not wait for a particular step)
wait_ckpt() { local i=0; while [ -z "$(latest_step "$1")" ] && [ $i -lt $(($2 * 10)) ]; do sleep 0.1; i=$((i + 1)); done; [ -n "$(latest_step "$1")" ]; }
# wait for background PID up to SECS; sets rc (124 on timeout) and took (seconds)
wait_job() {
    local p=$1 lim=$2 t0 i=0
    t0=$(date +%s.%N)
    while kill -0 "$p" 2>/dev/null && [ $i -lt $((lim * 10)) ]; do sleep 0.1; i=$((i + 1)); done
    if kill -0 "$p" 2>/dev/null; then rc=124; else wait "$p"; rc=$?; fi
    took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
}
# a live process (a zombie awaiting its reaper counts as gone)
alive() { local st; st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null); [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]; }
latest_step() { ls "$1" 2>/dev/null | sed -n 's/^ckpt_0*\([0-9][0-9]*\)\.egg$/\1/p' | sort -n | tail -n 1; }

# ------------------------------------------------------- world-size invariance
S=(--pop 22 --steps 6)   # 11 pairs: uneven on 2, 3 and 4 ranks
run 0 ref.out "${M[@]}" "${S[@]}"
ref=$(csum ref.out) ref_rc=$rc
run 0 seed2.out "${M[@]}" "${S[@]}" --seed 2
if [ -z "$ref" ]; then fail mpi_checksum_depends_on_seed "singleton reference run failed (exit $ref_rc): $(tail -n 2 ref.out | tr '\n' ' ')"
elif [ "$(csum seed2.out)" = "$ref" ] || [ -z "$(csum seed2.out)" ]; then fail mpi_checksum_depends_on_seed "seed 1 and 2 give '$ref' and '$(csum seed2.out)'"
else pass mpi_checksum_depends_on_seed; fi

# check_inv NAME NP REF OUT: one final line, N ranks in the banner, same checksum
check_inv() {
    local name=$1 np=$2 want=$3 out=$4 got
    got=$(csum "$out")
    if [ "$rc" != 0 ]; then fail "$name" "exit $rc: $(last_err "$out")"
    elif [ "$(ndone "$out")" != 1 ]; then fail "$name" "$(ndone "$out") 'egg: done' lines, want 1"
    elif ! grep -q "egg: rank $((np - 1))/$np " "$out"; then fail "$name" "banner does not list rank $((np - 1))/$np (not one $np-rank job?)"
    elif [ -z "$want" ] || [ "$got" != "$want" ]; then fail "$name" "checksum $got, singleton run gave $want"
    else pass "$name"; fi
}
for np in 1 2 3 4; do
    extra=()
    [ "$np" = 4 ] && extra=(--check-every 1)   # the replica check must not fire on a healthy run
    run "$np" "inv$np.out" "${M[@]}" "${S[@]}" "${extra[@]}"
    check_inv "mpi_invariance_np$np" "$np" "$ref" "inv$np.out"
done

# 3 pairs on 4 ranks: one rank evaluates nothing yet must stay a replica
run 0 idle0.out "${M[@]}" --pop 6 --steps 5
run 4 idle4.out "${M[@]}" --pop 6 --steps 5 --check-every 1
check_inv mpi_invariance_idle_rank 4 "$(csum idle0.out)" idle4.out

# groups of 4 members read one stream; 12 pairs on 5 ranks split groups across ranks
run 0 grp0.out "${M[@]}" --pop 24 --group 4 --steps 5
run 5 grp5.out "${M[@]}" --pop 24 --group 4 --steps 5
check_inv mpi_invariance_group_straddle 5 "$(csum grp0.out)" grp5.out

run 0 norm0.out "${M[@]}" "${S[@]}" --fitness norm
run 3 norm3.out "${M[@]}" "${S[@]}" --fitness norm
if [ "$(csum norm0.out)" = "$ref" ]; then fail mpi_invariance_norm "norm and sign fitness give the same checksum: --fitness ignored?"
else check_inv mpi_invariance_norm 3 "$(csum norm0.out)" norm3.out; fi

# --shard-weights 3,1: 11 pairs * 3/4 = 8.25 -> rank 0 takes pairs 0..7, rank 1 8..10
run 2 sw.out "${M[@]}" "${S[@]}" --shard-weights 3,1
if ! grep -q "egg: rank 0/2 .*pairs 0\.\.7\$" sw.out || ! grep -q "egg: rank 1/2 .*pairs 8\.\.10\$" sw.out; then
    fail mpi_shard_weights "banner does not show pairs 0..7 / 8..10: $(grep 'egg: rank' sw.out | tr '\n' ' ')"
else check_inv mpi_shard_weights 2 "$ref" sw.out; fi

# --update allreduce: a rank votes with its own pairs only and the int32 vote sums are all-reduced before the
# threshold; the model must equal the singleton's replicated update bit for bit (a rank that skipped the sum
# would apply only its own votes and diverge: the replica check every step ends that job)
for np in 1 2 3 4; do
    run "$np" "ar$np.out" "${M[@]}" "${S[@]}" --update allreduce --check-every 1
    if [ "$np" -gt 1 ] && ! grep -q "^egg: update: allreduce" "ar$np.out"; then
        fail "mpi_update_allreduce_np$np" "banner does not say 'egg: update: allreduce': $(last_err "ar$np.out")"
    else check_inv "mpi_update_allreduce_np$np" "$np" "$ref" "ar$np.out"; fi
done
run 4 aridle.out "${M[@]}" --pop 6 --steps 5 --check-every 1 --update allreduce
check_inv mpi_update_allreduce_idle_rank 4 "$(csum idle0.out)" aridle.out
run 3 arnorm.out "${M[@]}" "${S[@]}" --fitness norm --update allreduce --check-every 1
check_inv mpi_update_allreduce_norm 3 "$(csum norm0.out)" arnorm.out
# the default --update auto all-reduces only where the ranks have NCCL (a GPU each): CPU ranks stay replicated
if grep -q "^egg: update: replicated (auto: no NCCL between the ranks)" inv2.out && grep -q " update=auto" inv2.out; then
    pass mpi_update_auto_cpu
else fail mpi_update_auto_cpu "2 CPU ranks with the default --update: $(grep -a 'egg: update' inv2.out || echo 'no egg: update line')"; fi

# ------------------------------------------------------- output and errors
if [ "$(ndone inv3.out)" = 1 ] && [ "$(grep -c '^egg_mgpu .*EGG-' inv3.out)" = 1 ] && [ "$(grep -c '^egg: config ' inv3.out)" = 1 ]; then
    pass mpi_rank0_prints_once
else
    fail mpi_rank0_prints_once "3 ranks printed $(ndone inv3.out) final, $(grep -c '^egg_mgpu .*EGG-' inv3.out) banner, $(grep -c '^egg: config ' inv3.out) config lines"
fi

run 3 bad.out "${M[@]}" "${S[@]}" --data missing_file.txt
nerr=$(grep -c 'egg: error:' bad.out)
if [ "$rc" != 2 ]; then fail mpi_bad_input_one_error "mpirun exit $rc, want 2"
elif [ "$nerr" != 1 ]; then fail mpi_bad_input_one_error "$nerr 'egg: error:' lines from 3 ranks, want 1"
elif ! grep -q 'egg: error:.*missing_file\.txt' bad.out; then fail mpi_bad_input_one_error "message does not name the file: $(last_err bad.out)"
else pass mpi_bad_input_one_error; fi

# only rank 2 is given a missing file (an MPMD line: different arguments per
# rank); the ranks agree on the error: one line, naming rank 2
timeout -k 5 60 "${MPI[@]}" -np 2 "$bin" "${M[@]}" "${S[@]}" : -np 1 "$bin" "${M[@]}" "${S[@]}" --data missing_file.txt >bad1.out 2>&1
rc=$?
nerr=$(grep -c 'egg: error:' bad1.out)
if [ "$rc" != 2 ] || [ "$nerr" != 1 ] || ! grep -q 'egg: error: rank 2: .*missing_file\.txt' bad1.out; then
    fail mpi_bad_input_one_rank "exit $rc, $nerr error lines: $(last_err bad1.out)"
else pass mpi_bad_input_one_rank; fi

run 2 badw.out "${M[@]}" "${S[@]}" --shard-weights 1,1,1
nerr=$(grep -c 'egg: error:' badw.out)
if [ "$rc" != 2 ] || [ "$nerr" != 1 ] || ! grep -q 'egg: error:.*shard-weights' badw.out; then
    fail mpi_bad_shard_weights "exit $rc, $nerr error lines: $(last_err badw.out)"
else pass mpi_bad_shard_weights; fi

# ranks given different settings (here --steps; in life a per-node --config
# file or another data file at the same path) must be refused at start with one
# error, not run into mismatched collectives and hang
timeout -k 10 15 "${MPI[@]}" -np 1 "$bin" "${M[@]}" "${S[@]}" : -np 2 "$bin" "${M[@]}" "${S[@]}" --steps 7 >mism.out 2>&1
rc=$?
nerr=$(grep -c 'egg: error:' mism.out)
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then fail mpi_config_mismatch "ranks with --steps 6 and 7 hung (killed after 15 s) instead of refusing to start"
elif [ "$rc" != 2 ] || [ "$nerr" != 1 ] || ! grep -q 'egg: error: rank 1: .*steps' mism.out; then
    fail mpi_config_mismatch "exit $rc, $nerr error lines: $(last_err mism.out)"
else pass mpi_config_mismatch; fi

# ------------------------------------------------------- replica divergence
# planted in the update of step index 2 on the last rank, i.e. the model after
# step 3 differs; --check-every 1 must catch it right there
run 2 div.out "${M[@]}" "${S[@]}" --test-diverge-step 2 --check-every 1
msg=$(grep -o 'egg: error:.*divergence.*' div.out | head -n 1)
if [ "$rc" = 0 ]; then fail mpi_divergence_caught "exit 0 despite the planted divergence"
elif [ -z "$msg" ]; then fail mpi_divergence_caught "no divergence message (exit $rc): $(last_err div.out)"
elif ! echo "$msg" | grep -q 'step 3\b'; then fail mpi_divergence_caught "message does not name step 3: $msg"
elif ! echo "$msg" | grep -q 'rank 0' || ! echo "$msg" | grep -q 'rank 1'; then fail mpi_divergence_caught "message does not name ranks 0 and 1: $msg"
elif [ "$(ndone div.out)" != 0 ]; then fail mpi_divergence_caught "a diverged job still printed 'egg: done'"
else pass mpi_divergence_caught; fi

# ------------------------------------------------------- kill -9 of a rank
L=("${M[@]}" --pop 22 --steps 100000000 --time-limit 40)
"${MPI[@]}" -np 3 "$bin" "${L[@]}" --checkpoint-dir ck_kill --checkpoint-every 10 >kill.out 2>&1 &
mp=$!; LIB_BG="$LIB_BG $mp"
if ! wait_ckpt ck_kill 40; then
    fail mpi_kill9_ends_job "no checkpoint after 40 s: $(tail -n 3 kill.out | tr '\n' ' ')"
    fail mpi_kill9_checkpoint_loads "no checkpoint was written"
else
    victim=$(rank_pid "$mp" 1)
    if [ -z "$victim" ]; then
        fail mpi_kill9_ends_job "cannot find rank 1's process under mpirun $mp"
    else
        ranks=$(for r in 0 1 2; do rank_pid "$mp" $r; done)
        kill -9 "$victim"
        wait_job "$mp" 30
        sleep 0.5   # a rank killed by mpirun may still be exiting
        left=$(for p in $ranks; do alive "$p" && echo "$p"; done | tr '\n' ' ')
        if [ "$rc" = 124 ]; then fail mpi_kill9_ends_job "job still running 30 s after kill -9 of rank 1"
        elif [ "$rc" = 0 ]; then fail mpi_kill9_ends_job "mpirun exit 0 after a rank was killed"
        elif ! grep -q 'rank 1' kill.out; then fail mpi_kill9_ends_job "no message naming rank 1 (exit $rc)"
        elif [ -n "$left" ]; then fail mpi_kill9_ends_job "processes left behind: $left"
        else pass mpi_kill9_ends_job; fi
    fi
    ks=$(latest_step ck_kill)
    if [ -z "$ks" ]; then fail mpi_kill9_checkpoint_loads "checkpoint directory empty"
    else
        run 0 kres.out "${L[@]}" --checkpoint-dir ck_kill --resume latest --steps "$ks"
        run 0 kstraight.out "${M[@]}" --pop 22 --steps "$ks"
        if [ "$rc" != 0 ] || [ -z "$(csum kstraight.out)" ]; then fail mpi_kill9_checkpoint_loads "straight $ks-step run failed"
        elif ! grep -q "egg: done steps=$ks " kres.out; then fail mpi_kill9_checkpoint_loads "resume of step $ks failed: $(last_err kres.out)"
        elif [ "$(csum kres.out)" != "$(csum kstraight.out)" ]; then fail mpi_kill9_checkpoint_loads "checkpoint of step $ks has checksum $(csum kres.out), straight run $(csum kstraight.out)"
        else pass mpi_kill9_checkpoint_loads; fi
    fi
fi

# ------------------------------------------------------- a rank that stops answering
# SIGSTOP of rank 1 (as a hung GPU or a frozen node would): rank 0 waits in a collective that never returns
# until its --hang-timeout (3 s) watchdog exits it with one line, and mpirun then ends the job
"${MPI[@]}" -np 2 "$bin" "${L[@]}" --checkpoint-dir ck_hang --checkpoint-every 10 --hang-timeout 3 >hang.out 2>&1 &
mp=$!; LIB_BG="$LIB_BG $mp"
if ! wait_ckpt ck_hang 40; then fail mpi_hang_timeout "no checkpoint after 40 s: $(tail -n 3 hang.out | tr '\n' ' ')"
else
    victim=$(rank_pid "$mp" 1)
    ranks=$(for r in 0 1; do rank_pid "$mp" $r; done)
    kill -STOP "$victim"
    wait_job "$mp" 30
    i=0; while [ $i -lt 100 ] && [ -n "$(for p in $ranks; do alive "$p" && echo "$p"; done)" ]; do sleep 0.1; i=$((i + 1)); done
    left=$(for p in $ranks; do alive "$p" && echo "$p"; done | tr '\n' ' ')
    msg=$(grep -o 'egg: error: rank 0: no progress for [0-9]* s after step [0-9]* (--hang-timeout 3).*' hang.out | head -n 1)
    if [ "$rc" = 124 ]; then fail mpi_hang_timeout "job still running 30 s after rank 1 was stopped"; kill -CONT "$victim" 2>/dev/null
    elif [ "$rc" = 0 ]; then fail mpi_hang_timeout "mpirun exit 0 with a stopped rank"
    elif [ -z "$msg" ]; then fail mpi_hang_timeout "no 'rank 0: no progress' line (exit $rc, after $took s): $(last_err hang.out)"
    elif awk -v t="$took" 'BEGIN { exit !(t > 20) }'; then fail mpi_hang_timeout "took $took s for a 3 s timeout"
    elif [ -n "$left" ]; then fail mpi_hang_timeout "processes left 10 s after mpirun: $left"; kill -9 $left 2>/dev/null
    else pass mpi_hang_timeout; fi
fi

# the limit after the first step is at least 10x the longest step so far: with every step 0.3 s (hidden test
# flags), a 1.8 s step 4 passes a 1 s --hang-timeout; with fast steps the same 1.5 s sleep is cut at 1 s
run 2 hadapt.out "${M[@]}" --pop 22 --steps 6 --hang-timeout 1 --test-step-ms 300 --test-sleep-step 4 --test-sleep-ms 1500
if [ "$rc" = 0 ] && [ "$(ndone hadapt.out)" = 1 ] && ! grep -q 'no progress' hadapt.out; then pass mpi_hang_timeout_adapts
else fail mpi_hang_timeout_adapts "exit $rc: $(last_err hadapt.out)"; fi
run 2 hcut.out "${M[@]}" --pop 22 --steps 6 --hang-timeout 1 --test-sleep-step 4 --test-sleep-ms 5000
if [ "$rc" != 0 ] && grep -q 'egg: error: rank [01]: no progress for [0-9]* s after step 4 (--hang-timeout 1)' hcut.out &&
   [ "$(ndone hcut.out)" = 0 ]; then pass mpi_hang_timeout_slow_step_cut
else fail mpi_hang_timeout_slow_step_cut "exit $rc: $(last_err hcut.out)"; fi
# one CPU process has no peer to wait for and no device: no watchdog, the same slow step completes
run 0 hone.out "${M[@]}" --pop 22 --steps 6 --hang-timeout 1 --test-sleep-step 4 --test-sleep-ms 1500
if [ "$rc" = 0 ] && [ "$(ndone hone.out)" = 1 ]; then pass hang_timeout_off_for_one_cpu_process
else fail hang_timeout_off_for_one_cpu_process "exit $rc: $(last_err hone.out)"; fi

# ------------------------------------------------------- elastic resume
run 0 el_ref.out "${M[@]}" --pop 22 --steps 10
run 2 el_a.out "${M[@]}" --pop 22 --steps 5 --checkpoint-dir ck_el
ok_a=$rc
run 3 el_b.out "${M[@]}" --pop 22 --steps 10 --checkpoint-dir ck_el --resume latest
if [ "$ok_a" != 0 ] || [ ! -e ck_el/ckpt_0000000005.egg ]; then fail mpi_elastic_resume_2to3 "2-rank run did not leave ckpt_0000000005.egg"
elif ! grep -q 'resumed from .*at step 5' el_b.out; then fail mpi_elastic_resume_2to3 "3-rank run did not resume at step 5: $(last_err el_b.out)"
else check_inv mpi_elastic_resume_2to3 3 "$(csum el_ref.out)" el_b.out; fi

# ------------------------------------------------------- graceful stops
# stop_case NAME NP SIGNAL TARGET(rank|mpirun) DIR WANTRC(0|any)
stop_case() {
    local name=$1 np=$2 sig=$3 target=$4 dir=$5 wantrc=$6 p s
    stop_case_run "$@"
    # with one rank signalled, rank 0 must still name that signal as the reason
    if [ "$target" = rank ]; then
        s=$(grep -o 'egg: stopping after step [0-9]* ([^)]*)' "$name.out" | head -n 1)
        if [ -z "$s" ]; then fail mpi_stop_reason_agreed "no 'egg: stopping' line"
        elif [ "${s##* }" = "(SIG$sig)" ]; then pass mpi_stop_reason_agreed
        else fail mpi_stop_reason_agreed "rank $((np - 1)) got SIG$sig but rank 0 says: $s"; fi
    fi
}
stop_case_run() {
    local name=$1 np=$2 sig=$3 target=$4 dir=$5 wantrc=$6 p s
    if [ "$target" = mpirun ] && [ "$sig" = TERM ]; then
        # each rank writes its own output to $name.out.RANK (exec: the shell becomes the rank): mpirun, tearing the
        # job down after its SIGTERM, can drop the ranks' last lines on their way through it (a CI run lost the
        # final line of a clean stop that way)
        "${MPI[@]}" -np "$np" sh -c 'exec "$0" "$@" >"$EGG_STOP_OUT.$OMPI_COMM_WORLD_RANK" 2>&1' "$bin" "${L[@]}" \
            --checkpoint-dir "$dir" --checkpoint-every 10 >"$name.mpirun" 2>&1 &
    else
        "${MPI[@]}" -np "$np" "$bin" "${L[@]}" --checkpoint-dir "$dir" --checkpoint-every 10 >"$name.out" 2>&1 &
    fi
    mp=$!; LIB_BG="$LIB_BG $mp"
    if ! wait_ckpt "$dir" 40; then fail "$name" "no checkpoint after 40 s"; kill -9 "$mp"; return; fi
    if [ "$target" = mpirun ]; then p=$mp; else p=$(rank_pid "$mp" $((np - 1))); fi
    [ -n "$p" ] || { fail "$name" "cannot find the process to signal"; kill -9 "$mp"; return; }
    kill -"$sig" "$p"
    wait_job "$mp" 30
    [ -e "$name.out.0" ] && cat "$name.out".[0-9]* "$name.mpirun" >"$name.out"
    # the stop itself may be agreed under any reason; whether rank 0 names the
    # signal another rank got is checked apart (mpi_stop_reason_agreed)
    if [ "$target" = rank ]; then why='[^)]*'; else why="SIG$sig"; fi
    s=$(grep -o "egg: stopping after step [0-9]* ($why)" "$name.out" | grep -o 'step [0-9][0-9]*' | grep -o '[0-9][0-9]*' | head -n 1)
    if [ "$rc" = 124 ]; then fail "$name" "still running 30 s after SIG$sig"
    elif [ "$wantrc" = 0 ] && [ "$rc" != 0 ]; then fail "$name" "exit $rc, want 0: $(last_err "$name.out")"
    elif [ -z "$s" ]; then fail "$name" "no 'stopping after step N ($why)' line (exit $rc)"
    elif [ "$(steps_of "$name.out")" != "$s" ] || [ "$(ndone "$name.out")" != 1 ]; then fail "$name" "no single final line for step $s"
    elif [ ! -e "$dir/ckpt_$(printf %010d "$s").egg" ]; then fail "$name" "no checkpoint for step $s"
    else
        # the stopped model is exactly the straight run of s steps
        run 0 "$name.ref" "${M[@]}" --pop 22 --steps "$s"
        if [ "$(csum "$name.out")" != "$(csum "$name.ref")" ]; then fail "$name" "checksum $(csum "$name.out") at step $s, straight run $(csum "$name.ref")"
        else pass "$name"; fi
    fi
}
# one rank signalled (as a scheduler or an OOM-killer's TERM might): all agree to stop
stop_case mpi_sigterm_one_rank 2 TERM rank ck_t1 0
# mpirun forwards SIGUSR1 (and SIGUSR2) at once: the graceful stop under mpirun
stop_case mpi_sigusr1_mpirun 2 USR1 mpirun ck_u1 0
# SIGTERM to mpirun: Open MPI sends the ranks SIGTERM only after
# odls_base_sigkill_timeout (1 s), SIGKILL after as long again, and exits 1
# itself even when every rank stopped cleanly; so here we assert the clean stop
# (final line, checkpoint, exact model) and not mpirun's exit status.
EGG_STOP_OUT=$W/mpi_sigterm_mpirun.out stop_case mpi_sigterm_mpirun 2 TERM mpirun ck_t2 any

# ------------------------------------------------------- launch/ scripts
fake=$W/fakebin; mkdir -p "$fake/cuda" "$fake/rocm" "$fake/none"
printf '#!/bin/sh\nfor i in 0 1 2 3; do echo "GPU $i: NVIDIA H100 80GB HBM3 (UUID: GPU-0000000$i)"; done\n' >"$fake/cuda/nvidia-smi"
printf '#!/bin/sh\necho "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver."; exit 9\n' >"$fake/rocm/nvidia-smi"
printf '#!/bin/sh\necho "============ ROCm System Management Interface ============"\nfor i in 0 1 2 3 4 5 6 7; do echo "GPU[$i]\t\t: Device ID: 0x74a1"; done\n' >"$fake/rocm/rocm-smi"
cp "$fake/rocm/nvidia-smi" "$fake/none/nvidia-smi"; printf '#!/bin/sh\nexit 1\n' >"$fake/none/rocm-smi"
chmod +x "$fake"/*/*
if [ "$(id -u)" = 0 ]; then asroot=" --allow-run-as-root "; else asroot=" "; fi
egg_abs="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"

# has NAME OUT WORD...: every word (a literal substring) is in the command line
has() {
    local name=$1 out=$2 cmdline w; shift 2
    cmdline=$(grep -v '^#' "$out" | tail -n 1)
    for w in "$@"; do
        case "$cmdline" in *"$w"*) ;; *) fail "$name" "'$w' not in: $cmdline"; return 1 ;; esac
    done
    pass "$name"
}
dry_local() { env -u CUDA_VISIBLE_DEVICES -u HIP_VISIBLE_DEVICES -u ROCR_VISIBLE_DEVICES -u NCCL_DEBUG -u OMP_NUM_THREADS \
    PATH="$1:$PATH" EGG_BIN="$bin" "${@:2}" bash "$root/launch/egg_local.sh" --dry-run --data d.txt --steps 7 --prompt 'a b'; }

dry_local "$fake/cuda" >ld1.out 2>&1
has launch_local_dry_cuda ld1.out "env NCCL_NVLS_ENABLE=0 NCCL_DEBUG=WARN " " mpirun${asroot}-np 4 " "--bind-to none" \
    "-x NCCL_NVLS_ENABLE" "-x NCCL_DEBUG" " $egg_abs --data d.txt --steps 7 --prompt a\\ b"
dry_local "$fake/cuda" CUDA_VISIBLE_DEVICES=2,3 NCCL_DEBUG=INFO >ld2.out 2>&1
has launch_local_dry_visible ld2.out " -np 2 " "NCCL_DEBUG=INFO" "-x CUDA_VISIBLE_DEVICES"
# CUDA_VISIBLE_DEVICES= (empty): no GPU for the job; it must reach the ranks as is
dry_local "$fake/cuda" CUDA_VISIBLE_DEVICES= >ld2b.out 2>&1
if grep -q '^# egg_local: .*no GPU' ld2b.out; then has launch_local_dry_hidden ld2b.out " CUDA_VISIBLE_DEVICES= " "-x CUDA_VISIBLE_DEVICES" "--bind-to core"
else fail launch_local_dry_hidden "CUDA_VISIBLE_DEVICES= still counted GPUs: $(head -n 1 ld2b.out)"; fi
dry_local "$fake/rocm" >ld3.out 2>&1
has launch_local_dry_rocm ld3.out " -np 8 " "--bind-to none" "NCCL_NVLS_ENABLE=0"
dry_local "$fake/none" >ld4.out 2>&1
# no GPU: one rank per core, each bound to its own block of cores; -n overrides
ncore=$(lscpu -p=core,socket 2>/dev/null | grep -v '^#' | sort -u | wc -l)
if grep -q "^# egg_local: $ncore rank(s), no GPU" ld4.out; then
    env PATH="$fake/none:$PATH" EGG_BIN="$bin" bash "$root/launch/egg_local.sh" -n 1 --dry-run -- --data d.txt >ld5.out 2>&1
    has launch_local_dry_cpu ld5.out " -np 1 " "--map-by slot:PE=$ncore" "--bind-to core" "OMP_NUM_THREADS=$ncore" " $egg_abs --data d.txt"
else
    fail launch_local_dry_cpu "want $ncore ranks (one per core) with no GPU: $(head -n 1 ld4.out)"
fi

printf '# two 4-GPU nodes\nnode01 slots=4\n\nnode02   slots=4   # spare\n' >hosts4
EGG_BIN="$bin" bash "$root/launch/egg_hosts.sh" --hostfile hosts4 --dry-run --data d.txt >lh1.out 2>&1
has launch_hosts_dry lh1.out " mpirun${asroot}-np 8 --hostfile hosts4 --map-by ppr:4:node --bind-to none" \
    "-x NCCL_NVLS_ENABLE" " $egg_abs --data d.txt"
printf 'node01 slots=4\nnode02 slots=2\n' >hosts42
EGG_BIN="$bin" bash "$root/launch/egg_hosts.sh" --hostfile hosts42 --dry-run --data d.txt >lh2.out 2>&1
has launch_hosts_dry_unequal lh2.out " -np 6 --hostfile hosts42 --map-by slot "
printf 'node01 slots=4\nnode02\n' >hostsbad
EGG_BIN="$bin" bash "$root/launch/egg_hosts.sh" --hostfile hostsbad --dry-run --data d.txt >lh3.out 2>&1
rc=$?
if [ "$rc" = 2 ] && grep -q 'hostsbad:2: node02: needs slots=N' lh3.out; then pass launch_hosts_bad_hostfile
else fail launch_hosts_bad_hostfile "exit $rc: $(head -n 1 lh3.out)"; fi

# real runs: the launchers start a 2-rank job that matches the singleton
EGG_BIN="$bin" timeout -k 5 60 bash "$root/launch/egg_local.sh" -n 2 "${M[@]}" "${S[@]}" >lr.out 2>&1
rc=$?
check_inv launch_local_real_cpu 2 "$ref" lr.out
printf 'localhost slots=2\n' >hostsl
EGG_BIN="$bin" timeout -k 5 60 bash "$root/launch/egg_hosts.sh" --hostfile hostsl "${M[@]}" "${S[@]}" >lhr.out 2>&1
rc=$?
check_inv launch_hosts_real_localhost 2 "$ref" lhr.out

echo "# t_mpi: $(elapsed "$t_begin") s"
lib_finish

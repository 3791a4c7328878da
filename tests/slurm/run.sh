#!/usr/bin/env bash
# shellcheck disable=SC2317  # functions called from traps
# tests/slurm/run.sh — `make test-slurm`: a real single-node Slurm (Debian's slurmctld,
# slurmd, munge) in a temporary folder; runs the project's own sbatch scripts with the
# CPU backend and 2 MPI ranks, preempts them, and checks checkpoint, requeue, resume
# and a bit-identical final model; then stops every daemon it started.
#
# Needs root to install the packages when they are missing (apt-get) and to run the
# daemons; otherwise it prints SKIP lines. Prints one PASS/FAIL/SKIP line per check
# and ends with "N passed, N failed"; exits 1 when a check failed.
#   EGG_SLURM_KEEP=1   keep the temporary folder (logs, job output) for debugging
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
T_START=$(date +%s)
NPASS=0 NFAIL=0
pass() { echo "PASS $1"; NPASS=$((NPASS + 1)); }
fail() { echo "FAIL $1: $2"; NFAIL=$((NFAIL + 1)); }
skip() { echo "SKIP $1: $2"; }
fail_list() { local n=$1 IFS=';'; shift; fail "$n" "$*"; }
info() { echo "# $*"; }
since() { echo $(($(date +%s) - $1)); }
ALL_CHECKS="slurm_cluster slurm_uninterrupted slurm_preempt_srun slurm_preempt_mpirun slurm_resume_by_hand slurm_matches_direct slurm_time_limit_requeue slurm_hang_requeue"
skip_all() { for c in $ALL_CHECKS; do skip "$c" "$1"; done; echo "$NPASS passed, $NFAIL failed"; exit 0; }

# ------------------------------------------------------------ preconditions
[ -x "$ROOT/egg_mgpu" ] || { fail slurm_build "egg_mgpu is not built (run make)"; echo "$NPASS passed, $NFAIL failed"; exit 1; }
if ! ldd "$ROOT/egg_mgpu" 2>/dev/null | grep -q libmpi; then skip_all "egg_mgpu was built without MPI (no mpicc)"; fi

need=()
command -v slurmctld > /dev/null || need+=(slurmctld)
command -v slurmd > /dev/null || need+=(slurmd)
command -v sbatch > /dev/null || need+=(slurm-client)
command -v munged > /dev/null || need+=(munge)
command -v mpirun > /dev/null || need+=(openmpi-bin)
compgen -G "/usr/lib/*/pmix2/lib/libpmix.so" > /dev/null || need+=(libpmix-dev)   # srun --mpi=pmix loads it
if [ "$(id -u)" != 0 ]; then
    skip_all "needs root (to install slurm/munge and run slurmd); run as root or in CI"
fi
if [ ${#need[@]} -gt 0 ]; then
    command -v apt-get > /dev/null || skip_all "missing ${need[*]} and no apt-get"
    info "installing ${need[*]} (apt-get)"
    made_policy=
    if [ ! -e /usr/sbin/policy-rc.d ]; then     # never let the packages start their services
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && made_policy=1
    fi
    ilog=$(mktemp)
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends "${need[@]}" > "$ilog" 2>&1 ||
        { apt-get update -q >> "$ilog" 2>&1 && apt-get install -y -q --no-install-recommends "${need[@]}" >> "$ilog" 2>&1; }
    irc=$?
    [ -n "$made_policy" ] && rm -f /usr/sbin/policy-rc.d
    if [ $irc != 0 ]; then
        tail -n 5 "$ilog" | sed 's/^/# /'
        rm -f "$ilog"
        fail slurm_install "apt-get install ${need[*]} failed"
        echo "$NPASS passed, $NFAIL failed"
        exit 1
    fi
    rm -f "$ilog"
    info "installed in $(since "$T_START") s"
fi

# ------------------------------------------------------------ cluster
T=$(mktemp -d /tmp/egg-slurm.XXXXXX) || exit 1
chmod 755 "$T"                      # munged insists on 755 parents of its socket
mkdir -p "$T/munge" "$T/state" "$T/spool" "$T/log" "$T/out" "$T/runs"
chmod 755 "$T/munge"
export SLURM_CONF=$T/slurm.conf
MARK="EGG_SLURM_TEST=$T"            # in the environment of everything the cluster runs
DAEMONS=() BG=()
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_mpi_yield_when_idle=1   # 2 busy-polling ranks on 2 cores: yield

marked_pids() {                      # processes carrying this run's marker (not us)
    local p
    for p in /proc/[0-9]*; do
        p=${p#/proc/}
        [ "$p" = $$ ] && continue
        tr '\0' '\n' 2> /dev/null < "/proc/$p/environ" | grep -qxF "$MARK" && echo "$p"
    done
}
stop_pids() {                        # TERM, wait up to $1 s, then KILL
    local t=$1 p left
    shift
    [ $# -eq 0 ] && return
    kill -TERM "$@" 2> /dev/null
    for ((i = 0; i < t * 10; i++)); do
        left=
        for p in "$@"; do kill -0 "$p" 2> /dev/null && left=1; done
        [ -z "$left" ] && break
        sleep 0.1
    done
    kill -KILL "$@" 2> /dev/null
    for p in "$@"; do wait "$p" 2> /dev/null; done
}
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    [ ${#BG[@]} -gt 0 ] && stop_pids 2 "${BG[@]}"
    if [ -n "$CTLD" ] && kill -0 "$CTLD" 2> /dev/null; then
        local ids
        ids=$(timeout 10 squeue -h -o %i 2> /dev/null)
        if [ -n "$ids" ]; then
            # shellcheck disable=SC2086
            timeout 10 scancel $ids 2> /dev/null
            for ((i = 0; i < 30; i++)); do [ -z "$(timeout 5 squeue -h -o %i 2> /dev/null)" ] && break; sleep 0.5; done
        fi
    fi
    # slurmd, slurmctld, munged: by the PIDs recorded at start (reverse order)
    local rev=() k
    for ((k = ${#DAEMONS[@]} - 1; k >= 0; k--)); do rev+=("${DAEMONS[k]}"); done
    [ ${#rev[@]} -gt 0 ] && stop_pids 10 "${rev[@]}"
    # job steps left behind (slurmstepd and tasks detach from slurmd): by our marker
    local left
    left=$(marked_pids)
    # shellcheck disable=SC2086
    [ -n "$left" ] && { info "stopping leftover job processes: $left"; stop_pids 3 $left; }
    if [ "${EGG_SLURM_KEEP:-0}" = 1 ]; then info "kept $T"; else rm -rf "$T"; fi
    info "wall time $(since "$T_START") s"
    echo "$NPASS passed, $NFAIL failed"
    [ "$NFAIL" -gt 0 ] && exit 1
    exit "$rc"
}
on_signal() { fail slurm_test "interrupted by SIG$1"; exit "$2"; }
CTLD='' SLURMD=''
trap cleanup EXIT
trap 'on_signal INT 130' INT
trap 'on_signal TERM 143' TERM

# ports: below the kernel's ephemeral range (a port an outgoing connection holds
# cannot be bound, and connecting to it does not show that)
read -r eph_lo _ < /proc/sys/net/ipv4/ip_local_port_range 2> /dev/null || eph_lo=32768
[ "${eph_lo:-0}" -gt 12000 ] || eph_lo=32768
port_free() { ! (exec 3<> "/dev/tcp/127.0.0.1/$1") 2> /dev/null; }
pick_ports() {
    for ((i = 0; i < 50; i++)); do
        P1=$((10000 + RANDOM % (eph_lo - 10002))) P2=$((P1 + 1))
        port_free $P1 && port_free $P2 && return
    done
}
NODECONF=$(slurmd -C | head -n 1)          # this machine's CPUs and memory
NODE=${NODECONF#NodeName=}; NODE=${NODE%% *}
write_conf() {
    cat > "$SLURM_CONF" << EOF
ClusterName=eggtest
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$P1
SlurmdPort=$P2
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$T/munge/munge.socket,cred_expire=10
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=pmix
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=2
MinJobAge=16
ReturnToService=2
KillWait=10
MailProg=/bin/true
$NODECONF NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
}

# data: deterministic pseudo-text (no download)
awk 'BEGIN { split("the of and to in a is that for it as was with be by on not he this are or his from at which but have an they you were her she there one all we their", w, " ");
             s = 12345; for (i = 0; i < 9000; i++) { s = (s * 1103515245 + 12345) % 2147483648; printf "%s%s", w[int(s / 65536) % 43 + 1], (i % 13 == 12) ? ".\n" : " " } }' > "$T/data.txt"
STEPS=${EGG_SLURM_STEPS:-6000}
EGGARGS=(--data "$T/data.txt" --backend cpu --hidden 64 --layers 1 --seq 32 --pop 16 --seed 5 --steps "$STEPS"
         --print-every 500 --checkpoint-every 500 --val-every 0 --val-windows 4 --val-len 64)

t=$(date +%s)
mungekey -c -k "$T/munge/munge.key" > /dev/null 2>&1
env "$MARK" setsid munged -F --key-file="$T/munge/munge.key" --socket="$T/munge/munge.socket" \
    --pid-file="$T/munge/munged.pid" --seed-file="$T/munge/munged.seed" --log-file="$T/log/munged.log" \
    < /dev/null > "$T/log/munged.out" 2>&1 &
DAEMONS+=($!)
for ((i = 0; i < 100; i++)); do [ -S "$T/munge/munge.socket" ] && break; sleep 0.1; done
state='' why=''
for attempt in 1 2 3; do
    pick_ports
    write_conf
    env "$MARK" setsid slurmctld -D -f "$SLURM_CONF" < /dev/null >> "$T/log/slurmctld.out" 2>&1 &
    CTLD=$!
    DAEMONS+=("$CTLD")
    env "$MARK" setsid slurmd -D -f "$SLURM_CONF" < /dev/null >> "$T/log/slurmd.out" 2>&1 &
    SLURMD=$!
    DAEMONS+=("$SLURMD")
    end=$((SECONDS + 45))
    while [ $SECONDS -lt $end ]; do
        kill -0 "$CTLD" 2> /dev/null || { why="slurmctld exited"; break; }
        kill -0 "$SLURMD" 2> /dev/null || { why="slurmd exited"; break; }
        state=$(timeout 5 sinfo -h -n "$NODE" -o %T 2> /dev/null)
        [ "$state" = idle ] && break
        why="node $NODE not idle after 45 s (state '$state')"
        sleep 0.3
    done
    [ "$state" = idle ] && break
    stop_pids 5 "$SLURMD" "$CTLD"
    grep -q 'Address already in use' "$T"/log/slurm*.out || break     # else: other ports
    info "attempt $attempt: ports $P1/$P2 were taken; trying others"
    : > "$T/log/slurmctld.out"; : > "$T/log/slurmd.out"
done
if [ "$state" != idle ]; then
    for f in "$T"/log/*; do echo "# --- $f"; tail -n 8 "$f" | sed 's/^/# /'; done
    fail slurm_cluster "$why"
    for c in ${ALL_CHECKS#slurm_cluster }; do skip "$c" "no cluster"; done
    exit 1
fi
pass slurm_cluster
info "cluster up in $(since "$t") s: munged ${DAEMONS[0]}, slurmctld $CTLD, slurmd $SLURMD, node $NODE, ports $P1/$P2"

# ------------------------------------------------------------ helpers
SB=(--parsable --chdir="$ROOT" --nodes=1 --ntasks-per-node=2 --cpus-per-task=1 --gpus-per-node=0 --time=10)
# submit NAME SCRIPT ",ENV=V,..." [sbatch options] -- [egg args]: sbatch --wait in the
# background, run folder $RUNDIR or $T/runs/NAME; sets JOB (id) and SBPID
submit() {
    local name=$1 script=$2 envs=$3 rd=${RUNDIR:-$T/runs/$1}
    shift 3
    local opts=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    mkdir -p "$rd"
    timeout 240 sbatch --wait "${SB[@]}" ${opts[@]+"${opts[@]}"} --job-name="$name" --output="$T/out/$name.out" \
        --export="ALL,$MARK,EGG_RUN_DIR=$rd$envs" "$script" "$@" > "$T/out/$name.id" 2> "$T/out/$name.err" &
    SBPID=$!
    BG+=("$SBPID")
    JOB=
    for ((i = 0; i < 100; i++)); do
        JOB=$(grep -m1 -o '^[0-9]*' "$T/out/$name.id" 2> /dev/null)
        [ -n "$JOB" ] && break
        kill -0 "$SBPID" 2> /dev/null || break
        sleep 0.1
    done
}
finish_job() {                      # wait for the background sbatch; sets RC
    wait "$SBPID"
    RC=$?
    local keep=() p
    for p in "${BG[@]}"; do [ "$p" != "$SBPID" ] && keep+=("$p"); done
    BG=(${keep[@]+"${keep[@]}"})
}
# wait_ckpt FILE STEP TIMEOUT: until FILE shows a checkpoint at >= STEP
wait_ckpt() {
    local f=$1 want=$2 t=$3 s
    for ((i = 0; i < t * 10; i++)); do
        s=$(grep -o 'egg: checkpoint .* (step [0-9]*)' "$f" 2> /dev/null | tail -n 1 | grep -o '[0-9]*)$' | tr -d ')')
        [ -n "$s" ] && [ "$s" -ge "$want" ] && return 0
        kill -0 "$SBPID" 2> /dev/null || return 1
        sleep 0.1
    done
    return 1
}
checksum_of() { grep '^egg: done ' "$1" 2> /dev/null | tail -n 1 | sed -n 's/.*checksum=\([0-9a-f]*\).*/\1/p'; }
steps_of() { grep '^egg: done ' "$1" 2> /dev/null | tail -n 1 | sed -n 's/.*steps=\([0-9]*\).*/\1/p'; }
dump() { for f in "$@"; do echo "# --- $f"; tail -n 15 "$f" 2> /dev/null | sed 's/^/#   /'; done; }

# check_resumed NAME: the run stopped at K (0 < K < STEPS) by SIGNAL, checkpointed at
# K, was requeued, resumed from ckpt K and finished at STEPS with checksum $REF
check_resumed() {
    local name=$1 why=$2 P=$3 out=$T/out/$1.out r0=$T/runs/$1/rank0.out k ck errs=()
    k=$(sed -n "s/^egg: stopping after step \([0-9]*\) ($why)$/\1/p" "$r0" | head -n 1)
    if [ -z "$k" ]; then errs+=("no 'egg: stopping after step K ($why)' in rank 0 output")
    else
        [ "$k" -gt 0 ] && [ "$k" -lt "$STEPS" ] || errs+=("stopped at step $k, not inside 1..$((STEPS - 1))")
        ck=$(printf '%s/runs/%s/checkpoints/ckpt_%010d.egg' "$T" "$name" "$k")
        grep -qF "egg: checkpoint $ck (step $k)" "$r0" || errs+=("no checkpoint $ck written at the stop")
        grep -q "^egg: done steps=$k " "$r0" || errs+=("first run did not end with 'egg: done steps=$k'")
        grep -qF "egg: resumed from $ck at step $k" "$r0" || errs+=("rank 0 output has no 'egg: resumed from $ck at step $k'")
    fi
    grep -q "^$P: requeueing job $JOB (restart 0 -> 1)" "$out" || errs+=("batch output has no 'requeueing job $JOB (restart 0 -> 1)'")
    grep -q "DUE TO JOB REQUEUE" "$out" || errs+=("batch output lacks Slurm's 'DUE TO JOB REQUEUE'")
    grep -q "^$P: SLURM_RESTART_COUNT=1 " "$out" || errs+=("the job did not restart with SLURM_RESTART_COUNT=1")
    grep -q "^$P: job $JOB restart 1 on .*: resuming from the latest checkpoint" "$out" || errs+=("restart 1 did not add --resume latest")
    local rs
    rs=$(timeout 10 scontrol show job -o "$JOB" 2> /dev/null | grep -o 'Restarts=[0-9]*')
    [ -z "$rs" ] || [ "$rs" = Restarts=1 ] || errs+=("scontrol shows $rs")
    [ "$RC" = 0 ] || errs+=("sbatch --wait exit status $RC")
    local cs st
    cs=$(checksum_of "$r0") st=$(steps_of "$r0")
    [ "$st" = "$STEPS" ] || errs+=("final 'egg: done' has steps=$st, want $STEPS")
    [ -n "$REF" ] && [ "$cs" = "$REF" ] || errs+=("final checksum '$cs' != uninterrupted '$REF'")
    grep -q "^$P: rank 0: egg: done steps=$STEPS checksum=$REF" "$out" || errs+=("batch output lacks the final 'egg: done steps=$STEPS checksum=$REF'")
    if [ ${#errs[@]} -eq 0 ]; then
        pass "$name"
        info "$name: stopped at step $k by $why, requeued (job $JOB, $rs), resumed, checksum $cs"
        return 0
    fi
    fail_list "$name" "${errs[@]}"
    dump "$out" "$r0"
    return 1
}

# ------------------------------------------------------------ (a) uninterrupted
t=$(date +%s)
submit slurm_uninterrupted slurm/egg.sbatch "" -- "${EGGARGS[@]}"
finish_job
TA=$(since "$t")
r0=$T/runs/slurm_uninterrupted/rank0.out
REF=$(checksum_of "$r0")
if [ "$RC" = 0 ] && [ -n "$REF" ] && [ "$(steps_of "$r0")" = "$STEPS" ] &&
   grep -q "^egg: rank 1/2 on " "$r0" && grep -q "^egg.sbatch: rank 0: egg: done steps=$STEPS checksum=$REF" "$T/out/slurm_uninterrupted.out" &&
   ! grep -q '^egg.sbatch: requeueing' "$T/out/slurm_uninterrupted.out"; then
    pass slurm_uninterrupted
    info "uninterrupted 2-rank job $JOB: $STEPS steps, checksum $REF, ${TA} s from submit to sbatch --wait return"
else
    fail slurm_uninterrupted "sbatch --wait exit $RC, checksum '$REF' (want a 2-rank run ending 'egg: done steps=$STEPS')"
    dump "$T/out/slurm_uninterrupted.out" "$T/out/slurm_uninterrupted.err" "$r0" "$T/runs/slurm_uninterrupted/rank1.out"
fi


# the same model straight, one process, no Slurm (world-size invariance): in the
# background while the preemption jobs run, after (a), whose speed (d) uses
"$ROOT/egg_mgpu" "${EGGARGS[@]}" --threads 1 > "$T/out/direct.out" 2>&1 < /dev/null &
DIRECT=$!
BG+=("$DIRECT")

# ------------------------------------------------------------ (b) preempt srun job with USR1
# preempt NAME SCRIPT: submit, wait for a checkpoint at >= STEPS/4, scancel -s USR1 -b
preempt() {
    local name=$1 script=$2 t
    t=$(date +%s)
    submit "$name" "$script" "" -- "${EGGARGS[@]}"
    if [ -z "$JOB" ]; then finish_job; fail "$name" "sbatch failed: $(head -c 300 "$T/out/$name.err")"; return; fi
    if ! wait_ckpt "$T/runs/$name/rank0.out" $((STEPS / 4)) 120; then
        timeout 10 scancel "$JOB" 2> /dev/null
        finish_job
        fail "$name" "job $JOB never reached a checkpoint at step >= $((STEPS / 4)) (or ended first)"
        dump "$T/out/$name.out" "$T/runs/$name/rank0.out"
        return
    fi
    info "$name: job $JOB running, sending SIGUSR1 to its batch shell after $(since "$t") s"
    timeout 10 scancel -s USR1 -b "$JOB"
    finish_job
    info "$name: $(since "$t") s from submit to sbatch --wait return"
    check_resumed "$name" SIGUSR1 "$(basename "$script")"
}
if [ -n "$REF" ]; then
    preempt slurm_preempt_srun slurm/egg.sbatch
    preempt slurm_preempt_mpirun slurm/egg_mpirun.sbatch
else
    skip slurm_preempt_srun "no uninterrupted checksum to compare with"
    skip slurm_preempt_mpirun "no uninterrupted checksum to compare with"
fi

# ------------------------------------------------------------ (c) resume by hand
# a new job on the finished srun run's folder with EGG_RESUME=1 and the same flags:
# resumes from its last checkpoint (step STEPS) and reports the same model
name=slurm_resume_by_hand
if [ -n "$REF" ] && [ -s "$T/runs/slurm_preempt_srun/rank0.out" ]; then
    r0=$T/runs/slurm_preempt_srun/rank0.out
    off=$(stat -c %s "$r0")
    RUNDIR=$T/runs/slurm_preempt_srun submit $name slurm/egg.sbatch ",EGG_RESUME=1" -- "${EGGARGS[@]}"
    finish_job
    seg=$(tail -c +$((off + 1)) "$r0")
    ck=$(printf '%s/runs/slurm_preempt_srun/checkpoints/ckpt_%010d.egg' "$T" "$STEPS")
    errs=()
    grep -q "^egg.sbatch: job $JOB restart 0 on .*: resuming from the latest checkpoint" "$T/out/$name.out" || errs+=("EGG_RESUME=1 did not add --resume latest")
    grep -qF "egg: resumed from $ck at step $STEPS" <<< "$seg" || errs+=("no 'egg: resumed from $ck at step $STEPS'")
    grep -q "^egg: done steps=$STEPS checksum=$REF " <<< "$seg" || errs+=("no 'egg: done steps=$STEPS checksum=$REF'")
    [ "$RC" = 0 ] || errs+=("sbatch --wait exit status $RC")
    if [ ${#errs[@]} -eq 0 ]; then pass $name; else fail_list $name "${errs[@]}"; dump "$T/out/$name.out" "$r0"; fi
else
    skip $name "no finished preempted run to resume"
fi

wait "$DIRECT"
BG=()
DC=$(checksum_of "$T/out/direct.out")
if [ -n "$DC" ] && [ "$DC" = "$REF" ]; then pass slurm_matches_direct
else fail slurm_matches_direct "Slurm 2-rank checksum '$REF' != direct 1-process checksum '$DC'"; dump "$T/out/direct.out"; fi

# ------------------------------------------------------------ (d) --time-limit from the job's time left
# --time=2 min and EGG_TIME_MARGIN = 120 s - TL: egg gets --time-limit ~TL s (75% of the
# training time of run (a)), stops, checkpoints; the script requeues; each restart again
# gets ~TL s until the run is complete (usually 2 segments).
if [ -n "$REF" ]; then
    t=$(date +%s)
    name=slurm_time_limit_requeue
    tps=$(grep '^egg: done ' "$T/runs/slurm_uninterrupted/rank0.out" | sed -n 's/.*tok_per_s=\([0-9]*\).*/\1/p')
    # aim for ~3 segments: a third of the uninterrupted training time. The derived limit is
    # (remaining - margin) with remaining <= 120 s, so it never exceeds TL (and egg clamps it
    # to >= 1 s); 3/4 of the training time once left a 4 s limit on a 3.5 s run in CI.
    TL=$(( ${tps:-0} > 0 ? STEPS * 16 * 32 / 3 / tps : 2 ))
    [ "$TL" -lt 1 ] && TL=1
    [ "$TL" -gt 40 ] && TL=40
    MARGIN=$((120 - TL))
    submit $name slurm/egg.sbatch ",EGG_TIME_MARGIN=$MARGIN,EGG_MAX_RESTARTS=8" --time=2 --signal=B:USR1@5 -- "${EGGARGS[@]}"
    finish_job
    out=$T/out/$name.out r0=$T/runs/$name/rank0.out errs=()
    nstop=$(grep -c '^egg: stopping after step [0-9]* (--time-limit)$' "$r0")
    nres=$(grep -c '^egg: resumed from ' "$r0")
    grep -q "^egg.sbatch: job time left [0-9]*s, margin ${MARGIN}s: --time-limit [0-9]*$" "$out" || errs+=("no derived --time-limit in the batch output")
    [ "$nstop" -ge 1 ] || errs+=("egg never stopped by --time-limit")
    [ "$nres" = "$nstop" ] || errs+=("$nstop stops but $nres resumes")
    [ "$(grep -c "^egg.sbatch: requeueing job $JOB" "$out")" = "$nstop" ] || errs+=("requeues != stops")
    grep -q '^egg.sbatch: caught' "$out" && errs+=("a signal arrived; this check is about --time-limit alone")
    [ "$RC" = 0 ] || errs+=("sbatch --wait exit status $RC")
    [ "$(steps_of "$r0")" = "$STEPS" ] && [ "$(checksum_of "$r0")" = "$REF" ] || errs+=("final checksum '$(checksum_of "$r0")' (steps $(steps_of "$r0")) != uninterrupted '$REF'")
    if [ ${#errs[@]} -eq 0 ]; then
        pass $name
        info "$name: $nstop stop(s) by the derived --time-limit (~$TL s each), $nstop requeue(s), checksum equal; $(since "$t") s"
    else
        fail_list $name "${errs[@]}"
        dump "$out" "$r0"
    fi
else
    skip slurm_time_limit_requeue "no uninterrupted checksum to compare with"
fi

# ------------------------------------------------------------ (e) a rank stops answering
# SIGSTOP of one rank (a hung GPU or a frozen node) once a checkpoint exists: the other rank's
# --hang-timeout watchdog (3 s) exits it, srun ends the step, the script sees the hang in the ranks'
# output and requeues; the restart resumes from the last checkpoint and ends with the uninterrupted model
if [ -n "$REF" ]; then
    t=$(date +%s)
    name=slurm_hang_requeue
    submit $name slurm/egg.sbatch "" -- "${EGGARGS[@]}" --hang-timeout 3
    out=$T/out/$name.out r0=$T/runs/$name/rank0.out errs=()
    if [ -z "$JOB" ]; then finish_job; errs+=("sbatch failed: $(head -c 300 "$T/out/$name.err")")
    elif ! wait_ckpt "$r0" $((STEPS / 4)) 120; then
        timeout 10 scancel "$JOB" 2> /dev/null
        finish_job
        errs+=("job $JOB never reached a checkpoint at step >= $((STEPS / 4)) (or ended first)")
    else
        victim=
        for p in $(pgrep -f -- "--checkpoint-dir $T/runs/$name/checkpoints"); do
            [ "$(cat "/proc/$p/comm" 2> /dev/null)" = egg_mgpu ] && victim=$p
        done
        if [ -z "$victim" ]; then errs+=("no egg_mgpu process of job $JOB found")
        else kill -STOP "$victim"; info "$name: job $JOB: SIGSTOP to rank process $victim after $(since "$t") s"; fi
        finish_job
        P=egg.sbatch
        grep -q "^$P: egg: error: rank [01]: no progress for [0-9]* s after step [0-9]* (--hang-timeout 3)" "$out" || errs+=("batch output has no rank's 'no progress ... (--hang-timeout 3)' line")
        grep -q "^$P: job step exited with status [1-9][0-9]* (egg stopped early: hang)" "$out" || errs+=("batch output has no 'job step exited ... (egg stopped early: hang)'")
        grep -q "^$P: requeueing job $JOB (restart 0 -> 1)" "$out" || errs+=("no 'requeueing job $JOB (restart 0 -> 1)'")
        grep -q "^$P: job $JOB restart 1 on .*: resuming from the latest checkpoint" "$out" || errs+=("restart 1 did not add --resume latest")
        grep -q '^egg: resumed from .* at step [0-9]*' "$r0" || errs+=("rank 0 output has no 'egg: resumed from'")
        [ "$RC" = 0 ] || errs+=("sbatch --wait exit status $RC")
        [ "$(steps_of "$r0")" = "$STEPS" ] && [ "$(checksum_of "$r0")" = "$REF" ] || errs+=("final checksum '$(checksum_of "$r0")' (steps $(steps_of "$r0")) != uninterrupted '$REF'")
    fi
    if [ ${#errs[@]} -eq 0 ]; then
        pass $name
        info "$name: $(grep -o 'no progress for [0-9]* s after step [0-9]*' "$out" | head -n 1), requeued, resumed $(grep -o 'resumed from .*at step [0-9]*' "$r0" | tail -n 1 | sed 's/.*at step/at step/'), checksum equal; $(since "$t") s"
    else
        fail_list $name "${errs[@]}"
        dump "$out" "$r0" "$T/runs/$name/rank1.out"
    fi
else
    skip slurm_hang_requeue "no uninterrupted checksum to compare with"
fi

exit 0      # cleanup (EXIT trap) stops the cluster and prints the summary

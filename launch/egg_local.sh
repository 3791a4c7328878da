#!/usr/bin/env bash
# launch/egg_local.sh — run egg_mgpu on this node: one MPI rank per GPU.
#
#   launch/egg_local.sh [launcher options] [--] [egg_mgpu options]
#
#   -n N              ranks (default: the GPUs found by nvidia-smi -L or rocm-smi,
#                     honouring CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES /
#                     ROCR_VISIBLE_DEVICES; with no GPU: one rank per core)
#   --bind none|core|numa
#                     none: ranks float (default with GPUs: the host side is light)
#                     core: rank i gets its own block of cores/N cores (default on CPU)
#                     numa: ranks round-robin over NUMA domains, bound to theirs
#   --dry-run         print the command (copy-paste runnable) and exit
#   --mpirun PATH     mpirun to use (default: mpirun on PATH)
#   --mpi-args "..."  extra mpirun arguments, word-split (e.g. "--report-bindings")
#   -h, --help        this text
#
# Launcher options are taken from anywhere before a `--`; everything else goes
# to egg_mgpu unchanged (its own --help lists them). The environment comes from
# launch/env.sh (NCCL_NVLS_ENABLE=0, NCCL_DEBUG=WARN, ...; override any of them
# from your shell). EGG_BIN overrides the binary (default: ../egg_mgpu here).
#
# Examples:
#   launch/egg_local.sh --data input.txt.zst --steps 2000        # all GPUs
#   launch/egg_local.sh -n 2 --dry-run --data input.txt           # print only
#   CUDA_VISIBLE_DEVICES=0,1 launch/egg_local.sh --data input.txt # two GPUs
#   CUDA_VISIBLE_DEVICES= launch/egg_local.sh -n 4 --data input.txt # CPU ranks on a GPU box
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

die() { echo "egg_local: error: $*" >&2; exit 2; }
usage() { sed -n '2,/^set -u/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'; }

n="" bind="" dry=0 mpirun_bin="${MPIRUN:-mpirun}" extra="" args=()
# shellcheck source=launch/common.sh
. "$here/common.sh"
while [ $# -gt 0 ]; do
    egg_launch_opt "$@"; shift "$EGG_SHIFT"
done
case "$n" in ''|*[!0-9]*|0) [ -z "$n" ] || die "-n '$n': need a positive whole number of ranks" ;; esac
case "$bind" in ''|none|core|numa) ;; *) die "--bind '$bind': one of none, core, numa" ;; esac

bin="${EGG_BIN:-$here/../egg_mgpu}"
[ -x "$bin" ] || [ "$dry" = 1 ] || die "$bin: not found or not executable (run make, or set EGG_BIN)"
bin="$(cd "$(dirname "$bin")" 2>/dev/null && pwd)/$(basename "$bin")"

# ---- GPUs: what this process may use
count_list() { local IFS=,; set -- $1; echo $#; }
ngpu=0 kind=cpu
if command -v nvidia-smi >/dev/null 2>&1; then
    ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU [0-9]')
    kind=cuda
    if [ "${CUDA_VISIBLE_DEVICES+set}" = set ]; then
        vis=$(count_list "$CUDA_VISIBLE_DEVICES"); [ "$vis" -lt "$ngpu" ] && ngpu=$vis
    fi
fi
if [ "$ngpu" -eq 0 ] && command -v rocm-smi >/dev/null 2>&1; then
    ngpu=$(rocm-smi --showid 2>/dev/null | grep -o 'GPU\[[0-9]*\]' | sort -u | wc -l)
    kind=hip
    for v in HIP_VISIBLE_DEVICES ROCR_VISIBLE_DEVICES; do
        if [ -n "${!v-}" ]; then vis=$(count_list "${!v}"); [ "$vis" -lt "$ngpu" ] && ngpu=$vis; fi
    done
fi
[ "$ngpu" -gt 0 ] || kind=cpu

# ---- cores (Open MPI's slots are cores, not hardware threads)
ncore=$(lscpu -p=core,socket 2>/dev/null | grep -v '^#' | sort -u | wc -l)
[ "$ncore" -gt 0 ] 2>/dev/null || ncore=$(nproc 2>/dev/null || echo 1)
avail=$(nproc 2>/dev/null || echo "$ncore")
[ "$avail" -lt "$ncore" ] && ncore=$avail

if [ -z "$n" ]; then
    if [ "$kind" = cpu ]; then n=$ncore; else n=$ngpu; fi
fi
[ -n "$bind" ] || { if [ "$kind" = cpu ]; then bind=core; else bind=none; fi; }
per=$(( ncore / n )); [ "$per" -ge 1 ] || per=1

# ---- environment
egg_launch_env "$per"

# ---- mpirun command
cmd=("$mpirun_bin")
[ "${EUID:-$(id -u)}" -eq 0 ] && cmd+=(--allow-run-as-root)
cmd+=(-np "$n")
if [ "$n" -gt "$ncore" ]; then
    # more ranks than cores: let them share (tests, or GPUs outnumbering cores)
    cmd+=(--oversubscribe --map-by slot --bind-to none)
else
    case "$bind" in
        none) cmd+=(--map-by slot --bind-to none) ;;
        core) cmd+=(--map-by "slot:PE=$per" --bind-to core) ;;
        numa) cmd+=(--map-by numa --bind-to numa) ;;
    esac
fi
for v in $EGG_ENV_VARS; do cmd+=(-x "$v"); done
# shellcheck disable=SC2206
[ -n "$extra" ] && cmd+=($extra)
cmd+=("$bin" "${args[@]}")

if [ "$kind" = cpu ]; then g="no GPU"; else g="$ngpu $kind GPU(s)"; fi
egg_launch_go "$dry" "# egg_local: $n rank(s), $g, $ncore core(s), bind $bind"

#!/usr/bin/env bash
# launch/egg_hosts.sh — run egg_mgpu across the nodes of an Open MPI hostfile.
#
#   launch/egg_hosts.sh --hostfile FILE [launcher options] [--] [egg_mgpu options]
#
# FILE has one node per line, `host slots=N` with N = ranks on that node (its
# GPU count; for CPU nodes, its core count). `#` starts a comment. Example:
#     node01 slots=8
#     node02 slots=8
#
#   --hostfile FILE   the node list (or EGG_HOSTFILE)
#   -n N              total ranks (default: the sum of the slots)
#   --bind none|core|numa
#                     none (default): ranks float; core: each rank gets
#                     cores/ranks-per-node cores (set EGG_CORES_PER_NODE, else
#                     this node's count is assumed for every node; nodes with
#                     unequal slots fall back to none); numa: bind each rank
#                     to the NUMA domain it is placed in
#   --dry-run         print the command (copy-paste runnable) and exit
#   --mpirun PATH     mpirun to use (default: mpirun on PATH)
#   --mpi-args "..."  extra mpirun arguments (e.g. "--prefix /opt/openmpi")
#   -h, --help        this text
#
# Every node needs the same binary at the same path (a shared file system, or a
# copy) and the data file at the path given. Ranks are placed ppr:N:node (N
# ranks on each node, filled node by node) when all nodes have the same slots,
# else node by node up to each node's slots. Environment presets come from
# launch/env.sh and are forwarded to remote ranks with `mpirun -x`.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

die() { echo "egg_hosts: error: $*" >&2; exit 2; }
usage() { sed -n '2,/^set -u/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'; }

hostfile="${EGG_HOSTFILE:-}" n="" bind=none dry=0 mpirun_bin="${MPIRUN:-mpirun}" extra="" args=()
# shellcheck source=launch/common.sh
. "$here/common.sh"
while [ $# -gt 0 ]; do
    case "$1" in
        --hostfile|-hostfile|--machinefile) [ $# -ge 2 ] || die "$1 needs a file"; hostfile=$2; shift 2 ;;
        *) egg_launch_opt "$@"; shift "$EGG_SHIFT" ;;
    esac
done
[ -n "$hostfile" ] || die "no --hostfile given (lines 'host slots=N')"
[ -r "$hostfile" ] || die "--hostfile $hostfile: cannot read it"
case "$n" in ''|*[!0-9]*|0) [ -z "$n" ] || die "-n '$n': need a positive whole number of ranks" ;; esac
case "$bind" in none|core|numa) ;; *) die "--bind '$bind': one of none, core, numa" ;; esac

# ---- parse the hostfile: nodes, slots each, total
nodes=0 total=0 ppn="" uniform=1 lineno=0
while IFS= read -r line || [ -n "$line" ]; do
    lineno=$((lineno + 1))
    line=${line%%#*}
    read -r host rest <<<"$line" || true
    [ -n "${host:-}" ] || continue
    slots=""
    for kv in $rest; do
        case "$kv" in
            slots=*) slots=${kv#slots=} ;;
            max_slots=*|max-slots=*) ;;
            *) die "$hostfile:$lineno: '$kv': expected 'host slots=N'" ;;
        esac
    done
    case "$slots" in
        ''|*[!0-9]*|0) die "$hostfile:$lineno: $host: needs slots=N (N >= 1 ranks on that node, usually its GPU count)" ;;
    esac
    nodes=$((nodes + 1)) total=$((total + slots))
    if [ -z "$ppn" ]; then ppn=$slots; elif [ "$ppn" != "$slots" ]; then uniform=0; fi
done <"$hostfile"
[ "$nodes" -gt 0 ] || die "$hostfile: no hosts in it"
[ -n "$n" ] || n=$total
[ "$n" -le "$total" ] || die "-n $n: more than the $total slots in $hostfile"

bin="${EGG_BIN:-$here/../egg_mgpu}"
[ -x "$bin" ] || [ "$dry" = 1 ] || die "$bin: not found or not executable (run make, or set EGG_BIN)"
bin="$(cd "$(dirname "$bin")" 2>/dev/null && pwd)/$(basename "$bin")"

ncore=${EGG_CORES_PER_NODE:-$(lscpu -p=core,socket 2>/dev/null | grep -v '^#' | sort -u | wc -l)}
[ "$ncore" -gt 0 ] 2>/dev/null || ncore=1
per=$(( ncore / ppn )); [ "$per" -ge 1 ] || per=1

egg_launch_env "$per"

cmd=("$mpirun_bin")
[ "${EUID:-$(id -u)}" -eq 0 ] && cmd+=(--allow-run-as-root)
cmd+=(-np "$n" --hostfile "$hostfile")
if [ "$uniform" = 1 ]; then
    case "$bind" in
        none) cmd+=(--map-by "ppr:$ppn:node" --bind-to none) ;;
        core) cmd+=(--map-by "ppr:$ppn:node:PE=$per" --bind-to core) ;;
        numa) cmd+=(--map-by "ppr:$ppn:node" --bind-to numa) ;;
    esac
else
    # unequal nodes: fill each node up to its slots, in hostfile order
    case "$bind" in
        none|core) cmd+=(--map-by slot --bind-to none) ;;
        numa) cmd+=(--map-by slot --bind-to numa) ;;
    esac
fi
for v in $EGG_ENV_VARS; do cmd+=(-x "$v"); done
# shellcheck disable=SC2206
[ -n "$extra" ] && cmd+=($extra)
cmd+=("$bin" "${args[@]}")

if [ "$uniform" = 1 ]; then sl="$ppn per node"; else sl="unequal slots"; fi
egg_launch_go "$dry" "# egg_hosts: $n rank(s) on $nodes node(s) ($sl), bind $bind"

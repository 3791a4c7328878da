# shellcheck shell=bash
# launch/common.sh — the part egg_local.sh and egg_hosts.sh share: their common
# options, the environment presets and the final dry-run print or exec.
# Sourced, not run.

# egg_launch_opt "$@": take the option at $1 if it is one both scripts have
# (-n, --bind, --dry-run, --mpirun, --mpi-args, --help, --, or an argument for
# egg), setting n, bind, dry, mpirun_bin, extra, args; EGG_SHIFT = words used.
# shellcheck disable=SC2034,SC2154  # the variables belong to the sourcing script
egg_launch_opt() {
    EGG_SHIFT=1
    case "$1" in
        -n|-np) [ $# -ge 2 ] || die "$1 needs a number"; n=$2; EGG_SHIFT=2 ;;
        --bind) [ $# -ge 2 ] || die "--bind needs none, core or numa"; bind=$2; EGG_SHIFT=2 ;;
        --dry-run) dry=1 ;;
        --mpirun) [ $# -ge 2 ] || die "--mpirun needs a path"; mpirun_bin=$2; EGG_SHIFT=2 ;;
        --mpi-args) [ $# -ge 2 ] || die "--mpi-args needs a string"; extra="$extra $2"; EGG_SHIFT=2 ;;
        -h|--help) usage; exit 0 ;;
        --) args+=("${@:2}"); EGG_SHIFT=$# ;;
        *) args+=("$1") ;;
    esac
}

# egg_launch_env PER: load launch/env.sh; OMP_NUM_THREADS = PER unless the caller set it.
egg_launch_env() {
    local omp_given=${OMP_NUM_THREADS+set}
    # shellcheck source=launch/env.sh disable=SC2154  # here: set by the sourcing script
    . "$here/env.sh"
    if [ "$omp_given" != set ]; then
        export OMP_NUM_THREADS=$1
        EGG_ENV_VARS="${EGG_ENV_VARS:+$EGG_ENV_VARS }OMP_NUM_THREADS"
    fi
}

# egg_launch_go DRY SUMMARY: with DRY=1 print SUMMARY and the command (as an
# `env ...` line) and exit 0; else check that mpirun is Open MPI and exec ${cmd[@]}.
# shellcheck disable=SC2154  # cmd, mpirun_bin, die: set by the sourcing script
egg_launch_go() {
    if [ "$1" = 1 ]; then
        echo "$2"
        local line="env" v a
        for v in $EGG_ENV_VARS; do line+=" $(printf '%q' "$v=${!v}")"; done
        for a in "${cmd[@]}"; do line+=" $(printf '%q' "$a")"; done
        echo "$line"
        exit 0
    fi
    command -v "$mpirun_bin" >/dev/null 2>&1 || die "$mpirun_bin: not found (install Open MPI: apt install openmpi-bin libopenmpi-dev)"
    "$mpirun_bin" --version 2>/dev/null | grep -q 'Open MPI\|OpenRTE' ||
        die "$mpirun_bin is not Open MPI; these scripts use Open MPI's flags (under Slurm use slurm/, else run mpiexec by hand)"
    exec "${cmd[@]}"
}

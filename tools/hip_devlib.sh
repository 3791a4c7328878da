#!/usr/bin/env bash
# tools/hip_devlib.sh — a ROCm device-library directory that also covers gfx11.
#
# Debian 12's rocm-device-libs (ROCm 5.2) ship oclc_isa_version_*.bc only up to
# gfx1036, so `hipcc --offload-arch=gfx1100` stops with "cannot find ROCm device
# library for gfx1100". The missing file holds one constant (the ISA version,
# 11000 for gfx1100); this script links every system .bc into DIR and derives
# oclc_isa_version_<N>.bc for each requested gfx11 target from the gfx1030 file
# with llvm-dis-15 / llvm-as-15. Pass DIR to hipcc as --rocm-device-lib-path=DIR.
#
#   bash tools/hip_devlib.sh [DIR] [ARCH...]     default DIR build/hip-devlib, ARCH gfx1100
#   prints DIR on success; exit 1 (one "hip_devlib: error: ..." line) otherwise
# Idempotent and quick (~0.1 s); `make` and tests/t_hip_build.sh call it.
set -euo pipefail
dir=${1:-build/hip-devlib}
shift || true
archs=("$@")
[ ${#archs[@]} -gt 0 ] || archs=(gfx1100)

die() { echo "hip_devlib: error: $*" >&2; exit 1; }
src=${EGG_ROCM_DEVLIB:-}
if [ -z "$src" ]; then
    for d in /usr/lib/x86_64-linux-gnu/amdgcn/bitcode /usr/lib/aarch64-linux-gnu/amdgcn/bitcode \
             /opt/rocm/amdgcn/bitcode /opt/rocm/lib/llvm/lib/clang/*/lib/amdgcn/bitcode; do
        [ -f "$d/ocml.bc" ] && { src=$d; break; }
    done
fi
[ -n "$src" ] && [ -f "$src/oclc_isa_version_1030.bc" ] ||
    die "no ROCm device library with oclc_isa_version_1030.bc found (install rocm-device-libs, or set EGG_ROCM_DEVLIB)"
dis=$(command -v llvm-dis-15 || command -v llvm-dis || true)
as=$(command -v llvm-as-15 || command -v llvm-as || true)
[ -n "$dis" ] && [ -n "$as" ] || die "llvm-dis/llvm-as not found (Debian: apt-get install llvm-15)"

mkdir -p "$dir" || die "cannot create $dir"
for f in "$src"/*.bc; do
    b=$(basename "$f")
    [ -e "$dir/$b" ] || ln -s "$f" "$dir/$b"
done
for a in "${archs[@]}"; do
    case "$a" in
        gfx1[1-9][0-9][0-9]) ;;
        *) continue ;; # older targets are in the system library already
    esac
    n=${a#gfx}
    out="$dir/oclc_isa_version_$n.bc"
    [ -s "$out" ] && [ ! -L "$out" ] && continue
    [ -L "$out" ] && continue # the system library has it (a newer ROCm)
    # gfx1100 -> 11000, gfx1101 -> 11001: major*1000 + minor*100 + stepping
    ver=$(( ${n:0:2} * 1000 + ${n:2:1} * 100 + ${n:3:1} ))
    tmp="$dir/.isa_$n.$$.ll"
    "$dis" "$src/oclc_isa_version_1030.bc" -o - | sed "s/constant i32 10300,/constant i32 $ver,/" >"$tmp"
    grep -q "constant i32 $ver," "$tmp" || { rm -f "$tmp"; die "unexpected content in oclc_isa_version_1030.bc"; }
    "$as" "$tmp" -o "$out" || { rm -f "$tmp"; die "llvm-as failed for $a"; }
    rm -f "$tmp"
done
echo "$dir"

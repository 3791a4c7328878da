#!/usr/bin/env bash
# tests/t_hip_tiles.sh — the AMD tile code's lane maps on the CPU (no AMD GPU, no
# hipcc needed): compiles tests/test_hip_tiles.c with the host compiler and runs
# it. It emulates v_mfma_i32_16x16x16i8, v_mfma_i32_16x16x32_i8 and
# v_wmma_i32_16x16x16_iu8 from their documented operand layouts, moves PTX
# m16n8k32 fragments through the ds_bpermute schedules of
# kernels/hip/egg_tile_map.h, and compares every 16x8x32 tile with a plain
# matmul; also the dot4 fallback and that no exchange round reads a lane twice.
# Prints one PASS/FAIL/SKIP line per check; exit 1 if any FAIL.
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CHECKS="hip-tiles-ptx-fragments hip-tiles-mfma-i32-16x16x16i8 hip-tiles-mfma-i32-16x16x32i8
hip-tiles-wmma-i32-16x16x16-iu8 hip-tiles-wmma-replicated hip-tiles-fallback-dot4 hip-tiles-rounds-conflict-free"
cc=${CC_HOST:-cc}
if ! command -v "$cc" >/dev/null 2>&1; then
    for c in $CHECKS; do echo "SKIP $c: no C compiler ($cc)"; done
    exit 0
fi
W=$(mktemp -d "${TMPDIR:-/tmp}/egg_hip_tiles.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT
if ! "$cc" -O2 -std=c11 -Wall -Wextra -Werror -I"$root/kernels/hip" "$root/tests/test_hip_tiles.c" -o "$W/test_hip_tiles" 2>"$W/cc.log"; then
    echo "FAIL hip-tiles-build: tests/test_hip_tiles.c does not compile: $(head -c 300 "$W/cc.log" | tr '\n' ' ')"
    exit 1
fi
"$W/test_hip_tiles"

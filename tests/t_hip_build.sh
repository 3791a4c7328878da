#!/usr/bin/env bash
# tests/t_hip_build.sh — the HIP backend compiles, and compiles to the intended
# instructions (no AMD GPU is available to the project, so this and
# tests/t_hip_tiles.sh are what verifies it).
#
# With hipcc on the PATH (Debian 12: apt-get install hipcc libamdhip64-dev):
#   - kernels/hip/egg_hip.cpp (= kernels/cuda/egg_cuda.cu under hipcc) builds with
#     -Wall -Werror for gfx90a, gfx940 (stand-in for gfx942, unknown to clang 15),
#     gfx1100 (device library from tools/hip_devlib.sh) and gfx1030 (fallback path);
#   - the device code of each target, unbundled and disassembled, has the matrix
#     instruction in every mm_kernel instance and dot4 for __dp4a:
#       gfx90a  v_mfma_i32_16x16x16i8    v_dot4(c)_i32_i8
#       gfx940  v_mfma_i32_16x16x32_i8   v_dot4(c)_i32_i8
#       gfx1100 v_wmma_i32_16x16x16_iu8  v_dot4_i32_iu8
#       gfx1030 no matrix instruction    v_dot4(c)_i32_i8   (the gather fallback)
#     so a silent scalar fallback fails here;
#   - the object's only strong global symbols are its C entry points egg_*hip_* (all
#     else in namespace egg_hip), so it links beside the CUDA backend;
#   - a binary built with HIP (egg_mgpu --version lists hip) exits 2 with a clear
#     message for --backend hip when no AMD GPU is visible.
# Without hipcc every check SKIPs, saying so. Scratch (spill) use of mm_kernel per
# target is printed as a note. Prints one PASS/FAIL/SKIP line per check.
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 1
ARCHS="gfx90a gfx940 gfx1100 gfx1030"
CHECKS="hip-build-werror hip-isa-gfx90a hip-isa-gfx940 hip-isa-gfx1100 hip-isa-gfx1030-fallback hip-symbols hip-backend-no-device"
nfail=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; nfail=$((nfail + 1)); }
skip() { echo "SKIP $1: $2"; }
skip_all() { for c in $CHECKS; do skip "$c" "$1"; done; exit 0; }

HIPCC=${HIPCC:-$(command -v hipcc 2>/dev/null)}
[ -n "$HIPCC" ] || skip_all "hipcc not found (Debian 12: apt-get install hipcc libamdhip64-dev)"
bundler=$(command -v clang-offload-bundler-15 || command -v clang-offload-bundler || ls /opt/rocm/llvm/bin/clang-offload-bundler 2>/dev/null)
objdump=$(command -v llvm-objdump-15 || command -v llvm-objdump || ls /opt/rocm/llvm/bin/llvm-objdump 2>/dev/null)
[ -n "$bundler" ] && [ -n "$objdump" ] || skip_all "clang-offload-bundler / llvm-objdump not found beside hipcc"

W=$(mktemp -d "${TMPDIR:-/tmp}/egg_hip_build.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT

# ------------------------------------------------------------------ compile
devlib=$(bash tools/hip_devlib.sh "$W/devlib" gfx1100 2>"$W/devlib.err")
if [ -z "$devlib" ]; then
    fail hip-build-werror "tools/hip_devlib.sh: $(head -1 "$W/devlib.err")"
    for c in $CHECKS; do [ "$c" = hip-build-werror ] || skip "$c" "no object (build failed)"; done
    exit 1
fi
flags=(-x hip -O3 -std=c++17 -Wall -Werror -fPIC -Isrc -Ikernels -Ikernels/hip/compat --rocm-device-lib-path="$devlib")
for a in $ARCHS; do flags+=(--offload-arch="$a"); done
# EGG_HIP_CUDA_SOURCE=FILE: build the HIP backend from another copy of egg_cuda.cu (to try a change)
cuda_src=${EGG_HIP_CUDA_SOURCE:-kernels/cuda/egg_cuda.cu}
[ -n "${EGG_HIP_CUDA_SOURCE:-}" ] && flags+=(-DEGG_CUDA_SOURCE="\"$(cd "$(dirname "$cuda_src")" && pwd)/$(basename "$cuda_src")\"")
t0=$(date +%s)
if ! "$HIPCC" "${flags[@]}" -c kernels/hip/egg_hip.cpp -o "$W/egg_hip.o" >"$W/cc.log" 2>&1; then
    why=$(grep -m1 -E 'error' "$W/cc.log" | cut -c1-300)
    guarded=$(awk '/^#if !defined\(__HIPCC__\)/ { g = 1 } /^#endif/ { g = 0 } /void mma_s8\(/ { print g + 0; exit }' kernels/cuda/egg_mm.cuh)
    if [ "$guarded" != 1 ]; then
        why="kernels/cuda/egg_mm.cuh has no HIP guards around its PTX helpers (cp_async16, mma_s8); $why"
    fi
    fail hip-build-werror "hipcc ${ARCHS// /,}: ${why:-see hipcc output}"
    tail -n 15 "$W/cc.log" >&2
    for c in $CHECKS; do [ "$c" = hip-build-werror ] || skip "$c" "no object (build failed)"; done
    exit 1
fi
pass hip-build-werror
echo "# hipcc ${ARCHS// /,}: $(($(date +%s) - t0)) s"

# ------------------------------------------------------------------ device ISA
objcopy -O binary --only-section=.hip_fatbin "$W/egg_hip.o" "$W/fatbin" 2>/dev/null
for a in $ARCHS; do
    name=hip-isa-$a
    [ "$a" = gfx1030 ] && name=hip-isa-gfx1030-fallback
    if ! "$bundler" --unbundle --type=o --input="$W/fatbin" --targets="hipv4-amdgcn-amd-amdhsa--$a" --output="$W/$a.co" 2>"$W/b.err" ||
        ! "$objdump" -d --mcpu="$a" "$W/$a.co" >"$W/$a.s" 2>"$W/d.err"; then
        fail "$name" "cannot unbundle/disassemble the $a code object: $(head -1 "$W/b.err" "$W/d.err" | tr '\n' ' ')"
        continue
    fi
    case $a in
        gfx90a) mma='v_mfma_i32_16x16x16i8'; dot='v_dot4c?_i32_i8' ;;
        gfx940) mma='v_mfma_i32_16x16x32_i8'; dot='v_dot4c?_i32_i8' ;;
        gfx1100) mma='v_wmma_i32_16x16x16_iu8'; dot='v_dot4_i32_iu8' ;;
        *) mma=''; dot='v_dot4c?_i32_i8' ;;
    esac
    # per function: "name matrix-count dot4-count scratch-count"
    awk -v mma="${mma:-NONE}" -v dot="$dot" '
        /^[0-9a-f]+ <.*>:$/ { f = $2; gsub(/[<>:]/, "", f); fs[f] = 1; next }
        f != "" && $0 ~ "[[:space:]]" mma "[[:space:]]" { m[f]++ }
        f != "" && $0 ~ "[[:space:]]" dot "([[:space:]]|_e32)" { d[f]++ }
        f != "" && $0 ~ /[[:space:]](v_mfma|v_wmma)/ { any[f]++ }
        f != "" && $0 ~ /[[:space:]](scratch_(load|store)|buffer_(load|store))/ { s[f]++ }
        END { for (f in fs) printf "%s %d %d %d %d\n", f, m[f], d[f], s[f], any[f] }' "$W/$a.s" >"$W/$a.fn"
    nmm=$(grep -c 'mm_kernel' "$W/$a.fn")
    dots=$(awk '{ n += $3 } END { print n + 0 }' "$W/$a.fn")
    spill=$(awk '/mm_kernel/ && $4 > 0 { n++; t += $4 } END { if (n) printf "%d of the mm_kernel instances use scratch (%d spill instructions)", n, t }' "$W/$a.fn")
    [ -n "$spill" ] && echo "# $a: $spill"
    if [ "$nmm" -lt 5 ]; then
        fail "$name" "found $nmm mm_kernel instances in the $a code (expected 5)"
    elif [ -n "$mma" ]; then
        miss=$(awk '/mm_kernel/ && $2 == 0 { print $1 }' "$W/$a.fn" | head -3 | tr '\n' ' ')
        if [ -n "$miss" ]; then fail "$name" "no $mma in $miss(a scalar fallback?)"
        elif [ "$dots" -eq 0 ]; then fail "$name" "no ${dot//c?/} instruction: __dp4a fell back to scalar code"
        else pass "$name"; echo "# $a: $(awk '{ n += $2 } END { print n }' "$W/$a.fn") x $mma, $dots x dot4"; fi
    else
        other=$(awk '$5 > 0 { print $1 }' "$W/$a.fn" | head -2 | tr '\n' ' ')
        if [ -n "$other" ]; then fail "$name" "matrix instructions in $other(expected the dot4 fallback)"
        elif [ "$dots" -eq 0 ]; then fail "$name" "no v_dot4 instruction: the fallback is scalar"
        else pass "$name"; echo "# $a: no matrix instruction, $dots x dot4"; fi
    fi
done

# ------------------------------------------------------------------ symbols
syms=$(nm --defined-only "$W/egg_hip.o" 2>/dev/null | awk '$2 ~ /^[TDBR]$/ { print $3 }')
strong=$(echo "$syms" | grep -v -E '^_ZN7egg_hip|^egg_(backend_)?hip_[a-z0-9_]+$' | head -5 | tr '\n' ' ')
entries=$(echo "$syms" | grep -c -E '^(egg_backend_hip_create|egg_hip_device_count)$')
if [ "$entries" -ne 2 ]; then fail hip-symbols "egg_backend_hip_create / egg_hip_device_count not both defined"
elif [ -n "$strong" ]; then fail hip-symbols "global symbols outside namespace egg_hip would clash with the CUDA object: $strong(rename them in kernels/hip/egg_hip.cpp)"
else pass hip-symbols; fi

# ------------------------------------------------------------------ --backend hip, no device
bin=${EGG_BIN:-$root/egg_mgpu}
if [ ! -x "$bin" ]; then
    skip hip-backend-no-device "egg_mgpu not built (run make)"
elif ! "$bin" --version 2>/dev/null | grep -q '^backends:.* hip'; then
    skip hip-backend-no-device "egg_mgpu was built without HIP ($("$bin" --version 2>/dev/null | grep '^backends:'))"
elif [ -e /dev/kfd ]; then
    skip hip-backend-no-device "/dev/kfd exists: this machine may have an AMD GPU"
else
    awk 'BEGIN { srand(5); for (i = 0; i < 3000; i++) printf "%s%s", (rand() < 0.5 ? "the cat " : "a dog "), (i % 9 ? "" : "\n") }' >"$W/d.txt"
    "$bin" --data "$W/d.txt" --backend hip --hidden 32 --layers 1 --seq 16 --pop 8 --steps 1 --val-every 0 \
        --checkpoint-every 0 --threads 1 >"$W/o" 2>"$W/e"
    rc=$?
    if [ $rc -ne 2 ]; then fail hip-backend-no-device "exit $rc, expected 2: $(head -c 200 "$W/e")"
    elif [ "$(wc -l <"$W/e")" -ne 1 ] || ! grep -q '^egg: error: --backend hip: no AMD GPU' "$W/e"; then
        fail hip-backend-no-device "expected one line 'egg: error: --backend hip: no AMD GPU ...', got: $(head -c 200 "$W/e")"
    else pass hip-backend-no-device; fi
fi
[ $nfail -eq 0 ]

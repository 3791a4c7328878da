#!/usr/bin/env bash
# tests/t_exact.sh — bit-exactness of the CPU trainer (DESIGN.md invariants 3-5).
#
# The model after N steps (its checksum) must not depend on --threads or
# --simd; resuming must be exact (N steps straight == N/2 steps, checkpoint,
# resume to N), including with --rank 2, --fitness norm, --noise-reuse and
# --group; and every run must be deterministic. The checksum is first shown
# to depend on the seed and on the step count, so equalities are not vacuous.
# Prints one PASS/FAIL/SKIP line per check; exit 1 if any FAIL.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CHECKS="checksum_depends_on_seed_and_steps threads_1_vs_2 threads_2_tiles simd_scalar_vs_avx2 simd_scalar_vs_avx512
resume_exact resume_exact_rank2_norm resume_exact_noise_reuse_group resume_exact_other_threads
resume_from_periodic_checkpoint noise_reuse_deterministic group4_deterministic"
lib_init exact || skip_all "egg_mgpu not built (run make)" $CHECKS

gen_words d.txt 4000 777   # ~20 KB: each stream spans many steps, so recurrent state carries over
# EGG-64x2, 8 pairs; every step does real work on every tensor
M=(--data d.txt --hidden 64 --layers 2 --seq 16 --pop 16 --val-every 0 --val-len 32 --val-windows 4
   --print-every 1000 --checkpoint-every 0)
N=12

# sum NAME ARGS...: run, print the checksum (empty on failure; stderr kept in NAME.err)
sum() {
    local name=$1; shift
    "$EGG" "${M[@]}" "$@" >"$name.out" 2>"$name.err" || { echo ""; return; }
    checksum_of "$name.out"
}
# same NAME A B [WHAT]: PASS when both checksums exist and are equal
same() {
    if [ -z "$2" ] || [ -z "$3" ]; then fail "$1" "a run failed: $4"
    elif [ "$2" != "$3" ]; then fail "$1" "checksums differ: $2 vs $3 $4"
    else pass "$1"
    fi
}

base=$(sum base --threads 1 --steps $N)
s2=$(sum seed2 --threads 1 --steps $N --seed 2)
shorter=$(sum shorter --threads 1 --steps $((N - 1)))
if [ -z "$base" ] || [ -z "$s2" ] || [ -z "$shorter" ]; then fail checksum_depends_on_seed_and_steps "a run failed: $(head -c 200 base.err seed2.err)"
elif [ "$base" = "$s2" ] || [ "$base" = "$shorter" ]; then fail checksum_depends_on_seed_and_steps "checksum unchanged ($base) by --seed or --steps"
else pass checksum_depends_on_seed_and_steps
fi

same threads_1_vs_2 "$base" "$(sum t2 --threads 2 --steps $N)" "(--threads 1 vs 2)"
# a larger population: several tiles per thread, uneven split between threads
same threads_2_tiles "$(sum p1 --threads 1 --steps 6 --pop 44)" "$(sum p2 --threads 2 --steps 6 --pop 44)" "(--pop 44, 1 vs 2 threads)"

# --simd paths: the binary refuses a path this CPU lacks (exit 2); then SKIP
scalar=$(sum sc --threads 1 --steps $N --simd scalar)
for p in avx2 avx512; do
    s=$(sum "simd_$p" --threads 1 --steps $N --simd $p)
    if [ -z "$s" ] && grep -qi 'simd\|support\|cpu' "simd_$p.err"; then skip "simd_scalar_vs_$p" "$(head -n 1 "simd_$p.err")"
    else same "simd_scalar_vs_$p" "$scalar" "$s" "(--simd scalar vs $p; stderr: $(head -c 150 "simd_$p.err"))"
    fi
done

# resume: N straight == N/2, checkpoint, resume to N
# resume_case NAME EXTRA...: the resumed half may add flags after '--' (e.g. other threads)
resume_case() {
    local name=$1; shift
    local extra=() after=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do extra+=("$1"); shift; done
    [ $# -gt 0 ] && shift && after=("$@")
    local straight half resumed ck
    straight=$(sum "${name}_straight" --threads 1 --steps $N "${extra[@]}")
    rm -rf "ck_$name"
    half=$(sum "${name}_half" --threads 1 --steps $((N / 2)) --checkpoint-dir "ck_$name" "${extra[@]}")
    ck=$(ls "ck_$name"/ckpt_*.egg 2>/dev/null | tail -n 1)
    if [ -z "$half" ] || [ -z "$ck" ]; then fail "$name" "first half wrote no checkpoint: $(head -c 200 "${name}_half.err")"; return; fi
    resumed=$(sum "${name}_resumed" --threads 1 --steps $N --resume "$ck" "${extra[@]}" "${after[@]}")
    if [ -n "$resumed" ] && ! grep -q "resumed from .* at step $((N / 2))" "${name}_resumed.out"; then
        fail "$name" "the resumed run does not say it resumed at step $((N / 2))"; return
    fi
    if [ -n "$straight" ] && [ "$straight" = "$half" ]; then fail "$name" "N/2 and N steps give the same checksum"; return; fi
    same "$name" "$straight" "$resumed" "(straight vs resumed; stderr: $(head -c 150 "${name}_resumed.err"))"
}
resume_case resume_exact
resume_case resume_exact_rank2_norm --rank 2 --fitness norm
N=11 resume_case resume_exact_noise_reuse_group --noise-reuse 2 --group 4   # resumes mid noise epoch (5 / 2)
resume_case resume_exact_other_threads -- --threads 2

# a periodic checkpoint of a straight run resumes to the same end
rm -rf ck_per
per=$(sum per --threads 1 --steps $N --checkpoint-every 4 --checkpoint-dir ck_per)
if [ -f ck_per/ckpt_0000000008.egg ]; then
    same resume_from_periodic_checkpoint "$per" "$(sum per_r --threads 1 --steps $N --resume ck_per/ckpt_0000000008.egg)" "(straight vs resumed at 8)"
else
    fail resume_from_periodic_checkpoint "no ckpt_0000000008.egg with --checkpoint-every 4: $(ls ck_per 2>/dev/null | tr '\n' ' ')"
fi

# options that change the trajectory are deterministic (and do change it)
for o in "noise_reuse:--noise-reuse 2" "group4:--group 4"; do
    name=${o%%:*}_deterministic
    read -r -a flags <<<"${o#*:}"
    a=$(sum "${name}_a" --threads 2 --steps $N "${flags[@]}")
    b=$(sum "${name}_b" --threads 2 --steps $N "${flags[@]}")
    if [ -n "$a" ] && [ "$a" = "$base" ]; then fail "$name" "${o#*:} did not change the trajectory"
    else same "$name" "$a" "$b" "(two runs with ${o#*:})"
    fi
done

lib_finish

#!/usr/bin/env bash
# tests/run.sh — egg's test runner (`make test` calls it after building).
#
# Runs build/test_unit, build/test_data, then every tests/t_*.sh in name order.
# Each test prints one line per check: "PASS name", "FAIL name: why" or
# "SKIP name: why"; the runner echoes those (and "# ..." notes), prints each
# test's counts and time, and ends with exactly one line
#     N passed, N failed[, N skipped]
# A test that exits non-zero without a FAIL line, prints no result at all, or
# runs past EGG_TEST_TIMEOUT seconds (default 600) counts as one FAIL.
# Exit status: 1 if anything failed, else 0.
#   bash tests/run.sh                 everything
#   bash tests/run.sh t_cli t_exact   only these (names without .sh; unit, data)
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 1
limit=${EGG_TEST_TIMEOUT:-600}
npass=0 nfail=0 nskip=0
t_all=$(date +%s.%N)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/egg_run.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# sanitizer build (make sanitize): the environment tests/lib.sh documents
source tests/lib.sh
lib_sanitizer_env ./egg_mgpu
[ "$EGG_SANITIZED" = 1 ] && echo "# sanitizer build: ASAN_OPTIONS=$ASAN_OPTIONS LSAN_OPTIONS=$LSAN_OPTIONS UBSAN_OPTIONS=$UBSAN_OPTIONS"

tests=()
want() { [ $# -eq 0 ] && return 0; local w; for w in "${SEL[@]}"; do [ "$w" = "$1" ] && return 0; done; return 1; }
SEL=("$@")
if [ ${#SEL[@]} -eq 0 ] || want unit; then tests+=("unit:build/test_unit"); fi
if [ ${#SEL[@]} -eq 0 ] || want data; then tests+=("data:build/test_data"); fi
for f in tests/t_*.sh; do
    [ -e "$f" ] || continue
    n=$(basename "$f" .sh)
    if [ ${#SEL[@]} -eq 0 ] || want "$n"; then tests+=("$n:bash $f"); fi
done

for w in "${SEL[@]}"; do
    case " ${tests[*]} " in *" $w:"*) ;; *) echo "FAIL $w: no such test (unit, data, or a tests/t_*.sh name)"; nfail=$((nfail + 1)) ;; esac
done

for t in "${tests[@]}"; do
    name=${t%%:*} cmd=${t#*:}
    exe=${cmd#bash }
    echo "== $name ($exe)"
    if [ ! -e "$exe" ]; then
        echo "FAIL $name: $exe not found (run make)"
        nfail=$((nfail + 1))
        continue
    fi
    t0=$(date +%s.%N)
    p=0 f=0 s=0
    # the test's stdout is read line by line as it runs; its exit status goes to a file
    while IFS= read -r line; do
        case "$line" in
            PASS\ *) p=$((p + 1)); echo "$line" ;;
            FAIL\ *) f=$((f + 1)); echo "$line" ;;
            SKIP\ *) s=$((s + 1)); echo "$line" ;;
            \#*) echo "$line" ;;
        esac
    done < <(timeout -k 10 "$limit" $cmd 2>"$tmp/err"; echo $? >"$tmp/rc")
    rc=$(cat "$tmp/rc" 2>/dev/null || echo 1)
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        echo "FAIL $name: timed out after ${limit}s"; f=$((f + 1))
    elif [ "$rc" -ne 0 ] && [ $f -eq 0 ]; then
        echo "FAIL $name: exited with status $rc without a FAIL line"; f=$((f + 1))
    elif [ $((p + f + s)) -eq 0 ]; then
        echo "FAIL $name: printed no PASS/FAIL/SKIP line"; f=$((f + 1))
    fi
    if [ $f -gt 0 ] && [ -s "$tmp/err" ]; then
        echo "-- $name stderr (last 15 lines):"
        tail -n 15 "$tmp/err" | sed 's/^/   | /'
    fi
    dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    echo "== $name: $p passed, $f failed, $s skipped (${dt}s)"
    npass=$((npass + p)) nfail=$((nfail + f)) nskip=$((nskip + s))
done

dt=$(awk -v a="$t_all" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
echo "== total ${dt}s"
summary="$npass passed, $nfail failed"
[ $nskip -gt 0 ] && summary="$summary, $nskip skipped"
echo "$summary"
[ $nfail -eq 0 ]

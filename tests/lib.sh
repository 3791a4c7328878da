# tests/lib.sh — helpers shared by tests/t_*.sh (source it; bash only).
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#   lib_init NAME          temp dir $W (removed on exit), private copy of the binary in $EGG
#   pass NAME / fail NAME WHY / skip NAME WHY      one result line each
#   run_egg OUT ERR ARGS...   run $EGG, stdout/stderr to files; sets $RC
#   final_line FILE        the "egg: done ..." line of a run's stdout
#   checksum_of FILE       its checksum (16 hex), empty when absent
#   lib_finish             exit 1 iff any check failed
#
# Env: EGG_BIN (binary to test, default ./egg_mgpu), EGG_TEST_KEEP=1 (keep $W).
set -u

LIB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LIB_NFAIL=0
LIB_BG=""

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; LIB_NFAIL=$((LIB_NFAIL + 1)); }
skip() { echo "SKIP $1: $2"; }

# Every check of a script SKIPs with one reason (e.g. the binary is missing).
skip_all() {
    local why=$1; shift
    for c in "$@"; do skip "$c" "$why"; done
    exit 0
}

lib_cleanup() {
    local p
    for p in $LIB_BG; do kill -9 "$p" 2>/dev/null; done
    for p in $LIB_BG; do wait "$p" 2>/dev/null; done
    if [ -n "${W:-}" ] && [ -z "${EGG_TEST_KEEP:-}" ]; then rm -rf "$W"; fi
}

# lib_init NAME: make $W, copy the binary there (a rebuild during the run
# cannot pull it away), cd into $W. Returns 1 when the binary is missing.
lib_init() {
    W=$(mktemp -d "${TMPDIR:-/tmp}/egg_$1.XXXXXX") || { echo "cannot create a temp dir" >&2; exit 1; }
    trap lib_cleanup EXIT
    local bin=${EGG_BIN:-$LIB_ROOT/egg_mgpu}
    [ -x "$bin" ] || return 1
    cp "$bin" "$W/egg_mgpu" || return 1
    EGG=$W/egg_mgpu
    lib_sanitizer_env "$EGG"
    cd "$W" || exit 1
    return 0
}

# Sanitizer builds (make sanitize): fail on the first UBSan report, and report
# leaks except Open MPI's own (tests/data/lsan.supp). EGG_SANITIZED=1 then.
lib_sanitizer_env() {
    ldd "$1" 2>/dev/null | grep -q 'libasan\|libubsan' || return 0
    EGG_SANITIZED=1
    case "${ASAN_OPTIONS:-}" in *fast_unwind_on_malloc*) ;; *) export ASAN_OPTIONS="fast_unwind_on_malloc=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}" ;; esac
    case "${LSAN_OPTIONS:-}" in *suppressions*) ;; *) export LSAN_OPTIONS="suppressions=$LIB_ROOT/tests/data/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}" ;; esac
    case "${UBSAN_OPTIONS:-}" in *halt_on_error*) ;; *) export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}" ;; esac
    export EGG_SANITIZED
}
EGG_SANITIZED=${EGG_SANITIZED:-0}

lib_finish() { [ "$LIB_NFAIL" -eq 0 ]; exit $?; }

# run_egg OUT ERR ARGS...: runs the binary, sets RC.
run_egg() {
    local out=$1 err=$2; shift 2
    "$EGG" "$@" >"$out" 2>"$err"
    RC=$?
}

# The final success line, exactly as documented in the README.
FINAL_RE='^egg: done steps=[0-9]+ checksum=[0-9a-f]{16} train_bpb=-?[0-9]+\.[0-9]{4} val_bpb=-?[0-9]+\.[0-9]{4} tok_per_s=[0-9]+$'
final_line() { grep '^egg: done ' "$1" | tail -n 1; }
checksum_of() { final_line "$1" | sed -n 's/.* checksum=\([0-9a-f]\{16\}\).*/\1/p'; }
field_of() { final_line "$1" | sed -n "s/.* $2=\\([^ ]*\\).*/\\1/p"; } # field_of FILE val_bpb

# Tiny model flags: each step takes about a millisecond on one core. (No --progress:
# stdout is a file, so the bar is off by default.)
TINY=(--hidden 32 --layers 1 --seq 16 --pop 8 --threads 1 --val-every 0 --val-len 32 --val-windows 4
      --print-every 1000 --checkpoint-every 0)

# gen_words FILE NWORDS [SEED]: deterministic small-vocabulary text: 18 words picked
# by the minimal-standard LCG (products < 2^53, so exact in every awk).
gen_words() {
    awk -v n="$2" -v seed="${3:-12345}" 'BEGIN {
        split("the cat sat on a mat and dog ran far away from home while birds sang in tall green trees", w, " ");
        s = seed % 2147483647; if (s <= 0) s = 1;
        for (i = 0; i < n; i++) {
            s = (s * 16807) % 2147483647;
            printf "%s%s", w[int(s / 8192) % 18 + 1], (i % 13 == 12) ? ".\n" : " "
        }
    }' >"$1"
}

# wait_for FILE REGEX SECONDS: poll until FILE has a line matching REGEX.
wait_for() {
    local i n=$(($3 * 20))
    for ((i = 0; i < n; i++)); do
        grep -qE "$2" "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

# dir_empty DIR: true when DIR is absent or has no entries (hidden ones included).
dir_empty() { [ ! -e "$1" ] || [ -z "$(ls -A "$1" 2>/dev/null)" ]; }

# now: seconds since the epoch with a fraction.
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

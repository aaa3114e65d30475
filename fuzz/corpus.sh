#!/usr/bin/env bash
# A fuzz target's kept corpus is in two parts: fuzz/corpus/TARGET/ holds the named inputs
# (regression-*, seed-*) and a small seed set as files, to read and diff; fuzz/corpus/TARGET.tar.zst
# holds the rest the merges kept (thousands of small files that git, grep and editors would
# otherwise walk). tests/fuzz_corpus.rs replays both without unpacking; scripts/fuzz.sh unpacks
# the archive into its working corpus before a run and re-packs it with FUZZ_MERGE=1.
#
#   fuzz/corpus.sh unpack TARGET DIR   extracts the archive's inputs into DIR
#   fuzz/corpus.sh pack TARGET DIR     replaces the archive with DIR's inputs, less those kept
#                                      as files in fuzz/corpus/TARGET/ (same name)
#
# Packing is reproducible (sorted names, no times or owners, one zstd thread): the same inputs
# give the same bytes, so a merge that kept the same inputs changes no file. Needs tar and zstd.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
if [ "$#" != 3 ]; then
  sed -n '8,10p' "$0" >&2
  exit 2
fi
action="$1" target="$2" dir="$3"
loose="$root/fuzz/corpus/$target"
archive="$root/fuzz/corpus/$target.tar.zst"
case "$action" in
  unpack)
    mkdir -p "$dir"
    # A new target has no archive until its first merge.
    if [ ! -f "$archive" ]; then exit 0; fi
    zstd -dcq "$archive" | tar -x -C "$dir"
    ;;
  pack)
    find "$dir" -maxdepth 1 -type f -printf '%f\n' | LC_ALL=C sort | while IFS= read -r f; do
      if [ ! -e "$loose/$f" ]; then printf '%s\0' "$f"; fi
    done | tar -c -C "$dir" --null -T - --format=ustar --owner=0 --group=0 --numeric-owner \
      --mtime=@0 --mode=0644 | zstd -19 -T1 -q >"$archive.tmp"
    mv "$archive.tmp" "$archive"
    ;;
  *)
    sed -n '8,10p' "$0" >&2
    exit 2
    ;;
esac

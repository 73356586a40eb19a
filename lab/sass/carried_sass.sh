#!/usr/bin/env bash
# The long-tile E4M3 kernel's SASS out of libraries that were carried to the GPU and measured: each
# ARCHIVE (.carry/*.tar.xz of folders holding libfp8attn.so + COMMIT) unpacked to a temporary folder,
# each library's e4m3_block192 cubin listed (with encodings) to OUTDIR/PREFIX-<folder>.sass, and a
# line "PREFIX-<folder> <COMMIT> (ARCHIVE)" appended to OUTDIR/BUILDS. A plain folder holding
# libfp8attn.so (and subfolders holding one) may stand in for an archive.
#   bash lab/sass/carried_sass.sh OUTDIR PREFIX ARCHIVE_OR_FOLDER
set -euo pipefail
out=$1 prefix=$2 src=$3
CUOBJDUMP=${CUOBJDUMP:-/tmp/cuobj/x/nvidia/cu13/bin/cuobjdump}
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ -f "$src" ]]; then tar -xJf "$src" -C "$tmp"; else cp -r "$src"/. "$tmp"/; fi
find "$tmp" -name libfp8attn.so | sort | while read -r lib; do
  dir=$(dirname "$lib")
  name=$prefix-$(basename "$dir")
  [[ "$dir" == "$tmp" ]] && name=$prefix
  (cd "$dir" && "$CUOBJDUMP" -xelf e4m3_block192.sm_90a libfp8attn.so >/dev/null)
  "$CUOBJDUMP" -sass "$dir"/*e4m3_block192.sm_90a*.cubin > "$out/$name.sass"
  echo "$name $(cat "$dir/COMMIT" 2>/dev/null || echo '?') ($src)" >> "$out/BUILDS"
done

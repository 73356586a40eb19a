#!/usr/bin/env bash
# Here (no GPU): for each NAME=PATCH, this tree's library with lab/variants/PATCH applied (in a
# temporary worktree, carry.sh's carry_patched) as .carry/lot-NAME.tar.xz, folder NAME, which
# lottery_check.sh, tile_fit_check.sh and the like unpack beside .carry/lot.tar.xz's rel.
#   bash lab/probes/patch_stage.sh noepi=noepi.patch
#   bash lab/probes/patch_stage.sh both=epi-lean.patch+kv-evict-last.patch   (several, in order)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
source lab/probes/carry.sh
for spec in "$@"; do
  name=${spec%%=*} patch=${spec#*=}
  tmp=$(mktemp -d)
  carry_patched "$root" "$root/lab/variants/${patch//+/+$root/lab/variants/}" "$tmp/$name"
  echo "$name: $(cat "$tmp/$name/COMMIT")" > "$tmp/BUILDS"
  (cd "$tmp" && tar -cf - BUILDS "$name/COMMIT" "$name/libfp8attn.so" | xz -9 -T2 > "$root/.carry/lot-$name.tar.xz")
  rm -rf "$tmp"
  du -sh ".carry/lot-$name.tar.xz"
done

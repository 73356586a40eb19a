#!/usr/bin/env bash
# Here (no GPU): the libraries of lab/probes/lean_evl_check.sh, the twelfth session's staged
# probes in one archive set: rel (this tree + the lab host knobs, lottery_stage.sh none), lean
# (lab/variants/epi-lean.patch), evl (lab/variants/kv-evict-last.patch) and both (the two
# patches together; they touch different files), each .carry/lot-NAME.tar.xz; and the bundle
# (scripts/stage_gpu.sh BUNDLE=1 NO_CAPTURES=1) for the one-pass probe's library.
#   bash lab/probes/lean_evl_stage.sh
# Then on the GPU, carrying .carry/lot*.tar.xz, .carry/bundle.tar.xz and .carry/fa3_site.tar.xz:
#   bash lab/probes/lean_evl_check.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
source lab/probes/carry.sh
BUNDLE=1 NO_CAPTURES=1 scripts/stage_gpu.sh | tail -3 || true  # its size check may warn
bash lab/probes/lottery_stage.sh none
both=$(mktemp --suffix=.patch)
cat lab/variants/epi-lean.patch lab/variants/kv-evict-last.patch > "$both"
for spec in "lean=$root/lab/variants/epi-lean.patch" "evl=$root/lab/variants/kv-evict-last.patch" "both=$both"; do
  name=${spec%%=*} patch=${spec#*=}
  tmp=$(mktemp -d)
  carry_patched "$root" "$patch" "$tmp/$name"
  [[ $name == both ]] && echo "$(git rev-parse --short=12 HEAD) + epi-lean.patch + kv-evict-last.patch" > "$tmp/$name/COMMIT"
  echo "$name: $(cat "$tmp/$name/COMMIT")" > "$tmp/BUILDS"
  (cd "$tmp" && tar -cf - BUILDS "$name/COMMIT" "$name/libfp8attn.so" | xz -9 -T2 > "$root/.carry/lot-$name.tar.xz")
  rm -rf "$tmp"
  du -sh ".carry/lot-$name.tar.xz"
done
rm -f "$both"
du -ch .carry/lot*.tar.xz .carry/bundle.tar.xz .carry/fa3_site.tar.xz | tail -1

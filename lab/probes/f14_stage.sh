#!/usr/bin/env bash
# Here (no GPU): the five libraries of f14_check.sh, packed as .carry/f14.tar.xz (each a folder
# with libfp8attn.so + COMMIT): this tree's build-stage library as `rel`; `l32-224`, this tree with
# lab/study-fastmode/variant-l-fp32-block224.patch (in a temporary worktree); and branch f14t's
# three (worktree F14T, default /work/wt-f14t) by its lab/study-fastmode/stage_variants.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
F14T=${F14T:-/work/wt-f14t}
root=$PWD
source lab/probes/carry.sh
tmp=$(mktemp -d)
carry_stage build-stage "$tmp/rel" >/dev/null
rm -rf "$tmp/rel/tests" "$tmp/rel/fallback"
wt=$(mktemp -d)
git worktree add -q --detach "$wt" HEAD
(cd "$wt" && git apply lab/study-fastmode/variant-l-fp32-block224.patch &&
  carry_stage build-l32-224 "$tmp/l32-224" >/dev/null &&
  echo "$(git rev-parse --short=12 HEAD) + lab/study-fastmode/variant-l-fp32-block224.patch" > "$tmp/l32-224/COMMIT")
git worktree remove --force "$wt"
rm -rf "$tmp/l32-224/tests" "$tmp/l32-224/fallback"
(cd "$F14T" && bash lab/study-fastmode/stage_variants.sh)
cp -r "$F14T/.carry/variants/o8s0" "$F14T/.carry/variants/o8s0-l32" "$F14T/.carry/variants/o8s0-l32-224" "$tmp/"
tar -cJf "$root/.carry/f14.tar.xz" -C "$tmp" rel l32-224 o8s0 o8s0-l32 o8s0-l32-224
rm -rf "$tmp"
du -sh "$root/.carry/f14.tar.xz"

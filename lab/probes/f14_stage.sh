#!/usr/bin/env bash
# Here (no GPU): the three libraries of f14_check.sh, packed as .carry/f14.tar.xz (rel/, o8s0/,
# o8s0-l32/, each libfp8attn.so + COMMIT): this tree's build-stage library as `rel`, and branch
# f14t's two (worktree F14T, default /work/wt-f14t) by its lab/study-fastmode/stage_variants.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
F14T=${F14T:-/work/wt-f14t}
root=$PWD
source lab/probes/carry.sh
tmp=$(mktemp -d)
carry_stage build-stage "$tmp/rel" >/dev/null
rm -rf "$tmp/rel/tests" "$tmp/rel/fallback"
(cd "$F14T" && bash lab/study-fastmode/stage_variants.sh)
cp -r "$F14T/.carry/variants/o8s0" "$F14T/.carry/variants/o8s0-l32" "$tmp/"
tar -cJf "$root/.carry/f14.tar.xz" -C "$tmp" rel o8s0 o8s0-l32
rm -rf "$tmp"
du -sh "$root/.carry/f14.tar.xz"

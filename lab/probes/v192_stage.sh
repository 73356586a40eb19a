#!/usr/bin/env bash
# Here (no GPU): what v192_check.sh carries, in .carry/v192/ of this tree: branch v192's bundle
# (library + GPU tests, scripts/stage_gpu.sh in worktree V192, default /work/wt-v192) and, in tma/,
# its library with lab/study-accurate/v192-tma-store.patch (the 192-key FP16 V^T kernel with the
# TMA-store epilogue), built in a temporary worktree of the branch.
set -euo pipefail
cd "$(dirname "$0")/../.."
V192=${V192:-/work/wt-v192}
root=$PWD
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-/work}
(cd "$V192" && BUNDLE=1 NO_CAPTURES=1 scripts/stage_gpu.sh | tail -2)
rm -rf .carry/v192 && mkdir -p .carry/v192
cp "$V192/.carry/bundle.tar.xz" "$V192/.carry/COMMIT" .carry/v192/
source lab/probes/carry.sh
wt=$(mktemp -d)
git -C "$V192" worktree add -q --detach "$wt" HEAD
(cd "$wt" && git apply lab/study-accurate/v192-tma-store.patch && carry_stage build-v192t "$root/.carry/v192/tma" >/dev/null &&
  echo "$(git rev-parse --short=12 HEAD) + lab/study-accurate/v192-tma-store.patch" > "$root/.carry/v192/tma/COMMIT")
git -C "$V192" worktree remove --force "$wt"
rm -rf .carry/v192/tma/tests .carry/v192/tma/fallback
xz -T2 -9 .carry/v192/tma/libfp8attn.so
du -sh .carry/v192

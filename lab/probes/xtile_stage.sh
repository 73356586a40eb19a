#!/usr/bin/env bash
# Here (no GPU): the libraries of xtile_check.sh, packed as .carry/xtile.tar.xz: this tree's HEAD
# with PATCH (default lab/variants/xtile-v2.patch: the tile boundary overlapped) applied in a
# temporary worktree, with its kernel tests, and this tree's release library (rel/).
set -euo pipefail
cd "$(dirname "$0")/../.."
PATCH=${PATCH:-lab/variants/xtile-v2.patch}
root=$PWD
source lab/probes/carry.sh
tmp=$(mktemp -d)
wt=$(mktemp -d "$(cd .. && pwd)/wt-xtile-stage.XXXXXX")
git worktree add -q --detach "$wt" HEAD
(cd "$wt" && git apply "$root/$PATCH" &&
  carry_stage build-xtile "$tmp/xtile" test_attention test_graphs test_nonfinite test_attention_args \
    test_fuzz test_quant_attention test_vt_fp16 >/dev/null &&
  echo "$(git rev-parse --short=12 HEAD) + $PATCH" > "$tmp/xtile/COMMIT")
git worktree remove --force "$wt"
carry_release "$tmp/rel"
mkdir -p .carry
tar -cJf "$root/.carry/xtile.tar.xz" -C "$tmp" xtile rel
rm -rf "$tmp"
du -sh "$root/.carry/xtile.tar.xz"

#!/usr/bin/env bash
# Here (no GPU): the libraries of l32r2_check.sh, packed as .carry/l32r2.tar.xz: branch l32r2
# (worktree L32, default /work/wt-l32: FA3 FP8's numerics, offset 8 + exact max + l from the FP32 p,
# with the block scale formed per block so that ptxas keeps the exp FFMAs' operands in separate
# register banks) with its kernel tests, and this tree's release library (rel/).
set -euo pipefail
cd "$(dirname "$0")/../.."
L32=${L32:-/work/wt-l32}
root=$PWD
source lab/probes/carry.sh
tmp=$(mktemp -d)
(cd "$L32" && carry_stage build-l32 "$tmp/l32" test_attention test_graphs test_nonfinite test_attention_args >/dev/null)
carry_release "$tmp/rel"
mkdir -p .carry
tar -cJf "$root/.carry/l32r2.tar.xz" -C "$tmp" l32 rel
rm -rf "$tmp"
du -sh "$root/.carry/l32r2.tar.xz"

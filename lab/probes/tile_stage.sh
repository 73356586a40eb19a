#!/usr/bin/env bash
# Here (no GPU): the libraries of tile_check.sh, packed as .carry/tile.tar.xz: branch k3s (worktree
# K3S, default /work/wt-k3s) with its kernel tests, this tree with lab/variants/khead-only.patch
# (in a temporary worktree), and this tree's release library (rel/).
set -euo pipefail
cd "$(dirname "$0")/../.."
K3S=${K3S:-/work/wt-k3s}
root=$PWD
source lab/probes/carry.sh
tmp=$(mktemp -d)
(cd "$K3S" && carry_stage build-k3s "$tmp/k3s" test_attention test_graphs test_nonfinite test_attention_args)
carry_stage build-stage "$tmp/rel" >/dev/null
carry_patched . lab/variants/khead-only.patch "$tmp/khead"
rm -rf "$tmp/rel/tests" "$tmp/rel/fallback"
tar -cJf "$root/.carry/tile.tar.xz" -C "$tmp" k3s khead rel
rm -rf "$tmp"
du -sh "$root/.carry/tile.tar.xz"

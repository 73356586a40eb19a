#!/usr/bin/env bash
# Here (no GPU): builds branch k3s (worktree K3S, default /work/wt-k3s) with the kernel tests and
# this tree's release library, and packs both as .carry/k3s.tar.xz (k3s/, rel/) for k3s_check.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
K3S=${K3S:-/work/wt-k3s}
root=$PWD
source lab/probes/carry.sh
tmp=$(mktemp -d)
(cd "$K3S" && carry_stage build-k3s "$tmp/k3s" test_attention test_graphs test_nonfinite test_attention_args)
carry_stage build-stage "$tmp/rel"
tar -cJf "$root/.carry/k3s.tar.xz" -C "$tmp" k3s rel
rm -rf "$tmp"
du -sh "$root/.carry/k3s.tar.xz"

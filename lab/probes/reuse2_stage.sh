#!/usr/bin/env bash
# Here (no GPU): .carry/reuse2.tar.xz for reuse2_check.sh: from lab/sass/reuse_stage.sh's five
# libraries (.carry/reuse5.tar.xz: rel, rel_clear, rel_clear_swap, v2, v2_set), the three that
# test restoring xtile v2's reuse (rel, v2, v2_set), plus the fallback libraries of carry_stage.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
source lab/probes/carry.sh
[[ -f .carry/reuse5.tar.xz ]] || bash lab/sass/reuse_stage.sh
tmp=$(mktemp -d)
tar -xJf .carry/reuse5.tar.xz -C "$tmp" rel v2 v2_set
carry_stage build-stage "$tmp/fb" >/dev/null
mv "$tmp/fb/fallback" "$tmp/rel/"
rm -rf "$tmp/fb"
tar -cJf "$root/.carry/reuse2.tar.xz" -C "$tmp" rel v2 v2_set
rm -rf "$tmp"
du -sh "$root/.carry/reuse2.tar.xz"

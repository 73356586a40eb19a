#!/usr/bin/env bash
# Here (no GPU): the libraries of the reuse test, packed as .carry/reuse5.tar.xz (folders holding
# libfp8attn.so + COMMIT): rel (main 7ebdaf2's library as carried in XTILE, the lead's
# .carry/xtile.tar.xz: rel + xtile v2 dede9c1), rel_clear and rel_clear_swap (lab/sass/reuse_patch.py:
# the release without the exp FFMAs' reuse flags; and with xtile v2's control pattern), v2 (as
# measured) and v2_set (v2 with the release's reuse pattern). Their listings go to build-sched/reuse/
# for lab/sass/schedule_metrics.py.
#   bash lab/sass/reuse_stage.sh [XTILE]
set -euo pipefail
cd "$(dirname "$0")/../.."
XTILE=${1:-/work/main/.carry/xtile.tar.xz}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/in" "$tmp/out" .carry build-sched/reuse
tar -xJf "$XTILE" -C "$tmp/in"
for t in rel rel_clear rel_clear_swap v2 v2_set; do mkdir -p "$tmp/out/$t"; done
cp "$tmp/in/rel/libfp8attn.so" "$tmp/out/rel/"
cp "$tmp/in/xtile/libfp8attn.so" "$tmp/out/v2/"
python3 lab/sass/reuse_patch.py "$tmp/in/rel/libfp8attn.so" "$tmp/out/rel_clear/libfp8attn.so" clear
python3 lab/sass/reuse_patch.py "$tmp/in/rel/libfp8attn.so" "$tmp/out/rel_clear_swap/libfp8attn.so" clear_swap
python3 lab/sass/reuse_patch.py "$tmp/in/xtile/libfp8attn.so" "$tmp/out/v2_set/libfp8attn.so" set
for t in rel rel_clear rel_clear_swap; do echo "$(cat "$tmp/in/rel/COMMIT") $t" > "$tmp/out/$t/COMMIT"; done
for t in v2 v2_set; do echo "$(cat "$tmp/in/xtile/COMMIT") $t" > "$tmp/out/$t/COMMIT"; done
rm -f build-sched/reuse/BUILDS
bash lab/sass/carried_sass.sh build-sched/reuse r "$tmp/out"
tar -cJf .carry/reuse5.tar.xz -C "$tmp/out" rel rel_clear rel_clear_swap v2 v2_set
du -sh .carry/reuse5.tar.xz

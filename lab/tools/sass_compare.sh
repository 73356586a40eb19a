#!/usr/bin/env bash
# Per-kernel SASS of two builds of libfp8attn.so, compared byte for byte with the kernels' names
# normalized: the attention kernels are keyed by what their Config computes (P precision,
# accumulation, key block, stages, l from the tensor core, polynomial exp2), whichever template
# parameter list spells it, and every other kernel by its demangled name.
#
#   lab/tools/sass_compare.sh BEFORE.so AFTER.so [OUT.txt]
#
# Prints (and writes to OUT.txt) a header (command, commit, machine, date), one line per kernel:
# "identical", "DIFFERENT", "only in before" or "only in after", and a summary line.
set -euo pipefail
before=$1 after=$2 out=${3:-/dev/null}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for side in before after; do
  lib=${!side}
  cuobjdump -sass "$lib" > "$work/$side.sass"
  python3 "$here/sass_split.py" "$work/$side.sass" "$work/$side"
done
{
  echo "# SASS identity: $before vs $after"
  echo "# command: lab/tools/sass_compare.sh $*"
  echo "# commit: $(git -C "$here" rev-parse --short=12 HEAD)$(git -C "$here" diff --quiet HEAD -- src include || echo -dirty)"
  echo "# machine: $(hostname), $(nvcc --version | tail -1)"
  echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  same=0 diff=0 only=0
  for k in $(cd "$work" && { ls before; ls after; } | sort -u); do
    if [[ ! -e $work/before/$k ]]; then echo "only in after   $k"; only=$((only + 1))
    elif [[ ! -e $work/after/$k ]]; then echo "only in before  $k"; only=$((only + 1))
    elif cmp -s "$work/before/$k" "$work/after/$k"; then
      echo "identical       $k ($(grep -c '^ */\*[0-9a-f]*\*/' "$work/after/$k") instructions)"; same=$((same + 1))
    else echo "DIFFERENT       $k"; diff=$((diff + 1)); fi
  done
  echo "# summary: $same identical, $diff different, $only in one build only"
} | tee "$out"

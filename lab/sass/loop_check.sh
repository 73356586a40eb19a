#!/usr/bin/env bash
# Here, no GPU, ~10 s: compile one attention instantiation from a source tree (a patched copy of
# src/) and compare its key loop with this tree's: spills and wgmma serialization (ptxas -v),
# the loop's text identity (lab/sass/inner_loop.py's loop, as loop_identity.py) and the static
# schedule metrics of the long-tile kernel (schedule_metrics.py). For bisecting which part of a
# change re-schedules the loop before staging a library (lab/perf-log.md, twenty-second session).
#   bash lab/sass/loop_check.sh PATCHED_SRC_DIR [KERNEL]   (KERNEL: an instantiations/ file stem,
#                                                          default e4m3_block192)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
src=$(cd "$1" && pwd) kernel=${2:-e4m3_block192}
CUOBJDUMP=${CUOBJDUMP:-/tmp/cuobj/x/nvidia/cu13/bin/cuobjdump}
tmp=$(mktemp -d)
trap '[[ -n ${KEEP:-} ]] || rm -rf "$tmp"' EXIT
[[ -n ${KEEP:-} ]] && echo "kept: $tmp"
build() {  # SRC TAG
  nvcc -I"$root/include" -I"$1" -O3 -DNDEBUG -Xcompiler=-fPIC -gencode=arch=compute_90a,code=sm_90a \
    --expt-relaxed-constexpr -Xptxas=-v,-warn-spills -std=c++20 -x cu -c \
    "$1/attn/instantiations/$kernel.cu" -o "$tmp/$2.o" 2>&1 |
    grep -E "C75[0-9]+|spill stores" | sed "s/^/$2: /; s/'_Z[A-Za-z0-9_]*'//" || true
  "$CUOBJDUMP" -sass "$tmp/$2.o" > "$tmp/$2.sass"
}
build "$root/src" base
build "$src" patched
printf '# tag\tsass\tprovenance\tjson\tvariant\tbase\tinvert\tgroup\nbase\tbase.sass\tthis tree\t-\t-\t-\t0\tsame\npatched\tpatched.sass\t%s\tnone\t-\t-\t0\tpatched\n' "$src" > "$tmp/builds.tsv"
python3 "$root/lab/sass/schedule_metrics.py" --builds "$tmp/builds.tsv" --sass-dir "$tmp" 2>&1 |
  grep -A2 "tag  n_loop"
cd "$root/lab/sass" && python3 -c "
from inner_loop import inner_loop, parse
from loop_identity import loop_signature as sig
a, b = (inner_loop(parse('$tmp/%s.sass' % t)) for t in ('base', 'patched'))
print('key loop', 'identical' if sig(a) == sig(b) else 'DIFFERENT', '(%d / %d instructions)' % (len(a), len(b)))
"

#!/usr/bin/env bash
# The long-tile E4M3 kernel's SASS (src/attn/instantiations/e4m3_block192.cu) of one commit, without
# building the library: a detached worktree of COMMIT (with PATCH applied, a path inside that tree,
# when given) under /work/wt-sched-<TAG>, the one .cu compiled to a cubin with the library's nvcc
# flags (src/CMakeLists.txt: -O3 -DNDEBUG, sm_90a, -lineinfo, C++20), its listing with encodings
# written to OUTDIR/TAG.sass, the worktree removed. ~3-5 minutes a build on this machine.
#   bash lab/sass/block192_sass.sh OUTDIR TAG COMMIT [PATCH]
#   python3 lab/sass/schedule_metrics.py OUTDIR/*.sass
set -euo pipefail
out=$1 tag=$2 commit=$3 patch=${4:-}
CUOBJDUMP=${CUOBJDUMP:-/tmp/cuobj/x/nvidia/cu13/bin/cuobjdump}
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
wt=/work/wt-sched-$tag
mkdir -p "$out"
out=$(cd "$out" && pwd)
git -C "$repo" worktree add --detach "$wt" "$commit" >/dev/null 2>&1
trap 'git -C "$repo" worktree remove --force "$wt"' EXIT
if [[ -n "$patch" ]]; then git -C "$wt" apply "$patch"; fi
nice -n 10 /usr/local/cuda/bin/nvcc -I"$wt/include" -I"$wt/src" -O3 -DNDEBUG \
  -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -Xptxas=-warn-spills,-warn-lmem-usage \
  -lineinfo -std=c++20 -x cu -cubin "$wt/src/attn/instantiations/e4m3_block192.cu" -o "$out/$tag.cubin"
"$CUOBJDUMP" -sass "$out/$tag.cubin" > "$out/$tag.sass"
echo "$tag $(git -C "$wt" rev-parse --short=12 HEAD)${patch:+ + $patch}" >> "$out/BUILDS"
rm -f "$out/$tag.cubin"

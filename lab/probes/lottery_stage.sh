#!/usr/bin/env bash
# Here (no GPU): the libraries of lottery_check.sh, packed as .carry/lot.tar.xz. rel: this tree with
# lab/variants/host-knobs.patch (lab-only environment knobs: the persistent grid and the causal
# L2 section size; the device code byte-identical to the release's); then, per "TAG:PTXAS_OPTION",
# the same build with the two 192-key E4M3 kernels (attn/instantiations/e4m3_block192*.cu) compiled
# with that ptxas option added and the library relinked. xz -9 keeps the archive small (the
# libraries share most of their bytes).
#   bash lab/probes/lottery_stage.sh [TAG:OPTION ...]   (default rul0, rul6, o1)
#   LOT_FILES=fp16_vt_block192 LOT_ARCHIVE=.carry/lot-rul.tar.xz bash lab/probes/lottery_stage.sh ...
#     (the accurate mode's kernel instead; lottery_relink.py)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
P=${LOT_PREFIX:-}  # a prefix for the folder names (several trees in one archive)
ARCHIVE=${LOT_ARCHIVE:-$root/.carry/lot.tar.xz}
if [[ "${1:-}" == none ]]; then specs=()
elif [[ $# -eq 0 ]]; then specs=(rul0:--register-usage-level=0 rul6:--register-usage-level=6 o1:-O1)
else specs=("$@"); fi
tmp=$(mktemp -d)
wt=$(mktemp -d "$(cd .. && pwd)/wt-lot.XXXXXX")
git worktree add -q --detach "$wt" "${LOT_REF:-HEAD}"
(cd "$wt" && git apply "$root/lab/variants/host-knobs.patch" && source lab/probes/carry.sh &&
  carry_release "$tmp/${P}rel" build-lot)
echo "$(git rev-parse --short=12 "${LOT_REF:-HEAD}") + lab/variants/host-knobs.patch" > "$tmp/${P}rel/COMMIT"
echo "${P}rel: $(cat "$tmp/${P}rel/COMMIT")" > "$tmp/BUILDS"
for spec in "${specs[@]}"; do
  python3 "$root/lab/probes/lottery_relink.py" "$wt/build-lot" "${spec#*:}" "$tmp/$P${spec%%:*}" "${P}rel"
  echo "$P${spec%%:*}: ${P}rel with ptxas ${spec#*:} on attn/instantiations/${LOT_FILES:-e4m3_block192}*.cu" >> "$tmp/BUILDS"
done
git worktree remove --force "$wt"
mkdir -p .carry
(cd "$tmp" && tar -cf - BUILDS */COMMIT */libfp8attn.so 2>/dev/null | xz -9 -T2 > "$ARCHIVE")
rm -rf "$tmp"
du -sh "$ARCHIVE"
